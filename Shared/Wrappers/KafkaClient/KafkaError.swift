internal import CKafka

/// An error from librdkafka or from this wrapper, carrying librdkafka's `rd_kafka_resp_err_t` code.
///
/// `description` is safe to log: it names the error and carries librdkafka's text (broker addresses,
/// topic names), never message keys or payloads.
public struct KafkaError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The `rd_kafka_resp_err_t` value (negative: raised inside librdkafka; positive: returned by a broker).
    public var code: Int32
    /// librdkafka's symbolic name, e.g. `_TIMED_OUT`, `TOPIC_ALREADY_EXISTS`.
    public var name: String
    public var message: String
    /// Trying again later may succeed (broker down, leader moving, request timed out, queue full).
    public var isRetriable: Bool
    public var file: String
    public var line: Int

    public init(
        code: Int32, name: String, message: String, isRetriable: Bool,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.name = name
        self.message = message
        self.isRetriable = isRetriable
        self.file = file
        self.line = line
    }

    /// A request deadline passed, or librdkafka gave up waiting (local or broker-side timeout).
    public var isTimeout: Bool { Self.timeoutCodes.contains(code) }

    /// The client was closed (or a requester shut down) while the operation was pending.
    public var isClosed: Bool { code == RD_KAFKA_RESP_ERR__DESTROY.rawValue }

    public var description: String {
        "KafkaError \(name) (\(code))\(isRetriable ? " retriable" : ""): \(message)"
    }

    public var debugDescription: String { "\(description) [\(file):\(line)]" }

    /// A deadline passed before the operation completed.
    public static let timedOut = KafkaError(
        code: RD_KAFKA_RESP_ERR__TIMED_OUT.rawValue, name: "_TIMED_OUT",
        message: "deadline passed", isRetriable: true)

    /// The client was closed.
    public static let closed = KafkaError(
        code: RD_KAFKA_RESP_ERR__DESTROY.rawValue, name: "_DESTROY",
        message: "client is closed", isRetriable: false)

    /// The waiting task was cancelled.
    public static let cancelled = KafkaError(
        code: RD_KAFKA_RESP_ERR__INTR.rawValue, name: "_INTR",
        message: "operation cancelled", isRetriable: false)

    static let timeoutCodes: Set<Int32> = [
        RD_KAFKA_RESP_ERR__TIMED_OUT.rawValue,
        RD_KAFKA_RESP_ERR__MSG_TIMED_OUT.rawValue,
        RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE.rawValue,
        RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT.rawValue,
    ]

    static let retriableCodes: Set<Int32> = timeoutCodes.union([
        RD_KAFKA_RESP_ERR__TRANSPORT.rawValue,
        RD_KAFKA_RESP_ERR__RESOLVE.rawValue,
        RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN.rawValue,
        RD_KAFKA_RESP_ERR__QUEUE_FULL.rawValue,
        RD_KAFKA_RESP_ERR__WAIT_COORD.rawValue,
        RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION.rawValue,
        RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART.rawValue,
        RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE.rawValue,
        RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION.rawValue,
        RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION.rawValue,
        RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS.rawValue,
        RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE.rawValue,
        RD_KAFKA_RESP_ERR_NOT_COORDINATOR.rawValue,
        RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS.rawValue,
        RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND.rawValue,
        RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS.rawValue,
        RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR.rawValue,
        RD_KAFKA_RESP_ERR_FETCH_SESSION_ID_NOT_FOUND.rawValue,
        RD_KAFKA_RESP_ERR_OFFSET_NOT_AVAILABLE.rawValue,
        RD_KAFKA_RESP_ERR_PREFERRED_LEADER_NOT_AVAILABLE.rawValue,
        RD_KAFKA_RESP_ERR_THROTTLING_QUOTA_EXCEEDED.rawValue,
    ])
}

extension KafkaError {
    /// From a bare `rd_kafka_resp_err_t`, with optional extra detail (librdkafka's errstr).
    init(_ err: rd_kafka_resp_err_t, detail: String? = nil, file: String = #fileID, line: Int = #line) {
        let text = String(cString: rd_kafka_err2str(err))
        self.init(
            code: err.rawValue,
            name: String(cString: rd_kafka_err2name(err)),
            message: detail.map { $0.isEmpty ? text : "\(text): \($0)" } ?? text,
            isRetriable: Self.retriableCodes.contains(err.rawValue),
            file: file, line: line)
    }

    /// From an `rd_kafka_error_t`, which it destroys.
    init(consuming error: OpaquePointer, file: String = #fileID, line: Int = #line) {
        defer { rd_kafka_error_destroy(error) }
        let code = rd_kafka_error_code(error).rawValue
        self.init(
            code: code,
            name: String(cString: rd_kafka_error_name(error)),
            message: String(cString: rd_kafka_error_string(error)),
            isRetriable: rd_kafka_error_is_retriable(error) != 0 || Self.retriableCodes.contains(code),
            file: file, line: line)
    }

    static func invalidArgument(_ message: String, file: String = #fileID, line: Int = #line) -> KafkaError {
        KafkaError(
            code: RD_KAFKA_RESP_ERR__INVALID_ARG.rawValue, name: "_INVALID_ARG",
            message: message, isRetriable: false, file: file, line: line)
    }
}
