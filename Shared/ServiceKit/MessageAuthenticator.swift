import Crypto
import FaceGateCore
import Foundation
import KafkaClient
import Synchronization

/// The services' own keys: this service's Ed25519 signing key (`FACEGATE_SERVICE_KEY`, base64 of the
/// 32-byte seed) and the public keys of every service (`FACEGATE_SERVICE_PUBLIC_KEYS`,
/// `service=base64,service=base64,…`; a service may be listed with several keys while one is rotated in).
public struct ServiceKeys: Sendable {
    public struct Trusted: Sendable {
        public var service: String
        public var key: Ed25519PublicKey
    }

    public let service: String
    public let signingKey: Ed25519PrivateKey
    public let keyId: String
    /// By key id.
    public let trusted: [String: Trusted]

    public init(service: String, seed: [UInt8], publicKeys: String) throws(ConfigurationError) {
        self.service = service
        do {
            signingKey = try Ed25519PrivateKey(seed: seed)
        } catch {
            throw ConfigurationError(variable: "FACEGATE_SERVICE_KEY", problem: "must be base64 of a 32-byte Ed25519 seed")
        }
        keyId = Self.keyId(signingKey.publicKey)
        var trusted: [String: Trusted] = [:]
        for entry in publicKeys.split(separator: ",") {
            let parts = entry.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, let raw = Data(base64Encoded: parts[1]),
                  let key = try? Ed25519PublicKey(rawRepresentation: Array(raw)) else {
                throw ConfigurationError(variable: "FACEGATE_SERVICE_PUBLIC_KEYS", problem: "must be service=base64-public-key entries separated by commas")
            }
            trusted[Self.keyId(key)] = Trusted(service: parts[0], key: key)
        }
        guard trusted[keyId]?.service == service else {
            throw ConfigurationError(variable: "FACEGATE_SERVICE_PUBLIC_KEYS", problem: "does not list this service's own key for \(service)")
        }
        self.trusted = trusted
    }

    /// base64url of the first 12 bytes of the raw public key's SHA-256.
    public static func keyId(_ key: Ed25519PublicKey) -> String {
        Base64URL.encode(Array(SHA256.hash(key.rawRepresentation).prefix(12)))
    }

    /// Fresh keys for every service, as the environment a launcher hands out: each service's own seed
    /// and the shared public list (`facegate keys`, the test stacks).
    public static func generate(for services: [String]) -> (seeds: [String: String], publicKeys: String) {
        var seeds: [String: String] = [:]
        var publics: [String] = []
        for service in services {
            let key = Ed25519PrivateKey()
            seeds[service] = Data(key.seed).base64EncodedString()
            publics.append("\(service)=\(Data(key.publicKey.rawRepresentation).base64EncodedString())")
        }
        return (seeds, publics.joined(separator: ","))
    }

    public static let platformServices = ["auth-gateway", "matcher-worker", "ctid-verifier", "kiosk-orchestrator"]
}

/// Why a message was refused.
public struct MessageRejection: Error, CustomStringConvertible, Sendable {
    /// unsigned, unknown-key, bad-signature, producer-not-allowed, replayed, wrong-responder
    public var reason: String
    public var detail: String
    public var description: String { "\(reason): \(detail)" }
}

/// Every Kafka message between the services is signed with its producer's own key and checked by its
/// consumer before anything else happens: the signature covers the topic, the key and the value (so a
/// message cannot be moved to another topic or re-keyed), the signer must be one of the services allowed
/// to produce to that topic (`Topics.producers(of:)`), and the same signed message seen again at another
/// offset within `replayWindow` is a replay. A redelivery of the same offset (a rebalance, a restart) is not.
/// Refusals are counted (`facegate_messages_rejected_total{topic,reason}`) and never handled.
public final class MessageAuthenticator: Sendable {
    public static let keyIdHeader = "facegate-kid"
    public static let signatureHeader = "facegate-sig"

    public let keys: ServiceKeys
    private let topics: Topics
    private let replayWindow: Duration
    private let sightings = Mutex<[[UInt8]: Sighting]>([:])
    private let rejected: Counter
    private let redeliveries: Counter

    private struct Sighting {
        var topic: String
        var partition: Int32
        var offset: Int64
        var at: ContinuousClock.Instant
    }

