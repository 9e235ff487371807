/// Header names of a dead-letter record.
public enum DeadLetterHeader {
    public static let originalTopic = "dlq.original.topic"
    public static let originalPartition = "dlq.original.partition"
    public static let originalOffset = "dlq.original.offset"
    public static let error = "dlq.error"
    public static let attempts = "dlq.attempts"
    /// Size in bytes and a digest (given by the caller) of the value, which the record does not keep.
    public static let valueBytes = "dlq.value.bytes"
    public static let valueDigest = "dlq.value.digest"
}

/// The record that parks `message` on `<topic>.dlq` after it failed `attempts` times: original key and
/// headers, where it came from and why it failed (numbers as decimal text) — and not the value, which for
/// job topics holds images and personal data: only its size and `valueDigest` (the caller's digest of it,
/// enough to match it against a log or a resend, not to read it). `error` ends up in the record: pass a
/// log-safe text, never personal data.
public func deadLetterRecord(for message: KafkaMessage, error: String, attempts: Int, valueDigest: String) -> KafkaRecord {
    var headers = message.headers.filter { !$0.key.hasPrefix("dlq.") }
    headers.append(KafkaHeader(key: DeadLetterHeader.originalTopic, value: message.topic))
    headers.append(KafkaHeader(key: DeadLetterHeader.originalPartition, value: String(message.partition)))
    headers.append(KafkaHeader(key: DeadLetterHeader.originalOffset, value: String(message.offset)))
    headers.append(KafkaHeader(key: DeadLetterHeader.error, value: error))
    headers.append(KafkaHeader(key: DeadLetterHeader.attempts, value: String(attempts)))
    headers.append(KafkaHeader(key: DeadLetterHeader.valueBytes, value: String(message.value.count)))
    headers.append(KafkaHeader(key: DeadLetterHeader.valueDigest, value: valueDigest))
    return KafkaRecord(topic: message.topic + ".dlq", key: message.key, value: [], headers: headers)
}
