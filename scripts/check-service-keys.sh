#!/usr/bin/env bash
# Under `make run`: checks that each running service holds only the keys its code uses (README, "Keys per service"),
# from /proc/<pid>/environ of every service scripts/run.sh started (by the pid files it keeps). Exit 1 on a key out of place.
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
status=0 checked=0
for file in "$PIDS"/*.pid; do
  case "$file" in *.supervisor.pid|*/balancer.pid) continue ;; esac
  name="$(basename "$file" .pid)"
  kind="${name%-[0-9]*}"
  [ -n "${allowed[$kind]+set}" ] || continue
  held="$(tr '\0' '\n' <"/proc/$(cat "$file")/environ" | cut -d= -f1)"
  for key in $secrets; do
    if grep -qx "$key" <<<"$held" && ! grep -qw "$key" <<<"${allowed[$kind]}"; then
      echo "$name holds $key, which its code does not use"
      status=1
    fi
  done
  checked=$((checked + 1))
done
[ "$checked" -gt 0 ] || { echo "no running service found under $PIDS: start make run first"; exit 1; }
[ "$status" = 0 ] && echo "$checked services hold only the keys they use"
exit "$status"
