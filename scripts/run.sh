#!/usr/bin/env bash
# `make run`: the whole stack on this machine — PostgreSQL, the broker, migrations, the four services
# (logs prefixed by service) and a demo app. Ctrl-C stops everything this script started.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
STATE=.run/run
scripts/stack.sh up run
# Until the services run (and stop_all takes over), a failed build or migration still stops the servers.
trap 'scripts/stack.sh down run' EXIT
# shellcheck disable=SC1091
. "$STATE/env"
# What this script writes from here on (the demo app's secret, pid files) is readable by this user alone.
umask 077

echo "[run] building (release)…"
swift build -c release 2>&1 | grep -E "error|warning: unre|Compiling|Build complete" | grep -v "^$" | tail -n 5
BIN="$ROOT/.build/release"
"$BIN/facegate" migrate

PIDS="$STATE/services"
mkdir -p "$PIDS"
rm -f "$PIDS"/*.pid "$PIDS/stopping"
# Every service runs under scripts/supervise.sh, which starts it again when it exits (backoff, a log line,
# a restart count): one crashed service never stops the others. A Ctrl-C reaches only this script, which
# then stops the supervisors, every service once, gracefully (SIGTERM), and the servers after them — all
# by the pids they recorded.
stop_all() {
  trap - INT TERM EXIT
  echo; echo "[run] stopping…"
  touch "$PIDS/stopping"
  for file in "$PIDS"/*.supervisor.pid; do [ -e "$file" ] && kill -TERM "$(cat "$file")" 2>/dev/null || true; done
  for file in "$PIDS"/*.pid; do
    case "$file" in *.supervisor.pid) ;; *) [ -e "$file" ] && kill -TERM "$(cat "$file")" 2>/dev/null || true ;; esac
  done
  for _ in $(seq 1 300); do
    alive=0
    for file in "$PIDS"/*.pid; do [ -e "$file" ] && kill -0 "$(cat "$file")" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for file in "$PIDS"/*.pid; do [ -e "$file" ] && kill -KILL "$(cat "$file")" 2>/dev/null || true; done
  rm -f "$PIDS"/*.pid "$PIDS/stopping"
  scripts/stack.sh down run
  exit 0
}
trap stop_all INT TERM EXIT

# start NAME ROLE ADMIN_PORT HTTP_PORT COMMAND: one supervised service, logged in to PostgreSQL as its own role with its
# own password (scripts/stack.sh made both), never as the owner; HTTP_PORT is a gateway's public port (- for the others:
# the gateway's default, FACEGATE_HTTP_PORT or 8080). scripts/service-env.sh hands it only the keys its code uses (the
# README's "Keys per service"). Keys travel in the environment, never on a command line (where `ps` would show them).
start() {
  local name="$1" role="$2" port="$3" http="$4"; shift 4
  (
    export FACEGATE_ADMIN_PORT="$port" \
      FACEGATE_DATABASE_URL="postgres://$role:$(sed -n "s/^$role=//p" "$STATE/db-passwords")@$FACEGATE_DATABASE_SERVER/facegate"
    [ "$http" = - ] || export FACEGATE_HTTP_PORT="$http"
    exec scripts/service-env.sh "$(basename "$1")" scripts/supervise.sh "$name" "$PIDS" "$@"
  ) > >(sed -u "s/^/[$name] /") 2>&1 &
}

# FACEGATE_MATCHERS=N runs N matcher replicas (one consumer group: they share the jobs); the first has
# admin port 9101, the others 9111, 9121, …
MATCHERS="${FACEGATE_MATCHERS:-1}"
case "$MATCHERS" in ''|*[!0-9]*|0) echo "[run] FACEGATE_MATCHERS must be a positive number" >&2; exit 2 ;; esac
for i in $(seq 1 "$MATCHERS"); do
  name=matcher-worker; [ "$i" -gt 1 ] && name="matcher-worker-$i"
  start "$name" facegate_matcher $((9101 + 10 * (i - 1))) - "$BIN/matcher-worker"
done
start ctid-verifier facegate_ctid 9102 - "$BIN/ctid-verifier"
start kiosk-orchestrator facegate_kiosk 9103 - "$BIN/kiosk-orchestrator"

# FACEGATE_GATEWAYS=N (N>1) runs N gateways behind scripts/balancer.py, which listens on FACEGATE_HTTP_PORT (8080) and
# forwards each request to the next gateway that takes the connection: the gateways listen on the following ports
# (8081, 8082, …), their admin ports are 9100, 9110, 9120, …. The balancer is supervised and stopped like the services.
GATEWAYS="${FACEGATE_GATEWAYS:-1}"
case "$GATEWAYS" in ''|*[!0-9]*|0) echo "[run] FACEGATE_GATEWAYS must be a positive number" >&2; exit 2 ;; esac
HTTP_PORT="${FACEGATE_HTTP_PORT:-8080}"
if [ "$GATEWAYS" -eq 1 ]; then
  start auth-gateway facegate_gateway 9100 - "$BIN/auth-gateway"
else
  backends=()
  # Behind the balancer, a client's address is the balancer's X-Forwarded-For, and device proofs name the balancer's URL.
  for i in $(seq 1 "$GATEWAYS"); do
    name=auth-gateway; [ "$i" -gt 1 ] && name="auth-gateway-$i"
    FACEGATE_TRUSTED_PROXIES=127.0.0.1 FACEGATE_PUBLIC_URL="http://127.0.0.1:$HTTP_PORT" \
      start "$name" facegate_gateway $((9100 + 10 * (i - 1))) $((HTTP_PORT + i)) "$BIN/auth-gateway"
    backends+=(--backend "127.0.0.1:$((HTTP_PORT + i))")
  done
  # No key of any service in its environment.
  env -i PATH="$PATH" scripts/supervise.sh balancer "$PIDS" python3 scripts/balancer.py --listen "127.0.0.1:$HTTP_PORT" \
    "${backends[@]}" > >(sed -u "s/^/[balancer] /") 2>&1 &
fi
GATEWAY_ADMIN="$(seq -s ', ' 9100 10 $((9100 + 10 * (GATEWAYS - 1))))"
MATCHER_ADMIN="$(seq -s ', ' 9101 10 $((9101 + 10 * (MATCHERS - 1))))"
BALANCED=""
if [ "$GATEWAYS" -gt 1 ]; then
  BALANCED="
                  scripts/balancer.py over $GATEWAYS gateways on 127.0.0.1:$((HTTP_PORT + 1))–$((HTTP_PORT + GATEWAYS))"
fi

echo "[run] waiting for the gateways and the matchers to be ready…"
for _ in $(seq 1 120); do
  ready=1
  for port in $(seq 9100 10 $((9100 + 10 * (GATEWAYS - 1)))) $(seq 9101 10 $((9101 + 10 * (MATCHERS - 1)))); do
    curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 || { ready=0; break; }
  done
  [ "$ready" = 1 ] && break
  sleep 1
done

DEMO="$STATE/demo-app.json"
# Secrets are shown on the terminal once, the run that makes them; later runs say which 0600 file holds them.
shown_once=""
if [ ! -s "$DEMO" ] || ! "$BIN/facegate" app get "$(sed -n 's/.*"appId":"\([^"]*\)".*/\1/p' "$DEMO")" >/dev/null 2>&1; then
  "$BIN/facegate" app create "Demo app" --formal >"$DEMO"
  shown_once=1
