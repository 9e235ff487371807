#!/usr/bin/env bash
# `make test`: a private PostgreSQL + broker on the test ports, then every test target, then teardown.
# With arguments (`scripts/test.sh --filter …`), only the Swift tests they select run, in one process.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/stack.sh up test
# Background test streams stop with the script (an interrupt must not leave them running on a stopped stack).
trap 'kill $(jobs -p) 2>/dev/null || true; scripts/stack.sh down test' EXIT
# shellcheck disable=SC1091
. .run/test/env
swift build --build-tests
bundle="$(swift build --show-bin-path)/FaceGatePackageTests.xctest"
started=$(date +%s)

# Python suites against the binaries just built; each starts and stops its own services on this profile's PostgreSQL and
# broker and ends with `<name>: N passed, N failed, N skipped` (counted at the end).
python_suite() {  # $1 name: the test_*.py files of Tests/$1
  .run/venv/bin/python Tests/python_suite.py "$1" >".run/test/$1-test.log" 2>&1
}

# Each Swift test process runs one test at a time: several suites start whole stacks and real processes, and on the
# 2-core machines this runs on parallel tests would starve the cooperative thread pool every in-process server depends
# on. The bundle runs directly: `swift test` holds a lock on .build for as long as it runs.
swift_tests() {  # $1 log, then the bundle's arguments
  local log="$1"
  shift
  NO_COLOR=1 "$bundle" --testing-library swift-testing --no-parallel "$@" >"$log" 2>&1
}

logs=(.run/test/swift-test-1.log)
suites=()
status=0
if [ "$#" -gt 0 ]; then
  swift_tests "${logs[0]}" "$@" || status=$?
else
  # scripts/balancer.py against stand-in backends, then the short seeded fault-injection run (Tests/chaos): a supervised
  # stack of its own under traffic while replicas are killed and this profile's broker and PostgreSQL are restarted. It
  # runs alone, first: the restarts would break any other test running then. Each invariant it checks counts as a test.
  suites=(chaos console openapi)
  python_suite chaos || status=$?
  # Then three streams side by side, since the tests spend much of their time waiting (for the broker, for deadlines,
  # for processes they start): the Swift suites that keep the face models and OCR busy; every other Swift suite (a new
  # suite lands there); and the Python suites — the web console in headless Chromium (gateway + matcher +
  # kiosk-orchestrator; liveness bursts made with facegate-bench frames, which `swift build --build-tests` builds too;
  # screenshots in .run/test/artifacts/console/), then a client generated from the served OpenAPI document by a
  # third-party generator (openapi-python-client) driving face login and the operator API. The deploy validator runs
  # after them. Test ids read `Module.Suite/test()`.
  heavy='^(IntegrationTests\.(LivenessTests|KioskOnboardingTests|FaceModelTests|CTIDTests|KioskFlowTests)/|(DocumentOCRTests|FaceEngineTests)\.)'
  logs+=(.run/test/swift-test-2.log)
  # The streams write to their logs (printed at the end); a line a minute shows they are alive.
  (while sleep 60; do echo "[test] $(( $(date +%s) - started )) s: $(cat "${logs[@]}" 2>/dev/null | grep -c '^✔ Test' || true) Swift tests passed"; done) &
  heartbeat=$!
  swift_tests "${logs[0]}" --filter "$heavy" &
  heavy_tests=$!
  (outcome=0; python_suite console || outcome=$?; python_suite openapi || outcome=$?; exit "$outcome") &
  python_tests=$!
  swift_tests "${logs[1]}" --skip "$heavy" || status=$?
  wait "$heavy_tests" || status=$?
  wait "$python_tests" || status=$?
  kill "$heartbeat" 2>/dev/null || true
  scripts/validate-deploy.sh || status=$?
fi
cat "${logs[@]}"
for suite in "${suites[@]}"; do cat ".run/test/$suite-test.log"; done

# The summary CI reads last (the XCTest runner reports 0 tests: every test is a Swift Testing test). Servers' logs scroll
# the failures far up, so they are repeated here: each failed Swift test with its recorded issues, each failed Python
# test by name. `|| true`: a grep that finds nothing must not end the script under `set -e -o pipefail`.
ran=0
crashed=0
for log in "${logs[@]}"; do
  count="$(grep -oE 'Test run with [0-9]+ tests?' "$log" | grep -oE '[0-9]+' | head -n 1 || true)"
  # A stream that ended without its summary line (a crash) counts as one failure.
  [ -n "$count" ] || crashed=$(( crashed + 1 ))
  ran=$(( ran + ${count:-0} ))
done
failed="$(cat "${logs[@]}" | grep -E '^✘ Test .* failed after' | grep -cv '^✘ Test run with' || true)"
passed=$(( ran - ${failed:-0} ))
failed=$(( ${failed:-0} + crashed ))
for suite in "${suites[@]}"; do
  log=".run/test/$suite-test.log"
  count="$(sed -nE "s/^$suite: ([0-9]+) passed.*/\1/p" "$log" | tail -n 1)"
  passed=$(( passed + ${count:-0} ))
  count="$(sed -nE "s/^$suite: [0-9]+ passed, ([0-9]+) failed.*/\1/p" "$log" | tail -n 1)"
  # A suite that ended without its summary line (a crash) counts as one failure.
  failed=$(( ${failed:-0} + ${count:-1} ))
done
[ "$status" -eq 0 ] || [ "${failed:-0}" -gt 0 ] || failed=1
if [ "${failed:-0}" -gt 0 ]; then
  echo "failures:"
  cat "${logs[@]}" | grep -E '^✘ Test .*(recorded an issue|failed after)' | grep -v '^✘ Test run with' | head -n 40 || true
  for suite in "${suites[@]}"; do grep -hE '^(FAIL|ERROR):' ".run/test/$suite-test.log" | head -n 40 || true; done
fi
echo "tests: $passed passed, ${failed:-0} failed in $(( $(date +%s) - started )) s"
[ "${failed:-0}" -eq 0 ]
