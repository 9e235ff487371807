import Crypto
import Foundation

/// Seals data at rest (face templates, institution keys, registry names) with AES-256-GCM under the
/// platform sealing key. The associated data binds each sealed value to its purpose and row, so a
/// sealed value copied to another row or column fails to open.
public struct Sealer: Sendable {
    private let key: [UInt8]

    public init(key: [UInt8]) throws(SealingError) {
        guard key.count == 32 else { throw .badKey }
        self.key = key
    }

    /// From the base64 value of `FACEGATE_SEALING_KEY`.
    public init(base64Key: String) throws(SealingError) {
        guard let data = Data(base64Encoded: base64Key) else { throw .badKey }
        try self.init(key: Array(data))
    }

    public func seal(_ plaintext: [UInt8], context: String) throws(SealingError) -> [UInt8] {
        do { return try AES256GCM.seal(key: key, plaintext: plaintext, authenticating: Array(context.utf8)) } catch { throw .sealFailed }
    }

    public func open(_ sealed: [UInt8], context: String) throws(SealingError) -> [UInt8] {
        do { return try AES256GCM.open(key: key, sealed: sealed, authenticating: Array(context.utf8)) } catch { throw .openFailed }
    }

    public func sealTemplate(_ embedding: [Float], templateId: UUID) throws(SealingError) -> [UInt8] {
        try seal(Self.bytes(of: embedding), context: "facegate.template.v1:\(templateId.uuidString.lowercased())")
    }

    public func openTemplate(_ sealed: [UInt8], templateId: UUID) throws(SealingError) -> [Float] {
        let bytes = try open(sealed, context: "facegate.template.v1:\(templateId.uuidString.lowercased())")
        guard bytes.count % 4 == 0 else { throw .openFailed }
        return Self.floats(from: bytes)
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
