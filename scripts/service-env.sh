#!/usr/bin/env bash
# Runs COMMAND with what a service of KIND may hold of the caller's environment (README, "Keys per service"): its own
# message-signing key as FACEGATE_SERVICE_KEY and none of the others'; only the gateway the token key and the operator
# key's SHA-256 (no service the operator key itself); only the kiosk-orchestrator its token key; only the ctid-verifier
# the CTID private key; no gateway the sealing key; no matcher the audit key; no service the database password file or
# the test harness's FACEGATE_TEST_* settings.
# scripts/run.sh starts every service through it; LocalStackTests checks what it hands on against
# scripts/check-service-keys.sh's table.
#
#   scripts/service-env.sh KIND COMMAND...    KIND: auth-gateway | matcher-worker | ctid-verifier | kiosk-orchestrator
set -euo pipefail
kind="${1:-}"
case "$kind" in
  auth-gateway|matcher-worker|ctid-verifier|kiosk-orchestrator) shift ;;
  *) sed -n '2,10p' "$0" >&2; exit 2 ;;
esac
[ "$#" -gt 0 ] || { echo "service-env: no command" >&2; exit 2; }
own="FACEGATE_SERVICE_KEY_$(echo "$kind" | tr 'a-z-' 'A-Z_')"
export FACEGATE_SERVICE_KEY="${!own:-}"
unset FACEGATE_SERVICE_KEY_AUTH_GATEWAY FACEGATE_SERVICE_KEY_MATCHER_WORKER FACEGATE_SERVICE_KEY_CTID_VERIFIER \
  FACEGATE_SERVICE_KEY_KIOSK_ORCHESTRATOR PGPASSFILE
# The test harness's settings (the env file carries them for `make test`), the superuser's URL among them.
for name in $(compgen -v FACEGATE_TEST_); do unset "$name"; done
if [ "$kind" = auth-gateway ] && [ -n "${FACEGATE_ADMIN_KEY:-}" ]; then
  FACEGATE_ADMIN_KEY_SHA256="$(printf '%s' "$FACEGATE_ADMIN_KEY" | sha256sum | cut -d' ' -f1)"
  export FACEGATE_ADMIN_KEY_SHA256
fi
unset FACEGATE_ADMIN_KEY
[ "$kind" = auth-gateway ] || unset FACEGATE_SIGNING_KEY FACEGATE_CTID_PUBLIC_KEY FACEGATE_ADMIN_KEY_SHA256
[ "$kind" = kiosk-orchestrator ] || unset FACEGATE_KIOSK_SIGNING_KEY
[ "$kind" = ctid-verifier ] || unset FACEGATE_CTID_PRIVATE_KEY
[ "$kind" != auth-gateway ] || unset FACEGATE_SEALING_KEY
[ "$kind" != matcher-worker ] || unset FACEGATE_AUDIT_KEY
exec "$@"
