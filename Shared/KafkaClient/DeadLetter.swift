/// Header names of a dead-letter record.
public enum DeadLetterHeader {
    public static let originalTopic = "dlq.original.topic"
    public static let originalPartition = "dlq.original.partition"
    public static let originalOffset = "dlq.original.offset"
    public static let error = "dlq.error"
    public static let attempts = "dlq.attempts"
}

/// The record that parks `message` on `<topic>.dlq` after it failed `attempts` times: original key,
/// value and headers, plus where it came from and why it failed (numbers as decimal text).
/// `error` ends up in the record: pass a log-safe text, never personal data.
public func deadLetterRecord(for message: KafkaMessage, error: String, attempts: Int) -> KafkaRecord {
    var headers = message.headers.filter { !$0.key.hasPrefix("dlq.") }
    headers.append(KafkaHeader(key: DeadLetterHeader.originalTopic, value: message.topic))
    headers.append(KafkaHeader(key: DeadLetterHeader.originalPartition, value: String(message.partition)))
    headers.append(KafkaHeader(key: DeadLetterHeader.originalOffset, value: String(message.offset)))
    headers.append(KafkaHeader(key: DeadLetterHeader.error, value: error))
    headers.append(KafkaHeader(key: DeadLetterHeader.attempts, value: String(attempts)))
    return KafkaRecord(topic: message.topic + ".dlq", key: message.key, value: message.value, headers: headers)
}
