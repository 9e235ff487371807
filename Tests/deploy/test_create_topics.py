"""deploy/k8s/base/files/create-topics.sh against a real Kafka-protocol broker.

Needs FACEGATE_TEST_KAFKA_BROKERS (set by the Makefile). kafka-topics.sh and kafka-configs.sh
need a JVM, so the script's KAFKA_TOPICS and KAFKA_CONFIGS point at kafka_topics_cli.py and
kafka_configs_cli.py, the same command lines over the Kafka admin API. Every test works under its
own topic prefix and deletes its topics afterwards.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy/k8s/base/files/create-topics.sh"
CLI = Path(__file__).resolve().parent / "kafka_topics_cli.py"
CONFIGS_CLI = Path(__file__).resolve().parent / "kafka_configs_cli.py"
sys.path.insert(0, str(REPO / "deploy/validate"))
from validate_deploy import SHORT_RETENTION_TOPICS, TOPICS  # noqa: E402  (the contract's topic table)


class CreateTopicsTests(unittest.TestCase):
    def setUp(self) -> None:
        brokers = os.environ.get("FACEGATE_TEST_KAFKA_BROKERS")
        if not brokers:
            self.fail("FACEGATE_TEST_KAFKA_BROKERS is not set: it names the Kafka-protocol broker "
                      "the topic script is tested against (the Makefile sets it)")
        self.brokers = brokers
        self.prefix = f"deploytest-{uuid.uuid4().hex[:10]}."
        self.admin = AdminClient({"bootstrap.servers": brokers})
        self.addCleanup(self.delete_topics)
        tools = tempfile.TemporaryDirectory(prefix="facegate-topics-")
        self.addCleanup(tools.cleanup)
        self.kafka_topics = Path(tools.name) / "kafka-topics.sh"
        self.kafka_configs = Path(tools.name) / "kafka-configs.sh"
        for tool, cli in ((self.kafka_topics, CLI), (self.kafka_configs, CONFIGS_CLI)):
            tool.write_text(f'#!/bin/bash\nexec "{sys.executable}" "{cli}" "$@"\n')
            tool.chmod(0o755)

    def delete_topics(self) -> None:
        existing = [t for t in self.admin.list_topics(timeout=30).topics if t.startswith(self.prefix)]
        if existing:
            for future in self.admin.delete_topics(existing, request_timeout=30).values():
                future.result()

    def run_script(self) -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KAFKA_BOOTSTRAP": self.brokers,
               "TOPIC_PREFIX": self.prefix, "REPLICATION_FACTOR": "1", "KAFKA_TOPICS": str(self.kafka_topics),
               "KAFKA_CONFIGS": str(self.kafka_configs)}
        return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300)

    def partitions(self) -> dict[str, int]:
        topics = self.admin.list_topics(timeout=30).topics
        return {name[len(self.prefix):]: len(meta.partitions) for name, meta in topics.items()
                if name.startswith(self.prefix)}

    def retention(self, name: str) -> dict[str, str]:
        resource = ConfigResource("topic", self.prefix + name)
        entries = self.admin.describe_configs([resource], request_timeout=30)[resource].result()
        return {key: entries[key].value for key in ("retention.ms", "segment.ms") if key in entries}

    def test_creates_every_contract_topic_and_is_idempotent(self) -> None:
        first = self.run_script()
        self.assertEqual(first.returncode, 0, first.stdout + first.stderr)
        self.assertEqual(self.partitions(), {name: count for name, (count, _) in TOPICS.items()})
        self.assertIn(f"topic {self.prefix}face.jobs.v1: 12 partitions", first.stdout)

        again = self.run_script()
        self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
        self.assertEqual(self.partitions(), {name: count for name, (count, _) in TOPICS.items()})
        # Topics carrying images and replies keep records minutes only.
        for name in sorted(SHORT_RETENTION_TOPICS):
            self.assertEqual(self.retention(name), {"retention.ms": "600000", "segment.ms": "60000"}, name)

    def test_existing_job_topic_gets_the_short_retention(self) -> None:
        # A topic made before the retention rule (the broker's default, days) is brought to it.
        old = NewTopic(f"{self.prefix}kiosk.commands.v1", num_partitions=6, replication_factor=1)
        self.admin.create_topics([old], request_timeout=30)[old.topic].result()
        self.assertNotIn("retention.ms", self.retention("kiosk.commands.v1"))
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(self.retention("kiosk.commands.v1"), {"retention.ms": "600000", "segment.ms": "60000"})

    def test_existing_topic_with_other_partitions_fails(self) -> None:
        wrong = NewTopic(f"{self.prefix}face.jobs.v1", num_partitions=3, replication_factor=1)
        self.admin.create_topics([wrong], request_timeout=30)[wrong.topic].result()
        result = self.run_script()
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn(f"topic {self.prefix}face.jobs.v1: has 3 partitions, the contract says 12", result.stderr)
        # The existing topic is left alone; the others are still created.
        self.assertEqual(self.partitions()["face.jobs.v1"], 3)
        self.assertEqual(self.partitions()["ctid.jobs.v1"], 6)


if __name__ == "__main__":
    unittest.main()
