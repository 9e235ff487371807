internal import CKafka

/// Owns an `rd_kafka_conf_t` until `rd_kafka_new` takes it (it does so only on success).
final class RDKafkaConfig {
    private var pointer: OpaquePointer?

    init(properties: [String: String]) throws(KafkaError) {
        pointer = rd_kafka_conf_new()
        // Sorted so a bad property is reported deterministically.
        for (key, value) in properties.sorted(by: { $0.key < $1.key }) {
            try set(key, value)
        }
    }

    deinit {
        if let pointer { rd_kafka_conf_destroy(pointer) }
    }

    func set(_ key: String, _ value: String) throws(KafkaError) {
        guard let pointer else { preconditionFailure("configuration already handed to librdkafka") }
        var errstr = [CChar](repeating: 0, count: 512)
        let result = rd_kafka_conf_set(pointer, key, value, &errstr, errstr.count)
        guard result == RD_KAFKA_CONF_OK else {
            throw KafkaError.invalidArgument("property \(key): \(cErrorText(errstr))")
        }
    }

    /// Lends the pointer for `rd_kafka_conf_set_*` calls.
    func withPointer<T>(_ body: (OpaquePointer) throws(KafkaError) -> T) throws(KafkaError) -> T {
        guard let pointer else { preconditionFailure("configuration already handed to librdkafka") }
        return try body(pointer)
    }

    /// Hands the configuration to `rd_kafka_new`; on success librdkafka owns it, on failure it stays ours.
    func consume<T>(_ body: (OpaquePointer) -> T?) -> T? {
        guard let pointer else { preconditionFailure("configuration already handed to librdkafka") }
        let result = body(pointer)
        if result != nil { self.pointer = nil }
        return result
    }
}

/// Text of an `errstr` buffer that librdkafka filled with a NUL-terminated message.
func cErrorText(_ buffer: [CChar]) -> String {
    let end = buffer.firstIndex(of: 0) ?? buffer.endIndex
    return String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
