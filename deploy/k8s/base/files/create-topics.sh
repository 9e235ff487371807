#!/bin/bash
# Creates FaceGate's Kafka topics with the partition counts of the runtime contract, then
# checks that every topic has exactly those partitions. Idempotent: existing topics are kept.
# Runs in the apache/kafka image (kafka-topics.sh, kafka-configs.sh); used by
# docker-compose.yml (init-topics) and by the Kubernetes Job kafka-topics
# (deploy/k8s/base/kafka-topics-job.yaml).
#
# Retention: job topics carry photos, portraits and document images, and their replies personal
# data; a job is answered within its deadline (10 s by default) or not at all, so these topics
# keep records 10 minutes (retention.ms=600000) in segments that roll every minute
# (segment.ms=60000: retention removes whole closed segments only). The broker deletes expired
# segments at its next retention check (log.retention.check.interval.ms, 5 min by default) plus
# file.delete.delay.ms (1 min). These two settings are applied to existing topics too
# (kafka-configs.sh --alter), and checked afterwards. Dead-letter topics keep the broker's
# default retention: a dead letter holds the original key, headers, topic, partition, offset and
# the error, never the value (only its size and SHA-256 in dlq.value.bytes / dlq.value.digest).
#
#   KAFKA_BOOTSTRAP       host:port[,host:port]   (required)
#   TOPIC_PREFIX          prepended to every name, like FACEGATE_TOPIC_PREFIX (default empty)
#   REPLICATION_FACTOR    1 for a single broker, 3 in production (default 3)
#   MIN_INSYNC_REPLICAS   (default: 2 when REPLICATION_FACTOR >= 3, else 1)
#   MAX_MESSAGE_BYTES     per-topic max.message.bytes for topics carrying images (default 10485760)
#   KAFKA_TOPICS          path of kafka-topics.sh (default /opt/kafka/bin/kafka-topics.sh)
#   KAFKA_CONFIGS         path of kafka-configs.sh (default /opt/kafka/bin/kafka-configs.sh)
#   COMMAND_CONFIG        optional client properties file (TLS/SASL) passed as --command-config
#
# A topic that already exists with other partition counts is reported and the script fails:
# adding partitions to a keyed topic moves keys between partitions (kiosk commands would lose
# their per-session order), so that change is an operator's decision, never automatic.
set -euo pipefail

: "${KAFKA_BOOTSTRAP:?KAFKA_BOOTSTRAP is required (host:port of a broker)}"
prefix="${TOPIC_PREFIX:-}"
replication="${REPLICATION_FACTOR:-3}"
if [[ "${replication}" -ge 3 ]]; then default_isr=2; else default_isr=1; fi
min_isr="${MIN_INSYNC_REPLICAS:-${default_isr}}"
max_message_bytes="${MAX_MESSAGE_BYTES:-10485760}"
kafka_topics="${KAFKA_TOPICS:-/opt/kafka/bin/kafka-topics.sh}"
kafka_configs="${KAFKA_CONFIGS:-/opt/kafka/bin/kafka-configs.sh}"
client_args=(--bootstrap-server "${KAFKA_BOOTSTRAP}")
if [[ -n "${COMMAND_CONFIG:-}" ]]; then client_args+=(--command-config "${COMMAND_CONFIG}"); fi

# name                           partitions  extra topic configs (comma separated, "-" for none)
# Job and reply topics carry images, hence max.message.bytes on them, and are kept minutes only.
topics="
face.jobs.v1                      12  max.message.bytes=@MAX@,retention.ms=600000,segment.ms=60000
ctid.jobs.v1                       6  max.message.bytes=@MAX@,retention.ms=600000,segment.ms=60000
kiosk.commands.v1                  6  max.message.bytes=@MAX@,retention.ms=600000,segment.ms=60000
replies.auth-gateway.v1           16  max.message.bytes=@MAX@,retention.ms=600000,segment.ms=60000
replies.ctid-verifier.v1          16  max.message.bytes=@MAX@,retention.ms=600000,segment.ms=60000
replies.kiosk-orchestrator.v1     16  max.message.bytes=@MAX@,retention.ms=600000,segment.ms=60000
gallery.changes.v1                 6  cleanup.policy=compact
kiosk.events.v1                    6  -
audit.transactions.v1              6  -
face.jobs.v1.dlq                   1  max.message.bytes=@MAX@
ctid.jobs.v1.dlq                   1  max.message.bytes=@MAX@
kiosk.commands.v1.dlq              1  max.message.bytes=@MAX@
"

failures=0
while read -r name partitions configs; do
  [[ -z "${name}" ]] && continue
  topic="${prefix}${name}"
  args=(--create --if-not-exists --topic "${topic}" --partitions "${partitions}"
        --replication-factor "${replication}" --config "min.insync.replicas=${min_isr}")
  extra=()
  retention=()
  if [[ "${configs}" != "-" ]]; then
    IFS=',' read -r -a extra <<< "${configs//@MAX@/${max_message_bytes}}"
    for config in "${extra[@]}"; do
      args+=(--config "${config}")
      case "${config}" in retention.ms=*|segment.ms=*) retention+=("${config}") ;; esac
    done
  fi
  "${kafka_topics}" "${client_args[@]}" "${args[@]}" > /dev/null
  # --if-not-exists leaves an existing topic's settings alone: bring its retention to the table's.
  if [[ ${#retention[@]} -gt 0 ]]; then
    "${kafka_configs}" "${client_args[@]}" --entity-type topics --entity-name "${topic}" \
      --alter --add-config "$(IFS=','; echo "${retention[*]}")" > /dev/null
  fi

  description="$("${kafka_topics}" "${client_args[@]}" --describe --topic "${topic}")"
  actual="$(sed -n 's/.*PartitionCount:[[:space:]]*\([0-9][0-9]*\).*/\1/p' <<< "${description}" | head -n 1)"
  # The topic's own settings: "Configs: key=value,key=value" on the first line.
  own_configs=",$(head -n 1 <<< "${description}" | sed -n 's/.*Configs:[[:space:]]*//p' | tr -d '[:space:]'),"
  if [[ "${actual}" == "${partitions}" ]]; then
    echo "topic ${topic}: ${actual} partitions${retention:+, ${retention[*]}}"
  else
    echo "topic ${topic}: has ${actual:-no} partitions, the contract says ${partitions}" >&2
    failures=$((failures + 1))
  fi
  for config in "${retention[@]}"; do
    if [[ "${own_configs}" != *",${config},"* ]]; then
      echo "topic ${topic}: ${config} is not set on the topic" >&2
      failures=$((failures + 1))
    fi
  done
done <<< "${topics}"

if [[ "${failures}" -gt 0 ]]; then
  echo "${failures} topic(s) differ from the contract" >&2
  exit 1
fi
