#!/usr/bin/env bash
# Checks that each service holds only the keys its code uses (README, "Keys per service"). Exit 1 on a key out of place.
#
#   scripts/check-service-keys.sh              under `make run`: /proc/<pid>/environ of every service scripts/run.sh
#                                              started (by the pid files it keeps)
#   scripts/check-service-keys.sh --names KIND  the variable names (NAME or NAME=value lines) on standard input, as a
#                                              service of KIND would hold them (LocalStackTests)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PIDS=.run/run/services
declare -A allowed=(
  [auth-gateway]="FACEGATE_SIGNING_KEY FACEGATE_ADMIN_KEY_SHA256 FACEGATE_AUDIT_KEY FACEGATE_SERVICE_KEY"
  [matcher-worker]="FACEGATE_SEALING_KEY FACEGATE_SERVICE_KEY"
  [ctid-verifier]="FACEGATE_SEALING_KEY FACEGATE_CTID_PRIVATE_KEY FACEGATE_AUDIT_KEY FACEGATE_SERVICE_KEY"
  [kiosk-orchestrator]="FACEGATE_KIOSK_SIGNING_KEY FACEGATE_SEALING_KEY FACEGATE_AUDIT_KEY FACEGATE_SERVICE_KEY"
)
secrets="FACEGATE_ADMIN_KEY FACEGATE_ADMIN_KEY_SHA256 FACEGATE_SIGNING_KEY FACEGATE_SEALING_KEY FACEGATE_CTID_PRIVATE_KEY
  FACEGATE_KIOSK_SIGNING_KEY FACEGATE_AUDIT_KEY FACEGATE_SERVICE_KEY FACEGATE_SERVICE_KEY_AUTH_GATEWAY FACEGATE_SERVICE_KEY_MATCHER_WORKER
  FACEGATE_SERVICE_KEY_CTID_VERIFIER FACEGATE_SERVICE_KEY_KIOSK_ORCHESTRATOR PGPASSFILE"

# check NAME KIND NAMES: one line per key NAME holds that KIND's code does not use; status 1 if any.
check() {
  local status=0 key
  for key in $secrets; do
    if grep -qx "$key" <<<"$3" && ! grep -qw "$key" <<<"${allowed[$2]}"; then
      echo "$1 holds $key, which its code does not use"
      status=1
    fi
  done
  return "$status"
}

if [ "${1:-}" = --names ]; then
  [ -n "${2:-}" ] && [ -n "${allowed[$2]+set}" ] || { echo "--names KIND: one of ${!allowed[*]}" >&2; exit 2; }
  check "$2" "$2" "$(cut -d= -f1)" && echo "$2 holds only the keys it uses"
  exit
fi

status=0 checked=0
for file in "$PIDS"/*.pid; do
  case "$file" in *.supervisor.pid|*/balancer.pid) continue ;; esac
  name="$(basename "$file" .pid)"
  kind="${name%-[0-9]*}"
  [ -n "${allowed[$kind]+set}" ] || continue
  check "$name" "$kind" "$(tr '\0' '\n' <"/proc/$(cat "$file")/environ" | cut -d= -f1)" || status=1
  checked=$((checked + 1))
done
[ "$checked" -gt 0 ] || { echo "no running service found under $PIDS: start make run first"; exit 1; }
[ "$status" = 0 ] && echo "$checked services hold only the keys they use"
exit "$status"
