#!/usr/bin/env bash
# Serve a folder of wheels as a PEP 503 package index on loopback, for image builds that need a wheel no
# reachable index carries (A-MEM's torch==2.13.0+cpu where PyTorch's CPU index cannot be reached):
#   scripts/wheel-index.sh DIR [PORT]        (default port 18480; runs until killed)
#   MEMMATRIX_TORCH_INDEX_URL=http://127.0.0.1:18480/simple memmatrix run --system amem --runtime compose
# Image builds run with the host's network (compose `network: host`), so loopback reaches it.
set -euo pipefail
dir=${1:?usage: scripts/wheel-index.sh DIR [PORT]}
port=${2:-18480}
[ -d "$dir" ] || { echo "wheel-index: $dir is not a folder" >&2; exit 2; }
root=$(mktemp -d)
python3 - "$dir" "$root" <<'PY'
import html, os, re, sys
from pathlib import Path
src, root = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
projects = {}
for wheel in sorted(src.glob("*.whl")):
    name = re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()
    projects.setdefault(name, []).append(wheel)
for name, wheels in projects.items():
    d = root / "simple" / name
    d.mkdir(parents=True)
    links = []
    for w in wheels:
        os.symlink(w, d / w.name)
        links.append(f'<a href="{html.escape(w.name)}">{html.escape(w.name)}</a><br>')
    (d / "index.html").write_text("<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n")
index = "".join(f'<a href="{n}/">{n}</a><br>\n' for n in sorted(projects))
(root / "simple" / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{index}</body></html>\n")
print(f"wheel-index: {sum(len(w) for w in projects.values())} wheels of {len(projects)} projects", file=sys.stderr)
PY
echo "wheel-index: http://127.0.0.1:$port/simple" >&2
(cd "$root" && exec python3 -m http.server --bind 127.0.0.1 "$port") &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$root"' EXIT
trap 'exit 0' TERM INT
wait "$server"
