"""deploy/k8s/base/files/create-topics.sh against a real Kafka-protocol broker.

Needs FACEGATE_TEST_KAFKA_BROKERS (set by the Makefile). kafka-topics.sh and kafka-configs.sh
need a JVM, so the script's KAFKA_TOPICS and KAFKA_CONFIGS point at stand-ins taking the same
command lines over the Kafka admin API: kafka_topics_cli.py and kafka_configs_cli.py. The script
calls them some thirty times a run, so they run in this process (StandIns below) rather than as a
Python process each, which would spend most of its time importing the Kafka client. Every test
works under its own topic prefix and deletes its topics afterwards.
"""
from __future__ import annotations

import io
import os
import socketserver
import subprocess
import sys
import tempfile
import threading
import traceback
import unittest
import uuid
from pathlib import Path
from typing import Callable

from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SCRIPT = REPO / "deploy/k8s/base/files/create-topics.sh"
sys.path.insert(0, str(REPO / "deploy/validate"))
sys.path.insert(0, str(HERE))
import kafka_configs_cli  # noqa: E402
import kafka_topics_cli  # noqa: E402
from validate_deploy import SHORT_RETENTION_TOPICS, TOPICS  # noqa: E402  (the contract's topic table)

# The stand-in programs: bash sends the tool's name and arguments (NUL-terminated, after their count)
# to the test process over /dev/tcp, and prints what comes back: "1 <line>" to stdout, "2 <line>" to
# stderr, then "status <n>", its exit status.
STAND_IN = """#!/bin/bash
exec 3<>/dev/tcp/127.0.0.1/{port}
printf '%s\\0' {tool} "$#" "$@" >&3
status=1
while IFS= read -r line <&3; do
  case "$line" in
    "1 "*) printf '%s\\n' "${{line:2}}" ;;
    "2 "*) printf '%s\\n' "${{line:2}}" >&2 ;;
    "status "*) status="${{line#status }}" ;;
  esac
done
exit "$status"
"""


class StandIns:
    """kafka-topics.sh and kafka-configs.sh in directory, served from this process until close()."""

    TOOLS: dict[str, Callable[..., int]] = {"kafka-topics.sh": kafka_topics_cli.main,
                                            "kafka-configs.sh": kafka_configs_cli.main}

    def __init__(self, directory: Path) -> None:
        tools = self.TOOLS
        # One client per broker list for all calls: it connects once, and librdkafka reports (as
        # info) events it drops when a client is discarded right after its request.
        clients: dict[str, AdminClient] = {}
        lock = threading.Lock()

        def admin_client(settings: dict[str, str]) -> AdminClient:
            key = repr(sorted(settings.items()))
            with lock:
                if key not in clients:
                    clients[key] = AdminClient(settings)
                return clients[key]
        self.clients = clients

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                fields: list[bytes] = []
                buffer = b""
                while len(fields) < 2 or len(fields) < 2 + int(fields[1]):
                    chunk = self.request.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                    *complete, buffer = buffer.split(b"\0")
                    fields += complete
                tool, arguments = fields[0].decode(), [f.decode() for f in fields[2:2 + int(fields[1])]]
                out, err = io.StringIO(), io.StringIO()
                try:
                    status = tools[tool](arguments, out, err, admin_client)
                except Exception:  # reported to the script as the program's own failure would be
                    err.write(traceback.format_exc())
                    status = 1
                reply = [f"1 {line}" for line in out.getvalue().splitlines()]
                reply += [f"2 {line}" for line in err.getvalue().splitlines()]
                self.wfile.write(("\n".join(reply + [f"status {status}"]) + "\n").encode())

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.paths = {}
        for tool in tools:
            path = directory / tool
            path.write_text(STAND_IN.format(port=self.server.server_address[1], tool=tool))
            path.chmod(0o755)
            self.paths[tool] = path

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
        self.clients.clear()


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
        stand_ins = StandIns(Path(tools.name))
        self.addCleanup(stand_ins.close)
        self.kafka_topics = stand_ins.paths["kafka-topics.sh"]
        self.kafka_configs = stand_ins.paths["kafka-configs.sh"]

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
