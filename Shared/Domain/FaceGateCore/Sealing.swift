import Crypto
import Foundation

/// Seals data at rest (face templates, institution keys, registry names) with AES-256-GCM under the
/// platform sealing key. The associated data binds each sealed value to its purpose and row, so a
/// sealed value copied to another row or column fails to open.
public struct Sealer: Sendable {
    private let key: [UInt8]
    /// Keys rotated out (`FACEGATE_PREVIOUS_SEALING_KEYS`): still opened, never sealed with. `facegate reseal` moves
    /// what they sealed to the current key.
    private let previousKeys: [[UInt8]]

    public init(key: [UInt8], previous: [[UInt8]] = []) throws(SealingError) {
        guard key.count == 32, previous.allSatisfy({ $0.count == 32 }) else { throw .badKey }
        self.key = key
        self.previousKeys = previous
    }

    /// From the base64 value of `FACEGATE_SEALING_KEY`.
    public init(base64Key: String) throws(SealingError) {
        guard let data = Data(base64Encoded: base64Key) else { throw .badKey }
        try self.init(key: Array(data))
    }

    public func seal(_ plaintext: [UInt8], context: String) throws(SealingError) -> [UInt8] {
        do { return try AES256GCM.seal(key: key, plaintext: plaintext, authenticating: Array(context.utf8)) } catch { throw .sealFailed }
    }

    /// Opens a value sealed under the current key or a previous one.
    public func open(_ sealed: [UInt8], context: String) throws(SealingError) -> [UInt8] {
        for candidate in [key] + previousKeys {
            if let plaintext = try? AES256GCM.open(key: candidate, sealed: sealed, authenticating: Array(context.utf8)) { return plaintext }
        }
        throw .openFailed
    }

    /// The value sealed under the current key: nil when it already is, the new sealed value when a previous key
    /// sealed it; throws when no key opens it.
    public func resealed(_ sealed: [UInt8], context: String) throws(SealingError) -> [UInt8]? {
        if (try? AES256GCM.open(key: key, sealed: sealed, authenticating: Array(context.utf8))) != nil { return nil }
        return try seal(try open(sealed, context: context), context: context)
    }

    public func sealTemplate(_ embedding: [Float], templateId: UUID) throws(SealingError) -> [UInt8] {
        try seal(Self.bytes(of: embedding), context: Self.templateContext(templateId))
    }

    public func openTemplate(_ sealed: [UInt8], templateId: UUID) throws(SealingError) -> [Float] {
        let bytes = try open(sealed, context: Self.templateContext(templateId))
        guard bytes.count % 4 == 0 else { throw .openFailed }
        return Self.floats(from: bytes)
    }

    public static func templateContext(_ templateId: UUID) -> String { "facegate.template.v1:\(templateId.uuidString.lowercased())" }

    /// An enrollment photo kept for a model migration, bound to the template it was enrolled as.
    public func sealEnrollmentPhoto(_ photo: [UInt8], templateId: UUID) throws(SealingError) -> [UInt8] {
        try seal(photo, context: Self.enrollmentPhotoContext(templateId))
    }

    public func openEnrollmentPhoto(_ sealed: [UInt8], templateId: UUID) throws(SealingError) -> [UInt8] {
        try open(sealed, context: Self.enrollmentPhotoContext(templateId))
    }

    public static func enrollmentPhotoContext(_ templateId: UUID) -> String { "facegate.enrollment-photo.v1:\(templateId.uuidString.lowercased())" }

    /// The context of a CTID registry row's sealed name: its app and number hash.
    public static func registryNameContext(appId: UUID, numberHash: [UInt8]) -> String {
        "facegate.ctid-registry.name.v1:\(appId.uuidString.lowercased()):" + numberHash.map { String(format: "%02x", $0) }.joined()
    }

    /// Little-endian float32, the order every supported platform uses in memory.
    static func bytes(of floats: [Float]) -> [UInt8] {
        var out = [UInt8](); out.reserveCapacity(floats.count * 4)
        for value in floats { withUnsafeBytes(of: value.bitPattern.littleEndian) { out += $0 } }
        return out
    }

    static func floats(from bytes: [UInt8]) -> [Float] {
        stride(from: 0, to: bytes.count, by: 4).map { i in
            Float(bitPattern: UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24)
        }
    }
}

public enum SealingError: Error, Sendable, Equatable, CustomStringConvertible {
    case badKey, sealFailed, openFailed
    public var description: String {
        switch self {
        case .badKey: "the sealing key must be base64 of exactly 32 bytes"
        case .sealFailed: "sealing failed"
        case .openFailed: "a sealed value failed authentication (wrong key, or the value was altered or moved)"
        }
    }
}
