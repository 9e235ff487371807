"""The subset of Apache Kafka's kafka-topics.sh that create-topics.sh uses, over the Kafka admin
API (librdkafka through confluent-kafka), so the script can run against the test broker without
a JVM. Same arguments; --describe prints the first line the way kafka-topics.sh does
("Topic: <name>\tTopicId: ...\tPartitionCount: <n>\tReplicationFactor: <r>\tConfigs: k=v,..."),
Configs being the topic's own settings. Runs as a program, or as main(arguments, out, err) inside
the tests (test_create_topics.py serves it to the script from there).
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, TextIO

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic


def own_configs(admin: AdminClient, topic: str) -> str:
    """The topic's own settings as kafka-topics.sh lists them: k=v,k=v."""
    resource = ConfigResource("topic", topic)
    entries = admin.describe_configs([resource], request_timeout=30)[resource].result()
    own = {name: entry.value for name, entry in entries.items()
           if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}
    if not own and all(entry.is_default for entry in entries.values()):
        # A broker that answers with the topic's own settings only, all marked as defaults
        # (the test broker does): those are the settings.
        own = {name: entry.value for name, entry in entries.items() if entry.value is not None}
    return ",".join(f"{name}={value}" for name, value in sorted(own.items()))


class Parser(argparse.ArgumentParser):
    """Prints usage, help and errors to the given streams rather than the process's."""

    def __init__(self, out: TextIO, err: TextIO, **arguments: object) -> None:
        super().__init__(**arguments)  # type: ignore[arg-type]
        self.out, self.err = out, err

    def _print_message(self, message: str, file: TextIO | None = None) -> None:
        if message:
            (self.err if file is sys.stderr else self.out).write(message)


def main(argv: list[str] | None = None, out: TextIO | None = None, err: TextIO | None = None,
         admin_client: Callable[[dict[str, str]], AdminClient] = AdminClient) -> int:
    """The program on argv, printing to out and err; admin_client makes the client from its settings."""
    out, err = out or sys.stdout, err or sys.stderr
    parser = Parser(out, err, prog="kafka-topics.sh")
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--command-config")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", action="store_true")
    action.add_argument("--describe", action="store_true")
    parser.add_argument("--if-not-exists", action="store_true")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int)
    parser.add_argument("--replication-factor", type=int, default=1)
    parser.add_argument("--config", action="append", default=[])
    try:
        arguments = parser.parse_args(argv)
    except SystemExit as stop:  # bad arguments (reported) or --help
        return stop.code if isinstance(stop.code, int) else 2
    if arguments.command_config:
        print("kafka-topics: --command-config is not supported here", file=err)
        return 1
    admin = admin_client({"bootstrap.servers": arguments.bootstrap_server})

    if arguments.create:
        configs = dict(item.split("=", 1) for item in arguments.config)
        topic = NewTopic(arguments.topic, num_partitions=arguments.partitions,
                         replication_factor=arguments.replication_factor, config=configs)
        try:
            admin.create_topics([topic], request_timeout=30)[arguments.topic].result()
        except KafkaException as error:
            if error.args[0].name() == "TOPIC_ALREADY_EXISTS" and arguments.if_not_exists:
                return 0
            print(f"Error while executing topic command : {error}", file=err)
            return 1
        print(f"Created topic {arguments.topic}.", file=out)
        return 0

    metadata = admin.list_topics(arguments.topic, timeout=30).topics.get(arguments.topic)
    if metadata is None or metadata.error is not None:
        print(f"Error while executing topic command : Topic '{arguments.topic}' does not exist", file=err)
        return 1
    partitions = metadata.partitions
    replication = len(next(iter(partitions.values())).replicas) if partitions else 0
    print(f"Topic: {arguments.topic}\tTopicId: -\tPartitionCount: {len(partitions)}\t"
          f"ReplicationFactor: {replication}\tConfigs: {own_configs(admin, arguments.topic)}", file=out)
    for number, partition in sorted(partitions.items()):
        print(f"\tTopic: {arguments.topic}\tPartition: {number}\tLeader: {partition.leader}\t"
              f"Replicas: {','.join(map(str, partition.replicas))}\tIsr: {','.join(map(str, partition.isrs))}", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
