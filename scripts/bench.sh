#!/usr/bin/env bash
# `make bench`: builds facegate-bench in release mode and runs every benchmark against a private stack
# (the test profile's ports), with the Python peers in .run/peer-venv. Figures go to Benchmarks/RESULTS.md.
#   scripts/bench.sh               all benchmarks
#   scripts/bench.sh NAME [ARGS]   one (see: .build/release/facegate-bench help)
#   scripts/bench.sh accuracy      lays out the public calibration photos (scripts/calibration-data.sh) and records
#                                  open-set accuracy of both face models on them
# face-engine, sface-engine, area-reduction, detection-size, accuracy, scale, enrollment-options and subjects need no stack: they run
# without PostgreSQL and the broker.
set -euo pipefail
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PEER_VENV=.run/peer-venv
# The SFace peer: opencv-python's FaceDetectorYN loads YuNet-2023mar from 4.8 on; 4.10 accepts numpy 1 and 2.
OPENCV_PYTHON=opencv-python==4.10.0.84
if [ ! -x "$PEER_VENV/bin/python" ] || ! "$PEER_VENV/bin/python" -c 'import face_recognition, faiss, numpy' 2>/dev/null; then
  echo "[bench] installing the Python peers (dlib-bin, face_recognition 1.3.0, numpy, faiss-cpu)"
  python3 -m venv "$PEER_VENV"
  "$PEER_VENV/bin/pip" install -q --disable-pip-version-check dlib-bin==20.0.1.post1 numpy faiss-cpu threadpoolctl \
    "$(ls .run/downloads/face_recognition_models-0.3.0.tar.gz)" Click Pillow
  "$PEER_VENV/bin/pip" install -q --disable-pip-version-check --no-deps face_recognition==1.3.0
fi
if ! "$PEER_VENV/bin/python" -c 'import cv2, sys; sys.exit(cv2.__version__ != sys.argv[1].split("==")[1].rsplit(".", 1)[0])' \
    "$OPENCV_PYTHON" 2>/dev/null; then
  echo "[bench] installing the SFace peer ($OPENCV_PYTHON)"
  "$PEER_VENV/bin/pip" install -q --disable-pip-version-check "$OPENCV_PYTHON"
fi
export FACEGATE_PEER_PYTHON="$ROOT/$PEER_VENV/bin/python"
export FACEGATE_MODEL_DIR="${FACEGATE_MODEL_DIR:-$ROOT/.run/models}"
case "${1:-all}" in
  accuracy|face-engine|sface-engine|area-reduction|detection-size|scale|enrollment-options|subjects) ;;
  *)
    scripts/stack.sh up test
    trap 'scripts/stack.sh down test' EXIT
    # shellcheck disable=SC1091
    . .run/test/env
    ;;
esac
swift build -c release --product facegate-bench
if [ $# -eq 1 ] && [ "$1" = accuracy ]; then
  scripts/calibration-data.sh
  exec .build/release/facegate-bench accuracy .run/calibration/labelled --impostors .run/calibration/impostors \
    --model dlib-resnet-v1,sface-2021dec --record
fi
case "${1:-all}" in
  accuracy|face-engine|sface-engine|area-reduction|detection-size|scale|enrollment-options|subjects) ;;
  *) swift build -c release ;;   # the services, for the benchmarks that start them
esac
# `policy`, `throughput` (and `all`) compare with the release before the trust policy: its services built in a worktree of their own
# under .run/baseline, on a database of their own migrated by its own `facegate migrate`.
BASELINE_COMMIT="${FACEGATE_BASELINE_COMMIT:-b9d0b66}"
prepare_baseline() {
  local tree=.run/baseline/src
  if [ "$(git -C "$tree" rev-parse --short HEAD 2>/dev/null)" != "$(git rev-parse --short "$BASELINE_COMMIT")" ]; then
    rm -rf "$tree"
    git worktree prune
    git worktree add --detach "$tree" "$BASELINE_COMMIT" >/dev/null
  fi
  (cd "$tree" && swift build -c release)
  local server="postgres://postgres@${FACEGATE_DATABASE_SERVER}"
  psql -q "$server/postgres" -c "DROP DATABASE IF EXISTS facegate_baseline" -c "CREATE DATABASE facegate_baseline OWNER facegate_owner"
  export FACEGATE_BASELINE_DATABASE_URL="postgres://facegate_owner@${FACEGATE_DATABASE_SERVER}/facegate_baseline"
  FACEGATE_DATABASE_URL="$FACEGATE_BASELINE_DATABASE_URL" "$tree/.build/release/facegate" migrate
  export FACEGATE_BASELINE_RELEASE_DIR="$ROOT/$tree/.build/release" FACEGATE_BASELINE_COMMIT="$BASELINE_COMMIT"
}
case "${1:-all}" in
  policy|throughput|all) prepare_baseline ;;
esac
if [ $# -gt 0 ]; then
  .build/release/facegate-bench "$@"
else
  .build/release/facegate-bench all
fi
