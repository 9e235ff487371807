"""Runs one Python test suite (the test_*.py files of Tests/<name>) and prints the closing line scripts/test.sh reads:
`<name>: N passed, N failed, N skipped`. Exit status 0 only when something ran and nothing failed."""

import os
import sys
import time
import unittest


class TimedResult(unittest.TextTestResult):
    """Each test's line ends with its wall time, so a slow test is seen in the job's log."""

    def startTest(self, test):
        self._started = time.monotonic()
        super().startTest(test)

    def addSuccess(self, test):
        if self.showAll:
            self.stream.write(f"({time.monotonic() - self._started:.1f} s) ")
        super().addSuccess(test)


name = sys.argv[1]
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
sys.path.insert(0, here)
suite = unittest.defaultTestLoader.discover(here, pattern="test_*.py", top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2, resultclass=TimedResult).run(suite)
failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
skipped = len(result.skipped)
passed = result.testsRun - failed - skipped
print(f"{name}: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(0 if failed == 0 and result.testsRun > 0 else 1)
