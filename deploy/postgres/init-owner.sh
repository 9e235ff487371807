#!/bin/bash
# The cluster administrator's one step, as in scripts/stack.sh: the schema owner `facegate_owner`
# (a login that may create roles; not a superuser, no BYPASSRLS, cannot create databases) and the
# database `facegate` it owns. `facegate migrate` then runs as that owner and creates the services'
# login roles (migration 6); no service ever logs in as the owner or as a superuser.
#
# docker-compose.yml mounts it into /docker-entrypoint-initdb.d, so the postgres image runs it as
# the superuser on the first start of an empty data volume. Idempotent: to adopt a database made
# before the owner role existed (owned by the superuser), run it once by hand as that superuser:
#   docker compose exec -e POSTGRES_USER=<superuser> postgres \
#     /docker-entrypoint-initdb.d/10-facegate-owner.sh
# which creates the owner if needed and hands it the database and every table and sequence.
#
#   POSTGRES_USER       the superuser to connect as (the image sets it)
#   DB_PASSWORD_OWNER   the owner's password (required)
set -euo pipefail

: "${DB_PASSWORD_OWNER:?DB_PASSWORD_OWNER is required (the password of facegate_owner)}"
sql=(psql -v ON_ERROR_STOP=1 -qtA --no-psqlrc --username "${POSTGRES_USER:-postgres}")

# The password travels as a psql variable (quoted by psql), never inside the SQL text.
"${sql[@]}" --dbname postgres -v owner_password="${DB_PASSWORD_OWNER}" <<'SQL'
SELECT format('CREATE ROLE facegate_owner LOGIN CREATEROLE NOSUPERUSER NOCREATEDB NOREPLICATION NOBYPASSRLS')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'facegate_owner') \gexec
ALTER ROLE facegate_owner LOGIN CREATEROLE NOSUPERUSER NOCREATEDB NOREPLICATION NOBYPASSRLS PASSWORD :'owner_password';
SELECT 'CREATE DATABASE facegate OWNER facegate_owner'
WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'facegate') \gexec
ALTER DATABASE facegate OWNER TO facegate_owner;
SQL

# A database made by an earlier version belongs to the superuser: hand its tables and sequences over.
"${sql[@]}" --dbname facegate <<'SQL'
DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' AND c.relkind IN ('r', 'S') AND pg_get_userbyid(c.relowner) <> 'facegate_owner' LOOP
    EXECUTE format('ALTER %s public.%I OWNER TO facegate_owner', CASE r.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, r.relname);
  END LOOP;
END $$;
SQL
echo "facegate_owner owns database facegate"
