#!/usr/bin/env python3
"""Runs the self-tests of Tests/deploy (test_*.py) in parallel processes and reports like
`python -m unittest`: a character per test (. F E s x u), the failures, "Ran N tests", OK or FAILED.

unittest runs one test at a time, and most of these spend their time in one core's worth of schema
validation or waiting on kubectl, bash or the broker; a pool of forked workers (one per core by
default) takes the tests one by one, so a slow one holds up only its worker. Should a worker die,
its test and those not yet run fail, rather than the run hanging. The tests are plain unittest
tests and still run with `python -m unittest discover` (one at a time).

  run_tests.py [--jobs N] [--verbose] [NAME ...]   NAME: a module, class or test, as unittest takes it
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
import traceback
import unittest
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Iterator

HERE = Path(__file__).resolve().parent
TESTS: list[unittest.TestCase] = []  # filled before the workers fork, which inherit it


def flatten(suite: unittest.TestSuite | unittest.TestCase) -> Iterator[unittest.TestCase]:
    if isinstance(suite, unittest.TestSuite):
        for item in suite:
            yield from flatten(item)
    else:
        yield suite


def run_one(index: int) -> tuple[int, str, list[tuple[str, str]], float]:
    """Runs TESTS[index] in its own suite (class and module fixtures included): (index, the outcome's
    character, [(FAIL|ERROR, traceback)], seconds)."""
    test = TESTS[index]
    result = unittest.TestResult()
    started = time.perf_counter()
    unittest.TestSuite([test]).run(result)
    seconds = time.perf_counter() - started
    reports = [("ERROR", text) for _, text in result.errors] + [("FAIL", text) for _, text in result.failures]
    if result.errors:
        outcome = "E"
    elif result.failures or result.unexpectedSuccesses:
        outcome = "F" if result.failures else "u"
    elif result.skipped:
        outcome = "s"
        reports = [("skipped", reason) for _, reason in result.skipped]
    elif result.expectedFailures:
        outcome = "x"
    else:
        outcome = "."
    return index, outcome, reports, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="worker processes (default: one per core)")
    parser.add_argument("--verbose", action="store_true", help="a line per test, with its time")
    parser.add_argument("names", nargs="*", help="modules, classes or tests to run (default: all)")
    arguments = parser.parse_args()

    sys.path.insert(0, str(HERE))
    loader = unittest.TestLoader()
    suite = (loader.loadTestsFromNames(arguments.names) if arguments.names
             else loader.discover(start_dir=str(HERE), pattern="test_*.py", top_level_dir=str(HERE)))
    TESTS.extend(flatten(suite))

    started = time.perf_counter()
    outcomes: dict[int, tuple[str, list[tuple[str, str]], float]] = {}
    jobs = max(1, min(arguments.jobs, len(TESTS)))
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(run_one, index): index for index in range(len(TESTS))}
        for future in as_completed(futures):
            try:
                index, outcome, reports, seconds = future.result()
            except Exception:  # a worker died (BrokenProcessPool)
                index, outcome, reports, seconds = futures[future], "E", [("ERROR", traceback.format_exc())], 0.0
            outcomes[index] = (outcome, reports, seconds)
            if arguments.verbose:
                print(f"{seconds:6.2f}s  {outcome}  {TESTS[index].id()}", file=sys.stderr, flush=True)
            else:
                print(outcome, end="", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - started

    counts = {c: sum(1 for o, _, _ in outcomes.values() if o == c) for c in ".FEsxu"}
    stream = sys.stderr
    if not arguments.verbose:
        print(file=stream)
    for index in sorted(outcomes):
        outcome, reports, _ = outcomes[index]
        for kind, text in reports:
            if kind == "skipped":
                continue
            print("=" * 70, file=stream)
            print(f"{kind}: {TESTS[index].id()}", file=stream)
            print("-" * 70, file=stream)
            print(text, file=stream)
    print("-" * 70, file=stream)
    print(f"Ran {len(outcomes)} test{'s' if len(outcomes) != 1 else ''} in {elapsed:.3f}s"
          f" ({jobs} process{'es' if jobs != 1 else ''})", file=stream)
    print(file=stream)
    details = [f"{name}={counts[c]}" for c, name in (("F", "failures"), ("E", "errors"), ("s", "skipped"),
                                                     ("x", "expected failures"), ("u", "unexpected successes"))
               if counts[c]]
    ok = not (counts["F"] or counts["E"] or counts["u"]) and len(outcomes) == len(TESTS)
    print(("OK" if ok else "FAILED") + (f" ({', '.join(details)})" if details else ""), file=stream)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
