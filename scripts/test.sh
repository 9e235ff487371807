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
log=.run/test/swift-test.log
swift test --skip-build --no-parallel "$@" 2>&1 | tee "$log"
passed="$(grep -oE 'Test run with [0-9]+ tests? in [0-9]+ suites? passed' "$log" | grep -oE '[0-9]+' | head -n 1)"
scripts/validate-deploy.sh
# The summary line CI reads (the XCTest runner above reports 0 tests: every test is a Swift Testing test).
echo "tests: ${passed:-0} passed, 0 failed"
