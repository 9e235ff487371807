import Foundation

/// Where a worker sends its answer: one partition of the requester's reply topic.
public struct ReplyTo: Codable, Sendable, Equatable {
    public var topic: String
    public var partition: Int32
    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }
}

/// The versioned envelope around every Kafka message body. `id` is the deduplication key;
/// `correlationId` ties a reply to its request; a job past `deadline` is answered `TIMEOUT` without work.
/// The W3C `traceparent` travels as a Kafka header, not in the body.
public struct MessageEnvelope<Payload: Codable & Sendable>: Codable, Sendable {
    public static var currentVersion: Int { 1 }

    public var type: String
    public var version: Int
    public var id: String
    public var correlationId: String
    public var appId: String?
    public var createdAt: Date
    public var deadline: Date
    public var replyTo: ReplyTo?
    public var payload: Payload

    public init(type: String, id: String = UUID().uuidString.lowercased(), correlationId: String, appId: String?,
                createdAt: Date = Date(), deadline: Date, replyTo: ReplyTo?, payload: Payload) {
        self.type = type
        self.version = Self.currentVersion
        self.id = id
        self.correlationId = correlationId
        self.appId = appId
        self.createdAt = createdAt
        self.deadline = deadline
        self.replyTo = replyTo
        self.payload = payload
    }

    public func encoded() throws -> [UInt8] { try FaceGateJSON.encode(self) }

    /// Decodes an envelope and checks what every consumer must check; a body that fails here is
    /// a broken envelope (dead-lettered, never retried).
    public static func decode(_ bytes: [UInt8], expectingType type: String? = nil) throws(EnvelopeError) -> Self {
        let envelope: Self
        do {
            envelope = try FaceGateJSON.decode(Self.self, from: bytes)
        } catch {
            throw EnvelopeError.malformed(String(describing: error).prefix(300).description)
        }
        guard envelope.version == Self.currentVersion else { throw .unsupportedVersion(envelope.version) }
        if let type, envelope.type != type { throw .unexpectedType(envelope.type) }
        return envelope
    }

    public func isExpired(now: Date = Date()) -> Bool { now > deadline }
}

public enum EnvelopeError: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed(String)
    case unsupportedVersion(Int)
    case unexpectedType(String)

    public var description: String {
        switch self {
        case .malformed(let detail): "malformed envelope: \(detail)"
        case .unsupportedVersion(let version): "unsupported envelope version \(version)"
        case .unexpectedType(let type): "unexpected message type \(type)"
        }
    }
}

/// Header names shared by every producer and consumer.
public enum MessageHeader {
    public static let traceparent = "traceparent"
    public static let messageType = "facegate-type"
}

