#!/usr/bin/env bash
# `make test`: a private PostgreSQL + broker on the test ports, then every test target, then teardown.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/stack.sh up test
trap 'scripts/stack.sh down test' EXIT
# shellcheck disable=SC1091
. .run/test/env
swift build --build-tests
swift test --skip-build "$@"
if [ -x scripts/validate-deploy.sh ]; then scripts/validate-deploy.sh; fi
