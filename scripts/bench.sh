#!/usr/bin/env bash
# `make bench`: builds facegate-bench in release mode and runs every benchmark against a private stack
# (the test profile's ports), with the Python peers in .run/peer-venv. Figures go to Benchmarks/RESULTS.md.
#   scripts/bench.sh               all benchmarks
#   scripts/bench.sh NAME [ARGS]   one (see: .build/release/facegate-bench help)
set -euo pipefail
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PEER_VENV=.run/peer-venv
if [ ! -x "$PEER_VENV/bin/python" ] || ! "$PEER_VENV/bin/python" -c 'import face_recognition, faiss, numpy' 2>/dev/null; then
  echo "[bench] installing the Python peers (dlib-bin, face_recognition 1.3.0, numpy, faiss-cpu)"
  python3 -m venv "$PEER_VENV"
  "$PEER_VENV/bin/pip" install -q --disable-pip-version-check dlib-bin==20.0.1.post1 numpy faiss-cpu threadpoolctl \
    "$(ls .run/downloads/face_recognition_models-0.3.0.tar.gz)" Click Pillow
  "$PEER_VENV/bin/pip" install -q --disable-pip-version-check --no-deps face_recognition==1.3.0
fi
scripts/stack.sh up test
trap 'scripts/stack.sh down test' EXIT
# shellcheck disable=SC1091
. .run/test/env
export FACEGATE_PEER_PYTHON="$ROOT/$PEER_VENV/bin/python"
swift build -c release --product facegate-bench
swift build -c release
if [ $# -gt 0 ]; then
  .build/release/facegate-bench "$@"
else
  .build/release/facegate-bench all
fi
