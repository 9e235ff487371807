#!/bin/bash
# Gives each service's login role the password of its database URL, connected as the schema owner.
# Migration 6 creates the roles without a password (migrations never carry secrets); the owner
# created them, so it may set them. Idempotent: run it after every `facegate migrate`
# (docker-compose.yml's `db-passwords`, the Kubernetes Job facegate-migrate), so the
# passwords always equal the URLs the services are given.
#
#   DATABASE_URL_OWNER     postgres://facegate_owner:...@host:port/facegate   (connects with it)
#   DATABASE_URL_GATEWAY   postgres://facegate_gateway:PASSWORD@...           (auth-gateway)
#   DATABASE_URL_MATCHER   postgres://facegate_matcher:PASSWORD@...           (matcher-worker)
#   DATABASE_URL_CTID      postgres://facegate_ctid:PASSWORD@...              (ctid-verifier)
#   DATABASE_URL_KIOSK     postgres://facegate_kiosk:PASSWORD@...             (kiosk-orchestrator)
#
# Fails, setting nothing, when a URL names another role than the one it is for (a service given
# the owner's or a superuser's URL, or two URLs swapped) or has no password.
set -euo pipefail

# user and password of postgres[ql]://user:password@host..., percent-decoded.
url_part() {
  local url="$1" part="$2" userinfo
  if [[ ! "${url}" =~ ^postgres(ql)?://([^@/]*)@ ]]; then return 1; fi
  userinfo="${BASH_REMATCH[2]}"
  if [[ "${part}" == user ]]; then userinfo="${userinfo%%:*}"
  elif [[ "${userinfo}" == *:* ]]; then userinfo="${userinfo#*:}"
  else userinfo=""
  fi
  userinfo="${userinfo//\\/\\\\}"   # a literal backslash stays one
  printf '%b' "${userinfo//%/\\x}"
}

owner_url="${DATABASE_URL_OWNER:-}"
if [[ "$(url_part "${owner_url}" user || true)" != "facegate_owner" ]]; then
  echo "set-role-passwords: DATABASE_URL_OWNER must log in as facegate_owner" >&2
  exit 1
fi

psql_variables=()
statements=""
failures=0
for entry in GATEWAY:facegate_gateway MATCHER:facegate_matcher CTID:facegate_ctid KIOSK:facegate_kiosk; do
  variable="DATABASE_URL_${entry%%:*}" role="${entry#*:}"
  url="${!variable:-}"
  user="$(url_part "${url}" user || true)"
  password="$(url_part "${url}" password || true)"
  if [[ "${user}" != "${role}" ]]; then
    echo "set-role-passwords: ${variable} logs in as '${user}', not ${role}" >&2
    failures=$((failures + 1))
  elif [[ -z "${password}" ]]; then
    echo "set-role-passwords: ${variable} has no password" >&2
    failures=$((failures + 1))
  fi
  # Passwords travel as psql variables (quoted by psql), never inside the SQL text.
  psql_variables+=(-v "${role}=${password}")
  statements+="ALTER ROLE ${role} PASSWORD :'${role}';"$'\n'
done
if [[ "${failures}" -gt 0 ]]; then exit 1; fi

psql "${owner_url}" -v ON_ERROR_STOP=1 -qtA --no-psqlrc "${psql_variables[@]}" <<< "${statements}"
echo "set-role-passwords: passwords set for facegate_gateway, facegate_matcher, facegate_ctid, facegate_kiosk"
