#!/usr/bin/env bash
# Regenerate systems/letta/locks/<version>.txt from Letta's own upstream lock (uv.lock at the git tag):
#
#   git --git-dir=<a clone of letta-ai/letta> archive 0.16.8 pyproject.toml uv.lock README.md | tar -x -C <dir>
#   systems/letta/lock.sh <dir> 0.16.8
#
# Letta's dependency tree does not resolve with pip's resolver (lxml[html-clean] trips an assertion in
# pip 23) and an unpinned resolve picks a pydantic that breaks mcp, so the lock is upstream's: `uv export`
# of the server and postgres extras with hashes, minus psycopg2 (an sdist needing libpq-dev; the lock
# also pins psycopg2-binary), plus letta itself (wheel and sdist hashes: the adapter takes the alembic
# migrations from the sdist) and pgserver (Postgres 16 + pgvector as a wheel, x86_64 Linux, CPython 3.11)
# with its one dependency not already in the lock. uv runs in a throwaway virtualenv.
set -euo pipefail
src=${1:?usage: systems/letta/lock.sh <dir holding the tag pyproject.toml and uv.lock> <version>}
version=${2:?usage: systems/letta/lock.sh <dir> <version>}
here=$(cd "$(dirname "$0")" && pwd)
out="$here/locks/$version.txt"
[ -f "$src/uv.lock" ] || { echo "lock.sh: $src/uv.lock does not exist; git archive the tag there first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3.11 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q --disable-pip-version-check uv==0.13.9
(cd "$src" && "$tmp/venv/bin/uv" export --frozen --no-dev --extra server --extra postgres --no-emit-project \
  --no-header -o "$tmp/upstream.txt" >/dev/null)
# the extras this project adds, each with every hash of its files on the index (wheel + sdist for letta)
for req in "letta==$version" pgserver==0.1.4 fasteners==0.20; do
  "$tmp/venv/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary :all: \
    --python-version 3.11 --platform manylinux2014_x86_64 --platform any -d "$tmp/extra" "$req"
done
"$tmp/venv/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: -d "$tmp/extra" "letta==$version"
"$tmp/venv/bin/python" - "$tmp/upstream.txt" "$tmp/extra" "$out" <<'EOF'
import hashlib, pathlib, re, sys
upstream, extra, out = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
blocks, cur = [], []
for line in pathlib.Path(upstream).read_text().splitlines():
    if line.startswith(("--", "-e ", "-i ")):
        continue  # no index, find-links or editable lines: pip's own configuration decides where files come from
    if line and not line[0].isspace() and not line.startswith("#"):
        if cur:
            blocks.append(cur)
        cur = [line]
    elif cur:
        cur.append(line)
if cur:
    blocks.append(cur)
kept = [b for b in blocks if not re.match(r"^psycopg2==", b[0])]
files = {}
for f in sorted(extra.iterdir()):
    name = re.split(r"-\d", f.name, 1)[0].replace("_", "-").lower()
    files.setdefault(name, []).append((f.name, hashlib.sha256(f.read_bytes()).hexdigest()))
for name, pin in (("letta", None), ("pgserver", None), ("fasteners", None)):
    first = files[name][0][0]
    ver = re.match(r"^[^-]+-([^-]+?)(?:-|\.tar)", first).group(1)
    hashes = sorted(h for _, h in files[name])
    block = [f"{name}=={ver} \\"] + [f"    --hash=sha256:{h}" + (" \\" if i < len(hashes) - 1 else "")
                                      for i, h in enumerate(hashes)]
    kept.append(block + ["    # via memmatrix systems/letta"])
kept.sort(key=lambda b: b[0].lower())
head = ["# Letta's upstream uv.lock (git tag), `uv export --frozen --no-dev --extra server --extra postgres",
        "# --no-emit-project`, without psycopg2 (psycopg2-binary stays), plus letta, pgserver and fasteners:",
        "# systems/letta/lock.sh regenerates it. Installed with --require-hashes --no-deps."]
out.write_text("\n".join(head + [ln for b in kept for ln in b]) + "\n")
print(f"lock.sh: wrote {out} ({len(kept)} packages)")
EOF
