#!/bin/bash
# Container entrypoint: runs the executable named by SERVICE, with the container's arguments.
#   SERVICE=matcher-worker                  -> matcher-worker
#   SERVICE=facegate  (args: migrate)       -> facegate migrate
# exec keeps the service as PID 1 so SIGTERM from the runtime reaches it directly
# (the services drain in-flight work on SIGTERM).
set -euo pipefail

bin_dir="${SERVICE_BIN_DIR:-/usr/local/bin}"
service="${SERVICE:-}"

case "${service}" in
  auth-gateway|matcher-worker|ctid-verifier|kiosk-orchestrator|facegate) ;;
  *)
    echo "facegate-entrypoint: SERVICE='${service}' must be one of:" \
         "auth-gateway matcher-worker ctid-verifier kiosk-orchestrator facegate" >&2
    exit 64
    ;;
esac

exec "${bin_dir}/${service}" "$@"
