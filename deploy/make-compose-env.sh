#!/bin/bash
# Prints deploy/compose.env.example with every empty secret filled with fresh random bytes:
#   deploy/make-compose-env.sh > .env
# Needs openssl (1.1.1 or later, for X25519 and Ed25519).
set -euo pipefail
example="$(dirname "$0")/compose.env.example"
umask 077   # the key files drawn below are readable by their owner only

random_base64() { openssl rand -base64 32; }
random_hex() { openssl rand -hex "$1"; }

# The ctid-verifier's X25519 key pair: raw 32-byte keys, base64 (the last 32 bytes of the DER
# encodings are the raw keys).
der="$(mktemp)"
trap 'rm -f "${der}"' EXIT
openssl genpkey -algorithm X25519 -outform DER -out "${der}" 2> /dev/null
ctid_private="$(tail -c 32 "${der}" | base64 -w0)"
ctid_public="$(openssl pkey -inform DER -in "${der}" -pubout -outform DER | tail -c 32 | base64 -w0)"

# One Ed25519 message-signing key per service: the seed (the last 32 bytes of the PKCS#8 DER
# encoding) goes to that service only, the public keys to all four as one list.
declare -A service_seeds=()
service_public_keys=""
for service in auth-gateway matcher-worker ctid-verifier kiosk-orchestrator; do
  openssl genpkey -algorithm ed25519 -outform DER -out "${der}" 2> /dev/null
  variable="FACEGATE_SERVICE_KEY_$(tr 'a-z-' 'A-Z_' <<< "${service}")"
  service_seeds["${variable}"]="$(tail -c 32 "${der}" | base64 -w0)"
  public="$(openssl pkey -inform DER -in "${der}" -pubout -outform DER | tail -c 32 | base64 -w0)"
  service_public_keys="${service_public_keys}${service_public_keys:+,}${service}=${public}"
done

# The kiosk-orchestrator's token key: the seed to the kiosk-orchestrator, the public key to the gateway.
openssl genpkey -algorithm ed25519 -outform DER -out "${der}" 2> /dev/null
kiosk_seed="$(tail -c 32 "${der}" | base64 -w0)"
kiosk_public="$(openssl pkey -inform DER -in "${der}" -pubout -outform DER | tail -c 32 | base64 -w0)"
rm -f "${der}"

while IFS= read -r line; do
  case "${line}" in
    # One password per database role, each drawn on its own.
    POSTGRES_PASSWORD=|DB_PASSWORD_*=)
                                 echo "${line}$(random_hex 24)" ;;
    FACEGATE_SIGNING_KEY=)       echo "FACEGATE_SIGNING_KEY=$(random_base64)" ;;
    FACEGATE_KIOSK_SIGNING_KEY=) echo "FACEGATE_KIOSK_SIGNING_KEY=${kiosk_seed}" ;;
    FACEGATE_KIOSK_PUBLIC_KEYS=) echo "FACEGATE_KIOSK_PUBLIC_KEYS=${kiosk_public}" ;;
    FACEGATE_AUDIT_KEY=)         echo "FACEGATE_AUDIT_KEY=$(random_base64)" ;;
    FACEGATE_SEALING_KEY=)       echo "FACEGATE_SEALING_KEY=$(random_base64)" ;;
    FACEGATE_CTID_PRIVATE_KEY=)  echo "FACEGATE_CTID_PRIVATE_KEY=${ctid_private}" ;;
    FACEGATE_CTID_PUBLIC_KEY=)   echo "FACEGATE_CTID_PUBLIC_KEY=${ctid_public}" ;;
    FACEGATE_ADMIN_KEY=)         echo "FACEGATE_ADMIN_KEY=$(random_hex 32)" ;;
    FACEGATE_SERVICE_KEY_*=)     echo "${line}${service_seeds[${line%=}]:?no key drawn for ${line%=}}" ;;
    FACEGATE_SERVICE_PUBLIC_KEYS=) echo "FACEGATE_SERVICE_PUBLIC_KEYS=${service_public_keys}" ;;
    *)                           echo "${line}" ;;
  esac
done < "${example}"
