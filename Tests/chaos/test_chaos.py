"""The short seeded fault-injection run as part of `make test` (scripts/test.sh runs it as one job beside the others):
Tests/chaos/chaos.py on the chaos profile's PostgreSQL and broker, which it restarts and leaves running, so no other job
sees the restarts. Each invariant the run checks is one test here. FACEGATE_CHAOS_SEED, FACEGATE_CHAOS_REQUESTS and
FACEGATE_CHAOS_FAULTS change the run (defaults 1, 300, 7: one fault of each kind, under two minutes when the stack
recovers); FACEGATE_CHAOS_PROFILE (default test) names the profile, whose environment must be sourced and servers up."""

import os
import unittest

import chaos

results = {}


def setUpModule():
    options = chaos.parse(["--profile", os.environ.get("FACEGATE_CHAOS_PROFILE", "test"),
                           "--seed", os.environ.get("FACEGATE_CHAOS_SEED", "1"),
                           "--requests", os.environ.get("FACEGATE_CHAOS_REQUESTS", "300"),
                           "--faults", os.environ.get("FACEGATE_CHAOS_FAULTS", "7")])
    for key, ok, details in chaos.Run(options).execute():
        results[key] = (ok, details)


class ChaosInvariants(unittest.TestCase):
    """One test per invariant of chaos.INVARIANTS, in the order the run checks them."""


def invariant_test(key):
    def test(self):
        if key not in results:
            self.fail("the run ended before this was checked")
        ok, details = results[key]
        self.assertTrue(ok, details)
    test.__doc__ = chaos.INVARIANTS[key]
    return test


for number, name in enumerate(chaos.INVARIANTS):
    setattr(ChaosInvariants, f"test_{number:02d}_{name}", invariant_test(name))


if __name__ == "__main__":
    unittest.main()
