#!/usr/bin/env bash
# Regenerate a system's lock file with hashes from its pinned requirements:
#   scripts/lock-system.sh systems/mem0 2.2.1
# reads systems/mem0/requirements/2.2.1.in and writes systems/mem0/locks/2.2.1.txt.
# pip-tools runs in a throwaway virtualenv; nothing is installed into memmatrix's environment.
set -euo pipefail
folder=${1:?usage: scripts/lock-system.sh systems/<name> <version>}
version=${2:?usage: scripts/lock-system.sh systems/<name> <version>}
python=${PYTHON:-python3.11}
in="$folder/requirements/$version.in"
out="$folder/locks/$version.txt"
[ -f "$in" ] || { echo "lock-system: $in does not exist" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$python" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q --disable-pip-version-check pip-tools==7.6.2
mkdir -p "$folder/locks"
"$tmp/venv/bin/pip-compile" -q --generate-hashes --allow-unsafe --strip-extras --no-header \
  --no-emit-index-url --no-emit-find-links --no-emit-trusted-host \
  --output-file "$out" "$in"
echo "lock-system: wrote $out ($(grep -c '==' "$out") packages)"
