"""The subset of Apache Kafka's kafka-configs.sh that create-topics.sh uses, over the Kafka admin
API (librdkafka through confluent-kafka), so the script can run against the test broker without a
JVM: `--entity-type topics --entity-name T --alter --add-config k=v[,k=v]` (an incremental SET of
each setting, as kafka-configs.sh does). Runs as a program, or as main(arguments, out, err) inside
the tests (test_create_topics.py serves it to the script from there).
"""
from __future__ import annotations

import sys
from typing import Callable, TextIO

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from kafka_topics_cli import Parser


def main(argv: list[str] | None = None, out: TextIO | None = None, err: TextIO | None = None,
         admin_client: Callable[[dict[str, str]], AdminClient] = AdminClient) -> int:
    """The program on argv, printing to out and err; admin_client makes the client from its settings."""
    out, err = out or sys.stdout, err or sys.stderr
    parser = Parser(out, err, prog="kafka-configs.sh")
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--command-config")
    parser.add_argument("--entity-type", required=True, choices=["topics"])
    parser.add_argument("--entity-name", required=True)
    parser.add_argument("--alter", action="store_true", required=True)
    parser.add_argument("--add-config", required=True)
    try:
        arguments = parser.parse_args(argv)
    except SystemExit as stop:  # bad arguments (reported) or --help
        return stop.code if isinstance(stop.code, int) else 2
    if arguments.command_config:
        print("kafka-configs: --command-config is not supported here", file=err)
        return 1
    admin = admin_client({"bootstrap.servers": arguments.bootstrap_server})
    entries = [ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
               for name, _, value in (item.partition("=") for item in arguments.add_config.split(","))]
    resource = ConfigResource("topic", arguments.entity_name, incremental_configs=entries)
    try:
        admin.incremental_alter_configs([resource], request_timeout=30)[resource].result()
    except KafkaException as error:
        print(f"Error while executing config command : {error}", file=err)
        return 1
    print(f"Completed updating config for topic {arguments.entity_name}.", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
