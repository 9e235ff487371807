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
# The web console in headless Chromium, against the binaries just built (Tests/console starts and stops its own
# gateway + matcher + kiosk-orchestrator on this profile's PostgreSQL and broker, and makes liveness bursts with
# facegate-bench frames, which `swift build --build-tests` builds too). Screenshots: .run/test/artifacts/console/.
console_log=.run/test/console-test.log
console_status=0
.run/venv/bin/python Tests/console/run_tests.py 2>&1 | tee "$console_log" || console_status=$?
console_passed="$(sed -nE 's/^console: ([0-9]+) passed.*/\1/p' "$console_log" | tail -n 1)"
console_failed="$(sed -nE 's/^console: [0-9]+ passed, ([0-9]+) failed.*/\1/p' "$console_log" | tail -n 1)"
[ "$console_status" -eq 0 ] || [ "${console_failed:-0}" -gt 0 ] || console_failed=1
# The summary line CI reads (the XCTest runner above reports 0 tests: every test is a Swift Testing test).
echo "tests: $(( ${passed:-0} + ${console_passed:-0} )) passed, ${console_failed:-0} failed"
[ "$console_status" -eq 0 ]
