#!/usr/bin/env bash
# `make test` (after `make install`): builds, starts a private PostgreSQL + broker on the test ports (and a second
# pair for the fault-injection run), runs every test suite as jobs of a pool, then tears down.
# With arguments (`scripts/test.sh --filter …`), only the Swift tests they select run, in one process (no installs).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
LOGS=.run/test/logs
# Logs and artefacts carry tokens and photos: this user's alone, like the rest of the state directory.
umask 077
started=$(date +%s)

# The deploy validator's tools before the build, not in the middle of the test jobs (`make test` installed the rest).
# Installing beside the build does not pay: pip uses the CPU too, and from a fresh clone here the installs and the build
# took 446 s side by side and 449 s one after the other.
[ "$#" -gt 0 ] || scripts/validate-deploy.sh --install-only
swift build --build-tests
bundle="$(swift build --show-bin-path)/FaceGatePackageTests.xctest"
profiles=(test)
[ "$#" -gt 0 ] || profiles+=(chaos)
# Jobs stop with the script (an interrupt must not leave them running on a stopped stack), each with every process it
# started, then the servers.
descendants() {  # $1 pid
  local child
  for child in $(pgrep -P "$1"); do echo "$child"; descendants "$child"; done
}
trap 'for job in $(jobs -p); do kill "$job" $(descendants "$job") 2>/dev/null || true; done
      for p in "${profiles[@]}"; do scripts/stack.sh down "$p"; done' EXIT
for p in "${profiles[@]}"; do scripts/stack.sh up "$p"; done
# The broker's waiting fetches (scripts/stack.sh): every idle consumer of every test's stack asks 1000/W times a
# second. In a run here the broker took 78 s of CPU at 25 ms and 60 s at 50 ms, for ~12 ms a hop.
# Replies wait as long as jobs here (the tests' CPU, not a login's latency).
fetch_wait_ms="${FACEGATE_KAFKA_FETCH_WAIT_MS:-50}"
reply_fetch_wait_ms="${FACEGATE_KAFKA_REPLY_FETCH_WAIT_MS:-$fetch_wait_ms}"
# shellcheck disable=SC1091
. .run/test/env
export FACEGATE_KAFKA_FETCH_WAIT_MS="$fetch_wait_ms" FACEGATE_KAFKA_REPLY_FETCH_WAIT_MS="$reply_fetch_wait_ms"
# OpenMP (Tesseract in the OCR tests and the kiosk-orchestrator, ImageMagick's convert in the image fixtures) spins its
# idle threads: with six jobs on two cores, one thread each does the same work without the spinning (about 20 s of
# CPU in a run here).
export OMP_NUM_THREADS=1
rm -rf "$LOGS"
mkdir -p "$LOGS"
tested=$(date +%s)

# A Swift job runs one test at a time: several suites start whole stacks and real processes, and parallel tests in one
# process would starve the cooperative thread pool every in-process server depends on. The bundle runs directly:
# `swift test` holds a lock on .build for as long as it runs. Test ids read `Module.Suite/test()`.
swift_job() {  # $1 job name, then the bundle's arguments
  local name="$1"
  shift
  NO_COLOR=1 limited "$LOGS/swift-$name.log" "$bundle" --testing-library swift-testing --no-parallel "$@"
}

# A Python suite runs the test_*.py files of Tests/<name> against the binaries just built and ends with
# `<name>: N passed, N failed, N skipped`.
python_job() {  # $1 name
  limited "$LOGS/$1.log" .run/venv/bin/python Tests/python_suite.py "$1"
}

# Runs a job's command with its output in a log, for at most FACEGATE_JOB_SECONDS (default 1200; the longest jobs take
# about 100 s here). A job past its limit is a failure, not a hung run (see `overrun`).
limited() {  # $1 log, then the command
  local log="$1"
  shift
  "$@" >"$log" 2>&1 &
  local pid=$! outcome=0
  overrun "$pid" "$log" >/dev/null 2>&1 &
  local watchdog=$!
  wait "$pid" || outcome=$?
  kill "$watchdog" $(descendants "$watchdog") 2>/dev/null || true
  return "$outcome"
}

# After the limit, the log gets the tests the job had started and not finished and, where gdb is installed, every
# thread's stack; then the job is killed with every process it started.
overrun() {  # $1 pid, $2 log
  sleep "${FACEGATE_JOB_SECONDS:-1200}"
  local children
  children="$(descendants "$1")"
  echo "JOB TIMEOUT: still running after ${FACEGATE_JOB_SECONDS:-1200} s (FACEGATE_JOB_SECONDS)" >>"$2"
  comm -23 <(sed -nE 's/^◇ Test (.*) started\.$/\1/p' "$2" | sort) \
           <(sed -nE 's/^[✔✘] Test (.*) (passed|failed) after .*/\1/p' "$2" | sort -u) |
    sed 's/^/JOB TIMEOUT: started and not finished: /' >>"$2"
  if command -v gdb >/dev/null; then
    timeout 120 gdb -p "$1" -batch -ex 'thread apply all bt' 2>/dev/null | grep -E '^(#|Thread)' | head -n 400 |
      swift demangle --simplified >>"$2"
  fi
  kill -KILL "$1" $children
}