fi
chmod 600 "$DEMO"
APP_ID="$(sed -n 's/.*"appId":"\([^"]*\)".*/\1/p' "$DEMO")"
APP_SECRET="$(sed -n 's/.*"appSecret":"\([^"]*\)".*/\1/p' "$DEMO")"
if [ -n "$shown_once" ]; then
  SECRETS="  operator key    $FACEGATE_ADMIN_KEY   (shown this once: FACEGATE_ADMIN_KEY of $STATE/env, 0600)
  demo app        $APP_ID   secret $APP_SECRET   (shown this once: $DEMO, 0600)"
else
  SECRETS="  operator key    FACEGATE_ADMIN_KEY of $STATE/env (0600, yours alone)
  demo app        $APP_ID   (its secret and ctidKey: $DEMO, 0600)"
fi
cat <<INFO

FaceGate is running.
  public API      http://127.0.0.1:$HTTP_PORT   (OpenAPI: /openapi.json, JWKS: /.well-known/jwks.json)$BALANCED
  web console     http://127.0.0.1:$HTTP_PORT/console/   (sign in with the operator key)
  admin ports     gateway $GATEWAY_ADMIN; matcher $MATCHER_ADMIN; ctid 9102; kiosk 9103  (/healthz /readyz /metrics)
$SECRETS

Try it: the README's quick start, in another terminal (photos: .run/testdata). A first face login with a DPoP device key:
  . $STATE/env && export PATH="\$PWD/.build/release:\$PATH"
  export FACEGATE_APP_ID=$APP_ID FACEGATE_APP_SECRET=\$(jq -r .appSecret $DEMO)
  USER_ID=\$(facegate user create \$FACEGATE_APP_ID E1001 "Barack Obama" --output json | jq -r .userId)
  facegate enroll \$FACEGATE_APP_ID \$USER_ID .run/testdata/obama.jpg
  TOKEN=\$(facegate login .run/testdata/obama2.jpg --employee-number E1001 --key device.key --output json | jq -r .identityToken)
  facegate exchange \$TOKEN
Press Ctrl-C to stop.
INFO
# The supervisors keep the services up; this script only waits for Ctrl-C (short sleeps: bash runs the
# trap only once the foreground command ends).
while sleep 1; do :; done
