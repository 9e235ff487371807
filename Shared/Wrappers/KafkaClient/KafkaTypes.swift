import Foundation

/// A Kafka record header. Keys may repeat within a record.
public struct KafkaHeader: Sendable, Equatable {
    public var key: String
    public var value: [UInt8]

    public init(key: String, value: [UInt8]) {
        self.key = key
        self.value = value
    }

    public init(key: String, value: String) {
        self.init(key: key, value: Array(value.utf8))
    }
}

/// A record to produce.
public struct KafkaRecord: Sendable {
    public var topic: String
    /// `nil`: partition chosen by the partitioner from the key.
    public var partition: Int32?
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]

    public init(topic: String, partition: Int32? = nil, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = []) {
        self.topic = topic
        self.partition = partition
        self.key = key
        self.value = value
        self.headers = headers
    }
}

/// A consumed record.
public struct KafkaMessage: Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// Producer create time (or broker append time), when the broker reports one.
    public var timestamp: Date?

    public init(
        topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8],
        headers: [KafkaHeader] = [], timestamp: Date? = nil
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp
    }

    /// The value of the first header named `key`.
    public func header(_ key: String) -> [UInt8]? {
        headers.first { $0.key == key }?.value
    }

    /// The key as UTF-8 text, if there is a key.
    public var keyString: String? {
        key.map { String(decoding: $0, as: UTF8.self) }
    }
}

/// Where a consumer starts reading a partition.
public enum KafkaOffset: Sendable, Equatable {
    case beginning
    case end
    /// The group's committed offset (requires a group id).
    case stored
    case exact(Int64)
}

public struct KafkaTopicPartition: Sendable, Hashable {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }
}

/// The librdkafka loaded at run time (which may be newer than the headers built against).
public enum KafkaLibrary {
    public static var version: String { librdkafkaVersionString() }
}
