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
# One test at a time: several suites start whole stacks and real processes, and the 2-core machines this
# runs on would otherwise starve the cooperative thread pool that every in-process server depends on.
swift test --skip-build --no-parallel "$@"
if [ -x scripts/validate-deploy.sh ]; then scripts/validate-deploy.sh; fi
