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
bundle="$(swift build --show-bin-path)/FaceGatePackageTests.xctest"
# Each test process runs one test at a time: several suites start whole stacks and real processes, and on the 2-core
# machines this runs on parallel tests would starve the cooperative thread pool every in-process server depends on.
# Two such processes run side by side, though: the tests spend more than half their time waiting (for the broker, for
# deadlines, for processes they start), so two streams share the cores well. The first takes the suites that keep the
# face models and OCR busy, the second everything else (a new suite lands there). With arguments
# (`scripts/test.sh --filter …`), one process runs what they select. The bundle runs directly: `swift test` holds a lock on .build.
swift_tests() {  # $1 log, then the bundle's arguments
  local log="$1"
  shift
  NO_COLOR=1 "$bundle" --testing-library swift-testing --no-parallel "$@" >"$log" 2>&1
}
# Test ids read `Module.Suite/test()`.
heavy='^(IntegrationTests\.(LivenessTests|KioskOnboardingTests|FaceModelTests|CTIDTests|KioskFlowTests)/|(DocumentOCRTests|FaceEngineTests)\.)'
logs=(.run/test/swift-test-1.log)
swift_status=0
started=$(date +%s)
if [ "$#" -gt 0 ]; then
  swift_tests "${logs[0]}" "$@" || swift_status=$?
else
  logs+=(.run/test/swift-test-2.log)
  swift_tests "${logs[0]}" --filter "$heavy" &
  first=$!
  swift_tests "${logs[1]}" --skip "$heavy" || swift_status=$?
  wait "$first" || swift_status=$?
fi
cat "${logs[@]}"
echo "swift tests: $(( $(date +%s) - started )) s"
# Tests run and tests failed (`|| true`: a grep that finds nothing must not end the script under `set -e -o pipefail`).
ran=0
for log in "${logs[@]}"; do
  count="$(grep -oE 'Test run with [0-9]+ tests?' "$log" | grep -oE '[0-9]+' | head -n 1 || true)"
  ran=$(( ran + ${count:-0} ))
done
swift_failed="$(cat "${logs[@]}" | grep -E '^✘ Test .* failed after' | grep -cv '^✘ Test run with' || true)"
[ "$swift_status" -eq 0 ] || [ "${swift_failed:-0}" -gt 0 ] || swift_failed=1
passed=$(( ran - ${swift_failed:-0} ))
scripts/validate-deploy.sh
# Python suites against the binaries just built; each starts and stops its own services on this profile's PostgreSQL and
# broker and ends with `<name>: N passed, N failed, N skipped`.
python_passed=0
python_failed=0
python_suite() {  # $1 name: the test_*.py files of Tests/$1
  local log=".run/test/$1-test.log" status=0 passed failed
  .run/venv/bin/python Tests/python_suite.py "$1" 2>&1 | tee "$log" || status=$?
  passed="$(sed -nE "s/^$1: ([0-9]+) passed.*/\1/p" "$log" | tail -n 1)"
  failed="$(sed -nE "s/^$1: [0-9]+ passed, ([0-9]+) failed.*/\1/p" "$log" | tail -n 1)"
  [ "$status" -eq 0 ] || [ "${failed:-0}" -gt 0 ] || failed=1
  python_passed=$(( python_passed + ${passed:-0} ))
  python_failed=$(( python_failed + ${failed:-0} ))
}
# scripts/balancer.py against stand-in backends, then the short seeded fault-injection run (Tests/chaos): a supervised
# stack of its own under traffic while replicas are killed and this profile's broker and PostgreSQL are restarted
# (they are left running for the suites below); each invariant it checks counts as a test.
python_suite chaos
# The web console in headless Chromium (gateway + matcher + kiosk-orchestrator; liveness bursts made with facegate-bench
# frames, which `swift build --build-tests` builds too). Screenshots: .run/test/artifacts/console/.
python_suite console
# A client generated from the served OpenAPI document by a third-party generator (openapi-python-client), driving
# face login and the operator API against a gateway + matcher (Tests/openapi).
python_suite openapi
# The summary CI reads last (the XCTest runner above reports 0 tests: every test is a Swift Testing test). Servers' logs
# scroll the failures far up, so they are repeated here: each failed Swift test with its recorded issues, each failed
# Python test by name.
if [ "${swift_failed:-0}" -gt 0 ] || [ "$python_failed" -gt 0 ]; then
  echo "failures:"
  cat "${logs[@]}" | grep -E '^✘ Test .*(recorded an issue|failed after)' | grep -v '^✘ Test run with' | head -n 40 || true
  grep -hE '^(FAIL|ERROR):' .run/test/chaos-test.log .run/test/console-test.log .run/test/openapi-test.log 2>/dev/null \
    | head -n 40 || true
fi
echo "tests: $(( ${passed:-0} + python_passed )) passed, $(( ${swift_failed:-0} + python_failed )) failed"
[ "${swift_failed:-0}" -eq 0 ] && [ "$python_failed" -eq 0 ]