if [ "$#" -gt 0 ]; then
  status=0
  swift_job selected "$@" || status=$?
else
  # The jobs, longest first, FACEGATE_TEST_JOBS (default 6) at a time: the tests spend much of their time waiting (for
  # the broker, for deadlines, for the processes they start), so more jobs than cores keeps both cores busy. On two
  # cores here the test phase took 333 s with 4 jobs, 275 s with 6 and 279 s with 8 (the console job, the
  # longest, then sets the pace).
  #   console  the web console in headless Chromium (gateway + matcher + kiosk-orchestrator; liveness bursts made with
  #            facegate-bench frames; screenshots in .run/test/artifacts/console/);
  #   chaos    scripts/balancer.py against stand-in backends, then the short seeded fault-injection run (Tests/chaos):
  #            a supervised stack under traffic while replicas are killed and the chaos profile's broker and PostgreSQL
  #            are restarted (its own pair, so no other job sees the restarts); each invariant counts as a test;
  #   deploy   the offline validation of deploy/ and its self-tests;
  #   openapi  a client generated from the served OpenAPI document by a third-party generator (openapi-python-client)
  #            driving face login and the operator API;
  #   Swift    one job per module of quick unit tests, per test of the suites that take over a minute, per suite else.
  per_module='^(CryptoTests|FaceGateCoreTests|HTTPServerTests|AuthGatewayTests|PostgresClientTests)$'
  per_test='^(IntegrationTests\.(LivenessTests|TakeoverTests|ClientEndToEndTests)|DocumentOCRTests\.MRZReaderTests)$'
  # Suites that took 30 s or more in a run here start with the first Swift jobs, so none of them starts last.
  long_suites='^(IntegrationTests\.(KioskOnboardingTests|CLITests|TrustPolicyTests|ReadinessTests|DPoPTests|MatcherFailoverTests|FaceModelTests)|KafkaClientTests\.ConsumerGroupTests|FaceEngineTests\.(GallerySearchTests|FaceEngineTests))$'
  ids="$("$bundle" --testing-library swift-testing --list-tests 2>/dev/null | grep -E '^[A-Za-z]+\.[A-Za-z]+/')"
  long_jobs=() test_jobs=() suite_jobs=() module_jobs=()
  declare -A seen=()
  while IFS= read -r id; do
    suite="${id%%/*}"
    module="${suite%%.*}"
    if [[ "$module" =~ $per_module ]]; then
      key="$module" pattern="^$module\\."
    elif [[ "$suite" =~ $per_test ]]; then
      # A test's full id goes on with its source location (`/File.swift:12:5`).
      key="$id" pattern="^$(printf '%s' "$id" | sed 's/[][\.()*+?{}|^$]/\\&/g')(/|\$)"
    else
      key="$suite" pattern="^${suite/./\\.}/"
    fi
    [ -n "${seen[$key]:-}" ] && continue
    seen[$key]=1
    name="$(printf '%s' "$key" | tr -c 'A-Za-z0-9.\n' '-' | sed 's/-*$//')"
    case "$key" in
      */*) test_jobs+=("swift $name $pattern") ;;
      *.*) if [[ "$key" =~ $long_suites ]]; then long_jobs+=("swift $name $pattern"); else suite_jobs+=("swift $name $pattern"); fi ;;
      *) module_jobs+=("swift $name $pattern") ;;
    esac
  done <<<"$ids"
  jobs_list=("python console" "python chaos" "deploy deploy" "python openapi" "${long_jobs[@]}" "${test_jobs[@]}" "${suite_jobs[@]}"
             "${module_jobs[@]}")
  at_once="${FACEGATE_TEST_JOBS:-6}"
  echo "[test] $(wc -l <<<"$ids") Swift tests in $(( ${#jobs_list[@]} - 4 )) jobs, 4 other jobs, $at_once at a time"

  run_job() {  # $1 kind, $2 name, $3 Swift filter; writes $LOGS/<name>.started, .status and .seconds (its wall time)
    local outcome=0 began
    began=$(date +%s)
    echo "$began" >"$LOGS/$2.started"
    case "$1" in
      swift) swift_job "$2" --filter "$3" || outcome=$? ;;
      python) if [ "$2" = chaos ]; then
                (. .run/chaos/env; FACEGATE_CHAOS_PROFILE=chaos python_job chaos) || outcome=$?
              else python_job "$2" || outcome=$?; fi ;;
      deploy) limited "$LOGS/deploy.log" scripts/validate-deploy.sh || outcome=$? ;;
    esac
    echo $(( $(date +%s) - began )) >"$LOGS/$2.seconds"
    echo "$outcome" >"$LOGS/$2.status"
  }
  # Every minute: how far the run is, and any job running for over 5 minutes (the longest take about 100 s here).
  (while sleep 60; do
     echo "[test] $(( $(date +%s) - tested )) s: $(ls "$LOGS"/*.status 2>/dev/null | wc -l) of ${#jobs_list[@]} jobs done," \
          "$(cat "$LOGS"/swift-*.log 2>/dev/null | grep '^✔ Test ' | grep -cv '^✔ Test run with' || true) Swift tests passed"
     for file in "$LOGS"/*.started; do
       [ -e "$file" ] || continue
       job="$(basename "$file" .started)"
       [ -e "$LOGS/$job.status" ] || [ $(( $(date +%s) - $(cat "$file") )) -lt 300 ] ||
         echo "[test] still running after $(( $(date +%s) - $(cat "$file") )) s: $job"
     done
   done) &
  heartbeat=$!
  pids=()
  for job in "${jobs_list[@]}"; do
    while true; do
      live=()
      for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && live+=("$pid"); done
      [ "${#live[@]}" -lt "$at_once" ] && break
      wait -n "${live[@]}" 2>/dev/null || true
    done
    read -r kind name pattern <<<"$job"
    run_job "$kind" "$name" "$pattern" &
    pids+=($!)
  done
  wait "${pids[@]}" 2>/dev/null || true
  kill "$heartbeat" 2>/dev/null || true
  status=0
  for file in "$LOGS"/*.status; do [ "$(cat "$file")" = 0 ] || status=1; done
  [ "$(ls "$LOGS"/*.status | wc -l)" -eq "${#jobs_list[@]}" ] || status=1
fi
swift_logs=("$LOGS"/swift-*.log)
suites=()
[ "$#" -gt 0 ] || suites=(chaos console openapi)
cat "${swift_logs[@]}"
for suite in "${suites[@]}"; do cat "$LOGS/$suite.log"; done
[ "$#" -gt 0 ] || cat "$LOGS/deploy.log"

# The summary CI reads last (the XCTest runner reports 0 tests: every test is a Swift Testing test). Servers' logs scroll
# the failures far up, so they are repeated here: each failed Swift test with its recorded issues, each failed Python
# test by name. `|| true`: a grep that finds nothing must not end the script under `set -e -o pipefail`.
ran=0
crashed=0
for log in "${swift_logs[@]}"; do
  count="$(grep -oE 'Test run with [0-9]+ tests?' "$log" | grep -oE '[0-9]+' | head -n 1 || true)"
  # A job that ended without its summary line (a crash) counts as one failure.
  [ -n "$count" ] || crashed=$(( crashed + 1 ))
  ran=$(( ran + ${count:-0} ))
done
failed="$(cat "${swift_logs[@]}" | grep -E '^✘ Test .* failed after' | grep -cv '^✘ Test run with' || true)"
passed=$(( ran - ${failed:-0} ))
failed=$(( ${failed:-0} + crashed ))
for suite in "${suites[@]}"; do
  log="$LOGS/$suite.log"
  count="$(sed -nE "s/^$suite: ([0-9]+) passed.*/\1/p" "$log" | tail -n 1)"
  passed=$(( passed + ${count:-0} ))
  count="$(sed -nE "s/^$suite: [0-9]+ passed, ([0-9]+) failed.*/\1/p" "$log" | tail -n 1)"
  # A suite that ended without its summary line (a crash) counts as one failure.
  failed=$(( ${failed:-0} + ${count:-1} ))
done
[ "$status" -eq 0 ] || [ "${failed:-0}" -gt 0 ] || failed=1
if [ "${failed:-0}" -gt 0 ]; then
  echo "failures:"
  cat "${swift_logs[@]}" | grep -E '^✘ Test .*(recorded an issue|failed after)' | grep -v '^✘ Test run with' | head -n 40 || true
  grep -H '^JOB TIMEOUT' "$LOGS"/*.log || true
  for suite in "${suites[@]}"; do grep -hE '^(FAIL|ERROR):' "$LOGS/$suite.log" | head -n 40 || true; done
  [ "$#" -gt 0 ] || grep -q '0 with problems' "$LOGS/deploy.log" || echo "deploy validation: see $LOGS/deploy.log"
fi
now=$(date +%s)
[ "$#" -gt 0 ] || echo "longest jobs (s): $(for file in "$LOGS"/*.seconds; do echo "$(cat "$file") $(basename "$file" .seconds)"; done |
                                          sort -rn | head -n 5 | tr '\n' ' ')"
echo "tests: $passed passed, ${failed:-0} failed in $(( now - tested )) s (whole run $(( now - started )) s)"
[ "${failed:-0}" -eq 0 ]