    public init(keys: ServiceKeys, topics: Topics, metrics: MetricsRegistry, replayWindow: Duration = .seconds(600)) {
        self.keys = keys
        self.topics = topics
        self.replayWindow = replayWindow
        rejected = metrics.counter("facegate_messages_rejected_total", help: "Kafka messages refused before handling, by topic and reason")
        redeliveries = metrics.counter("facegate_messages_redelivered_total",
                                       help: "Messages this process saw again at the same offset (a rebalance or a consumer restart), by topic")
    }

    public func sign(_ record: KafkaRecord) -> KafkaRecord {
        var signed = record
        signed.headers.removeAll { $0.key == Self.keyIdHeader || $0.key == Self.signatureHeader }
        guard let signature = try? keys.signingKey.signature(for: Self.signedBytes(topic: record.topic, key: record.key, value: record.value)) else {
            // Ed25519 signing fails only when OpenSSL cannot allocate.
            fatalError("message signing failed")
        }
        signed.headers += [KafkaHeader(key: Self.keyIdHeader, value: Array(keys.keyId.utf8)), KafkaHeader(key: Self.signatureHeader, value: signature)]
        return signed
    }

    /// The service that produced `message`, or why it is refused (and counted).
    public func authenticate(_ message: KafkaMessage) -> Result<String, MessageRejection> {
        let result = check(message)
        if case .failure(let rejection) = result {
            rejected.increment(["topic": message.topic, "reason": rejection.reason])
        }
        return result
    }

    /// `authenticate`, and the producer must be `service` (a reply from the service the job went to).
    public func authenticate(_ message: KafkaMessage, from service: String) -> Result<String, MessageRejection> {
        switch authenticate(message) {
        case .success(let signer) where signer == service:
            return .success(signer)
        case .success(let signer):
            rejected.increment(["topic": message.topic, "reason": "wrong-responder"])
            return .failure(MessageRejection(reason: "wrong-responder", detail: "\(signer) answered a job sent to \(service)"))
        case .failure(let rejection):
            return .failure(rejection)
        }
    }

    private func check(_ message: KafkaMessage) -> Result<String, MessageRejection> {
        guard let keyId = message.header(Self.keyIdHeader).map({ String(decoding: $0, as: UTF8.self) }),
              let signature = message.header(Self.signatureHeader) else {
            return .failure(MessageRejection(reason: "unsigned", detail: "no \(Self.signatureHeader) header"))
        }
        guard let signer = keys.trusted[keyId] else {
            return .failure(MessageRejection(reason: "unknown-key", detail: "key id \(keyId) is not a service key"))
        }
        guard signer.key.isValidSignature(signature, for: Self.signedBytes(topic: message.topic, key: message.key, value: message.value)) else {
            return .failure(MessageRejection(reason: "bad-signature", detail: "signed by \(signer.service)'s key id, but not by that key"))
        }
        guard topics.producers(of: message.topic).contains(signer.service) else {
            return .failure(MessageRejection(reason: "producer-not-allowed", detail: "\(signer.service) may not produce to \(message.topic)"))
        }
        let now = ContinuousClock.now
        let fingerprint = Array(signature.prefix(32))
        let replayed = sightings.withLock { sightings -> Bool in
            if sightings.count > 100_000 { sightings = sightings.filter { now - $0.value.at < replayWindow } }
            if let first = sightings[fingerprint], now - first.at < replayWindow {
                let sameOffset = first.topic == message.topic && first.partition == message.partition && first.offset == message.offset
                if sameOffset { redeliveries.increment(["topic": message.topic]) }
                return !sameOffset
            }
            sightings[fingerprint] = Sighting(topic: message.topic, partition: message.partition, offset: message.offset, at: now)
            return false
        }
        if replayed {
            return .failure(MessageRejection(reason: "replayed", detail: "a message already seen at another offset"))
        }
        return .success(signer.service)
    }

    /// Length-prefixed topic, key and value under a version label.
    static func signedBytes(topic: String, key: [UInt8]?, value: [UInt8]) -> [UInt8] {
        var bytes = Array("facegate-message-v1".utf8)
        for part in [Array(topic.utf8), key ?? [], value] {
            withUnsafeBytes(of: UInt32(part.count).bigEndian) { bytes += $0 }
            bytes += part
        }
        return bytes
    }
}
