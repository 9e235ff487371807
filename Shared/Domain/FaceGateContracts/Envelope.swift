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

    /// The message's bytes: plain JSON, or, when it holds binary fields (photos, liveness frames, sealed templates),
    /// an `EnvelopeFrame` carrying them as bytes beside the JSON instead of as base64 inside it.
    public func encoded() throws -> [UInt8] {
        let attachments = EnvelopeFrame.Attachments()
        let encoder = FaceGateJSON.encoder()
        encoder.dataEncodingStrategy = .custom { data, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(attachments.add(data))
        }
        let json = try encoder.encode(self)
        return attachments.parts.isEmpty ? Array(json) : EnvelopeFrame.frame(json: json, attachments: attachments.parts)
    }

    /// Decodes an envelope (a frame, or plain JSON with binary fields as base64) and checks what every consumer must
    /// check; a body that fails here is a broken envelope (dead-lettered, never retried).
    public static func decode(_ bytes: [UInt8], expectingType type: String? = nil) throws(EnvelopeError) -> Self {
        let envelope: Self
        do {
            if let (json, attachments) = try EnvelopeFrame.unframe(bytes) {
                let decoder = FaceGateJSON.decoder()
                decoder.dataDecodingStrategy = .custom { decoder in
                    let container = try decoder.singleValueContainer()
                    let index = try container.decode(Int.self)
                    guard attachments.indices.contains(index) else {
                        throw DecodingError.dataCorruptedError(in: container, debugDescription: "no attachment \(index) in the frame")
                    }
                    return attachments[index]
                }
                envelope = try decoder.decode(Self.self, from: json)
            } else {
                envelope = try FaceGateJSON.decode(Self.self, from: bytes)
            }
        } catch {
            throw EnvelopeError.malformed(String(describing: error).prefix(300).description)
        }
        guard envelope.version == Self.currentVersion else { throw .unsupportedVersion(envelope.version) }
        if let type, envelope.type != type { throw .unexpectedType(envelope.type) }
        return envelope
    }

    public func isExpired(now: Date = Date()) -> Bool { now > deadline }
}

/// How a message with binary fields travels: `FGB1`, the number of attachments (UInt32, big-endian), the JSON's length
/// (UInt32) and the JSON, in which each `Data` field is the index of its attachment, then each attachment's length
/// (UInt32) and bytes. A 180 KB photo then costs 180 KB on the broker and no base64 either way, where inside the JSON
/// it cost 240 KB.
public enum EnvelopeFrame {
    static let magic: [UInt8] = Array("FGB1".utf8)
    /// More attachments than any message holds (a liveness burst is at most a few dozen frames).
    static let maximumAttachments = 4096

    /// Filled by one `encoded()` call on its own thread, which is what makes it safe to capture in the encoder's strategy.
    final class Attachments: @unchecked Sendable {
        private(set) var parts: [Data] = []
        func add(_ data: Data) -> Int {
            parts.append(data)
            return parts.count - 1
        }
    }

    static func frame(json: Data, attachments: [Data]) -> [UInt8] {
        var out = magic
        out.reserveCapacity(magic.count + 8 + json.count + attachments.reduce(0) { $0 + 4 + $1.count })
        func append(_ length: Int) { withUnsafeBytes(of: UInt32(length).bigEndian) { out.append(contentsOf: $0) } }
        append(attachments.count)
        append(json.count)
        out.append(contentsOf: json)
        for attachment in attachments {
            append(attachment.count)
            out.append(contentsOf: attachment)
        }
        return out
    }

    struct Broken: Error, CustomStringConvertible {
        var description: String
    }

    /// The JSON and attachments of a frame; nil when `bytes` is no frame (plain JSON).
    static func unframe(_ bytes: [UInt8]) throws -> (json: Data, attachments: [Data])? {
        guard bytes.starts(with: magic) else { return nil }
        var position = magic.count
        func length() throws -> Int {
            guard bytes.count - position >= 4 else { throw Broken(description: "frame ends inside a length") }
            let value = bytes[position..<position + 4].reduce(0) { $0 << 8 | Int($1) }
            position += 4
            return value
        }
        func slice(_ count: Int) throws -> Data {
            guard bytes.count - position >= count else { throw Broken(description: "frame ends inside a part of \(count) bytes") }
            defer { position += count }
            return Data(bytes[position..<position + count])
        }
        let count = try length()
        guard count <= maximumAttachments else { throw Broken(description: "frame claims \(count) attachments") }
        let json = try slice(try length())
        var attachments: [Data] = []
        for _ in 0..<count { attachments.append(try slice(try length())) }
        guard position == bytes.count else { throw Broken(description: "\(bytes.count - position) bytes after the frame's last part") }
        return (json, attachments)
    }
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

