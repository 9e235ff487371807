#!/usr/bin/env bash
# Usage: tansu_up.sh PORT PIDFILE LOG  -- starts tansu like scripts/stack.sh broker_up (memory:// default storage)
set -euo pipefail
PORT=$1; PIDFILE=$2; LOG=$3
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TANSU="$ROOT/.run/tansu"
setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$PIDFILE" "$TANSU" broker \
  --listener-url "tcp://127.0.0.1:$PORT" --advertised-listener-url "tcp://127.0.0.1:$PORT" >"$LOG" 2>&1 &
for _ in $(seq 1 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && exit 0
  sleep 0.1
done
echo "broker did not start" >&2; exit 1
