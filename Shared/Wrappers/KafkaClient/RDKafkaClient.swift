internal import CKafka
import Foundation
import Synchronization

/// State that librdkafka's callbacks reach through the configuration opaque. It outlives the
/// `rd_kafka_t` because the owning `RDKafkaClient` keeps it until after `rd_kafka_destroy` returns.
final class RDKafkaClientContext: Sendable {
    let configuration: KafkaConfiguration
    /// Partitions currently assigned (consumers); updated by the rebalance callback and by `assign`.
    let assignment = Mutex<[KafkaTopicPartition]>([])
    /// Counts the assignment's changes, so that what a consumer remembers of its partitions' offsets starts afresh.
    let assignmentChanges = Atomic<Int>(0)

    init(configuration: KafkaConfiguration) {
        self.configuration = configuration
    }

    func refreshAssignment(_ handle: OpaquePointer) {
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        guard rd_kafka_assignment(handle, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return }
        let partitions = RDKafkaTopicPartitionList(adopting: list).elements.map {
            KafkaTopicPartition(topic: $0.topic, partition: $0.partition)
        }
        assignment.withLock { $0 = partitions }
        assignmentChanges.add(1, ordering: .releasing)
    }
}

/// Owns one `rd_kafka_t`. librdkafka handles are thread-safe; the handle is destroyed exactly once,
/// in `deinit`, after every user (which holds a strong reference) has finished with it.
final class RDKafkaClient: @unchecked Sendable {  // immutable handle to a thread-safe C object
    enum Kind { case producer, consumer }

    let handle: OpaquePointer
    let context: RDKafkaClientContext
    let name: String
    /// Set to `RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE` to drop a consumer without leaving its group.
    let destroyFlags = Atomic<Int32>(0)

    init(kind: Kind, properties: [String: String], context: RDKafkaClientContext,
         configure: (OpaquePointer) -> Void = { _ in }) throws(KafkaError) {
        // One configuration serves every client of a process; each kind would warn about the other's settings.
        var properties = properties
        let otherKindsProperties = kind == .producer
            ? ["fetch.wait.max.ms"] : ["enable.idempotence", "acks", "max.in.flight.requests.per.connection"]
        for name in otherKindsProperties { properties[name] = nil }
        let config = try RDKafkaConfig(properties: properties)
        try config.withPointer { conf throws(KafkaError) in
            rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(context).toOpaque())
            if context.configuration.logHandler != nil {
                rd_kafka_conf_set_log_cb(conf, rdkafkaLogCallback)
            }
            configure(conf)
        }
        var errstr = [CChar](repeating: 0, count: 512)
        let type = kind == .producer ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER
        guard let handle = config.consume({ rd_kafka_new(type, $0, &errstr, errstr.count) }) else {
            throw KafkaError.invalidArgument("cannot create client: \(cErrorText(errstr))")
        }
        self.handle = handle
        self.context = context
        self.name = String(cString: rd_kafka_name(handle))
    }

    deinit {
        rd_kafka_destroy_flags(handle, destroyFlags.load(ordering: .acquiring))
    }

    func report(level: Int32, facility: String, message: String) {
        context.configuration.report(level: level, facility: facility, message: message, clientName: name)
    }
}

/// A borrowed or owned `rd_kafka_topic_partition_list_t`.
final class RDKafkaTopicPartitionList {
    struct Element {
        var topic: String
        var partition: Int32
        var offset: Int64
        var error: rd_kafka_resp_err_t
    }

    let pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>
    private let owned: Bool

    init(capacity: Int = 1) {
        pointer = rd_kafka_topic_partition_list_new(Int32(capacity))
        owned = true
    }

    init(adopting pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) {
        self.pointer = pointer
        owned = true
    }

    init(borrowing pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) {
        self.pointer = pointer
        owned = false
    }

    deinit {
        if owned { rd_kafka_topic_partition_list_destroy(pointer) }
    }

    func add(topic: String, partition: Int32, offset: Int64) {
        let element = rd_kafka_topic_partition_list_add(pointer, topic, partition)
        element?.pointee.offset = offset
    }

    var elements: [Element] {
        let list = pointer.pointee
        guard list.cnt > 0, let elems = list.elems else { return [] }
        return (0..<Int(list.cnt)).map { index in
            let element = elems[index]
            return Element(
                topic: String(cString: element.topic), partition: element.partition,
                offset: element.offset, error: element.err)
        }
    }
}

extension KafkaOffset {
    var rawOffset: Int64 {
        switch self {
        case .beginning: Int64(RD_KAFKA_OFFSET_BEGINNING)
        case .end: Int64(RD_KAFKA_OFFSET_END)
        case .stored: Int64(RD_KAFKA_OFFSET_STORED)
        case .exact(let offset): offset
        }
    }
}

extension KafkaMessage {
    /// Copies a consumed `rd_kafka_message_t` (whose `err` is NO_ERROR) into Swift values.
    init(copying message: UnsafePointer<rd_kafka_message_t>) {
        let raw = message.pointee
        let topic = raw.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? ""
        let value = raw.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: raw.len)) } ?? []
        let key = raw.key.map { Array(UnsafeRawBufferPointer(start: $0, count: raw.key_len)) }

        var headers: [KafkaHeader] = []
        var list: OpaquePointer?
        if rd_kafka_message_headers(message, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list {
            var index = 0
            var name: UnsafePointer<CChar>?
            var bytes: UnsafeRawPointer?
            var size = 0
            while rd_kafka_header_get_all(list, index, &name, &bytes, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                let headerValue = bytes.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []
                headers.append(KafkaHeader(key: name.map { String(cString: $0) } ?? "", value: headerValue))
                index += 1
            }
        }

        var timestampType = rd_kafka_timestamp_type_t(rawValue: 0)
        let milliseconds = rd_kafka_message_timestamp(message, &timestampType)
        let timestamp = milliseconds >= 0 ? Date(timeIntervalSince1970: Double(milliseconds) / 1000) : nil

        self.init(
            topic: topic, partition: raw.partition, offset: raw.offset, key: key, value: value,
            headers: headers, timestamp: timestamp)
    }
}

/// Runs a blocking call on a thread of its own so the cooperative pool never waits on librdkafka.
func runOnDedicatedThread<T: Sendable, E: Error>(
    name: String, _ body: @escaping @Sendable () throws(E) -> T
) async throws(E) -> T {
    let result: Result<T, E> = await withCheckedContinuation { continuation in
        let thread = Thread {
            continuation.resume(returning: Result { () throws(E) -> T in try body() })
        }
        thread.name = name
        thread.start()
    }
    return try result.get()
}

func librdkafkaVersionString() -> String {
    String(cString: rd_kafka_version_str())
}
