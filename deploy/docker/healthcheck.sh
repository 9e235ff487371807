#!/bin/bash
# Container health check: GET /healthz on the admin port of the service this container runs.
# Uses bash's /dev/tcp so the runtime image needs no HTTP client. Exit 0 only on HTTP 200.
# The port is FACEGATE_ADMIN_PORT, else the service's default from the runtime contract.
set -uo pipefail

case "${SERVICE:-}" in
  auth-gateway)       default_port=9100 ;;
  matcher-worker)     default_port=9101 ;;
  ctid-verifier)      default_port=9102 ;;
  kiosk-orchestrator) default_port=9103 ;;
  facegate)           exit 0 ;;  # the CLI is a one-shot command with no admin listener
  *) echo "facegate-healthcheck: unknown SERVICE='${SERVICE:-}'" >&2; exit 1 ;;
esac
port="${FACEGATE_ADMIN_PORT:-${default_port}}"
host="${HEALTHCHECK_HOST:-127.0.0.1}"
deadline="${HEALTHCHECK_TIMEOUT_SECONDS:-4}"

if ! exec 3<>"/dev/tcp/${host}/${port}"; then
  echo "facegate-healthcheck: cannot connect to ${host}:${port}" >&2
  exit 1
fi
printf 'GET /healthz HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n' "${host}" "${port}" >&3
status_line=""
if ! IFS= read -r -t "${deadline}" status_line <&3; then
  echo "facegate-healthcheck: no answer from ${host}:${port} within ${deadline}s" >&2
  exit 1
fi
exec 3<&-
status_line="${status_line%$'\r'}"
if [[ "${status_line}" =~ ^HTTP/1\.[01]\ 200(\ |$) ]]; then
  exit 0
fi
echo "facegate-healthcheck: /healthz answered '${status_line}'" >&2
exit 1
