#!/usr/bin/env bash
# The fault-injection harness (Tests/chaos): a supervised FaceGate (2 gateways behind scripts/balancer.py, 2 replicas of
# every worker) under steady traffic while replicas are SIGKILLed, a matcher is paused and the broker and PostgreSQL are
# restarted; then the invariants are checked. Bounded in time; traffic only to 127.0.0.1.
#
#   scripts/chaos.sh [--seed N] [--requests N] [--faults N] [--profile test|chaos] [--release] [--report] [--rate R]
#                    [--fault-kinds kill-gateway,kill-matcher,kill-ctid,kill-kiosk,pause-matcher,restart-broker,restart-postgres]
#
# --profile chaos (the default) starts that profile's PostgreSQL and broker (scripts/stack.sh, ports 55435/59095) and
# stops them afterwards; --profile test uses the test profile's, which must be up, and leaves them running (`make test`
# runs the short seeded run this way). Exit status 0 only when every invariant held.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
profile=chaos
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --profile) profile="${args[$((i + 1))]:-}" ;;
    --profile=*) profile="${args[$i]#--profile=}" ;;
    -h|--help) exec .run/venv/bin/python Tests/chaos/chaos.py --help ;;
  esac
done
case "$profile" in
  chaos) scripts/stack.sh up chaos; trap 'scripts/stack.sh down chaos' EXIT ;;
  test) [ -f .run/test/postgres.pid ] && [ -f .run/test/broker.pid ] \
          || { echo "the test profile is not up: scripts/stack.sh up test" >&2; exit 2; } ;;
  *) echo "--profile must be test or chaos" >&2; exit 2 ;;
esac
# shellcheck disable=SC1090
. ".run/$profile/env"
# The harness runs in the background so that a Ctrl-C (or a SIGTERM) here reaches it as a SIGTERM at once: it then stops
# everything it started, by pid, before this script stops the chaos profile's servers.
.run/venv/bin/python Tests/chaos/chaos.py --profile "$profile" "$@" &
harness=$!
trap 'kill -TERM "$harness" 2>/dev/null || true' INT TERM
status=0
wait "$harness" || status=$?
while kill -0 "$harness" 2>/dev/null; do  # a signal ends `wait` early: wait for the harness to finish cleaning up
  status=0
  wait "$harness" || status=$?
done
exit "$status"
