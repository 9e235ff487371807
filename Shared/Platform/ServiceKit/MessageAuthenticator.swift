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
        /// The same key in its X25519 form, which job messages to this service are sealed to.
        public var agreementKey: X25519PublicKey
    }

    public let service: String
    public let signingKey: Ed25519PrivateKey
    public let keyId: String
    /// By key id.
    public let trusted: [String: Trusted]
    /// The X25519 form of `signingKey`, which opens the job messages sealed to this service.
    public let agreementKey: X25519PrivateKey

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
                  let key = try? Ed25519PublicKey(rawRepresentation: Array(raw)), let agreementKey = try? key.agreementKey else {
                throw ConfigurationError(variable: "FACEGATE_SERVICE_PUBLIC_KEYS", problem: "must be service=base64-public-key entries separated by commas")
            }
            trusted[Self.keyId(key)] = Trusted(service: parts[0], key: key, agreementKey: agreementKey)
        }
        guard trusted[keyId]?.service == service else {
            throw ConfigurationError(variable: "FACEGATE_SERVICE_PUBLIC_KEYS", problem: "does not list this service's own key for \(service)")
        }
        // Job messages are sealed to the services that consume them: each must be listed.
        for consumer in ["matcher-worker", "ctid-verifier", "kiosk-orchestrator"] where !trusted.values.contains(where: { $0.service == consumer }) {
            throw ConfigurationError(variable: "FACEGATE_SERVICE_PUBLIC_KEYS", problem: "lists no key for \(consumer), so jobs to it could not be sealed")
        }
        self.trusted = trusted
        agreementKey = signingKey.agreementKey
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
    /// unsigned, unknown-key, bad-signature, producer-not-allowed, replayed, wrong-responder, unsealed, unreadable, undecodable
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

    /// Seals a job or reply topic's value to the one service that reads it (`Topics.reader(of:)`, `MessageBox`), then signs the record.
    public func sign(_ record: KafkaRecord) -> KafkaRecord {
        var signed = record
        if let reader = topics.reader(of: record.topic), !MessageBox.isSealed(record.value) {
            let recipients = keys.trusted.filter { $0.value.service == reader }.map { (keyId: $0.key, key: $0.value.agreementKey) }
            guard let sealed = try? MessageBox.seal(record.value, topic: record.topic, to: recipients) else {
                fatalError("message sealing failed")  // X25519 and AES-GCM fail only when OpenSSL cannot allocate
            }
            signed.value = sealed
        }
        signed.headers.removeAll { $0.key == Self.keyIdHeader || $0.key == Self.signatureHeader }
        guard let signature = try? keys.signingKey.signature(for: Self.signedBytes(topic: signed.topic, key: signed.key, value: signed.value)) else {
            // Ed25519 signing fails only when OpenSSL cannot allocate.
            fatalError("message signing failed")
        }
        signed.headers += [KafkaHeader(key: Self.keyIdHeader, value: Array(keys.keyId.utf8)), KafkaHeader(key: Self.signatureHeader, value: signature)]
        return signed
    }

    /// The plaintext of an authenticated message: a job topic's value opened with this service's key, any other
    /// topic's value as it is. A job that is not sealed, or not to this service's current key, is refused (and counted).
    public func open(_ message: KafkaMessage) -> Result<[UInt8], MessageRejection> {
        guard topics.reader(of: message.topic) != nil else { return .success(message.value) }
        let result: Result<[UInt8], MessageRejection>
        if !MessageBox.isSealed(message.value) {
            result = .failure(MessageRejection(reason: "unsealed", detail: "a message on \(message.topic) must be sealed to its reader"))
        } else if let plaintext = try? MessageBox.open(message.value, topic: message.topic, keyId: keys.keyId, key: keys.agreementKey) {
            result = .success(plaintext)
        } else {
            result = .failure(MessageRejection(reason: "unreadable", detail: "not sealed to this service's key \(keys.keyId)"))
        }
        if case .failure(let rejection) = result { rejected.increment(["topic": message.topic, "reason": rejection.reason]) }
        return result
    }

    /// Counts `message` as refused after it was authenticated and opened (a reply that is not of its job's reply type).
    public func countRejected(_ message: KafkaMessage, reason: String) {
        rejected.increment(["topic": message.topic, "reason": reason])
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

/// The value of a job message, sealed to every key its consuming service is listed with (one, or two while a key
/// is rotated in), so a reader of the broker, its disks or its dead-letter topics sees no
/// photo, portrait or document data. Layout: "FGBOX1" ‖ recipient count (1 byte) ‖ per recipient: key id (the
/// UTF-8 of `ServiceKeys.keyId`, 16 bytes) ‖ `PublicKeyBox` of a fresh AES-256 content key (92 bytes), then
/// AES-256-GCM(nonce ‖ ciphertext ‖ tag) of the value under the content key. Both layers authenticate
/// "facegate.message-box.v1:" + topic, so a sealed value is bound to its topic as the signature is.
enum MessageBox {
    static let magic = Array("FGBOX1".utf8)
    static let keyIdSize = 16
    static let entrySize = keyIdSize + PublicKeyBox.overhead + 32

    static func isSealed(_ value: [UInt8]) -> Bool { value.starts(with: magic) }

    static func seal(_ value: [UInt8], topic: String, to recipients: [(keyId: String, key: X25519PublicKey)]) throws -> [UInt8] {
        precondition(!recipients.isEmpty && recipients.count < 256 && recipients.allSatisfy { $0.keyId.utf8.count == keyIdSize })
        let context = Array("facegate.message-box.v1:\(topic)".utf8)
        let contentKey = SecureRandom.bytes(32)
        var box = magic + [UInt8(recipients.count)]
        for recipient in recipients.sorted(by: { $0.keyId < $1.keyId }) {
            box += Array(recipient.keyId.utf8) + (try PublicKeyBox.seal(contentKey, to: recipient.key, context: context))
        }
        return box + (try AES256GCM.seal(key: contentKey, plaintext: value, authenticating: context))
    }

    static func open(_ box: [UInt8], topic: String, keyId: String, key: X25519PrivateKey) throws -> [UInt8] {
        let context = Array("facegate.message-box.v1:\(topic)".utf8)
        guard isSealed(box), box.count > magic.count else { throw SealingError.openFailed }
        let count = Int(box[magic.count])
        let entries = magic.count + 1
        guard count > 0, box.count > entries + count * entrySize else { throw SealingError.openFailed }
        for index in 0..<count {
            let entry = Array(box[(entries + index * entrySize)..<(entries + (index + 1) * entrySize)])
            guard entry.prefix(keyIdSize).elementsEqual(keyId.utf8) else { continue }
            let contentKey = try PublicKeyBox.open(Array(entry.dropFirst(keyIdSize)), with: key, context: context)
            return try AES256GCM.open(key: contentKey, sealed: Array(box.dropFirst(entries + count * entrySize)), authenticating: context)
        }
        throw SealingError.openFailed
    }
}
