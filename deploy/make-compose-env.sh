#!/bin/bash
# Prints deploy/compose.env.example with every empty secret filled with fresh random bytes:
#   deploy/make-compose-env.sh > deploy/.env
# Needs openssl (1.1.1 or later, for X25519).
set -euo pipefail
example="$(dirname "$0")/compose.env.example"

random_base64() { openssl rand -base64 32; }
random_hex() { openssl rand -hex "$1"; }

# The ctid-verifier's X25519 key pair: raw 32-byte keys, base64 (the last 32 bytes of the DER
# encodings are the raw keys).
ctid_der="$(mktemp)"
trap 'rm -f "${ctid_der}"' EXIT
openssl genpkey -algorithm X25519 -outform DER -out "${ctid_der}" 2> /dev/null
ctid_private="$(tail -c 32 "${ctid_der}" | base64 -w0)"
ctid_public="$(openssl pkey -inform DER -in "${ctid_der}" -pubout -outform DER | tail -c 32 | base64 -w0)"
rm -f "${ctid_der}"

while IFS= read -r line; do
  case "${line}" in
    # One password per database role, each drawn on its own.
    POSTGRES_PASSWORD=|DB_PASSWORD_*=)
                                 echo "${line}$(random_hex 24)" ;;
    FACEGATE_SIGNING_KEY=)       echo "FACEGATE_SIGNING_KEY=$(random_base64)" ;;
    FACEGATE_SEALING_KEY=)       echo "FACEGATE_SEALING_KEY=$(random_base64)" ;;
    FACEGATE_CTID_PRIVATE_KEY=)  echo "FACEGATE_CTID_PRIVATE_KEY=${ctid_private}" ;;
    FACEGATE_CTID_PUBLIC_KEY=)   echo "FACEGATE_CTID_PUBLIC_KEY=${ctid_public}" ;;
    FACEGATE_ADMIN_KEY=)         echo "FACEGATE_ADMIN_KEY=$(random_hex 32)" ;;
    *)                           echo "${line}" ;;
  esac
done < "${example}"
