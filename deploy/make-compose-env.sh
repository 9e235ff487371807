#!/bin/bash
# Prints deploy/compose.env.example with every empty secret filled with fresh random bytes:
#   deploy/make-compose-env.sh > .env
set -euo pipefail
example="$(dirname "$0")/compose.env.example"

random_base64() { openssl rand -base64 32; }
random_hex() { openssl rand -hex "$1"; }

while IFS= read -r line; do
  case "${line}" in
    POSTGRES_PASSWORD=)     echo "POSTGRES_PASSWORD=$(random_hex 24)" ;;
    FACEGATE_SIGNING_KEY=)  echo "FACEGATE_SIGNING_KEY=$(random_base64)" ;;
    FACEGATE_SEALING_KEY=)  echo "FACEGATE_SEALING_KEY=$(random_base64)" ;;
    FACEGATE_ADMIN_KEY=)    echo "FACEGATE_ADMIN_KEY=$(random_hex 32)" ;;
    *)                      echo "${line}" ;;
  esac
done < "${example}"
