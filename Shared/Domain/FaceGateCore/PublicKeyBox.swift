import Crypto
import Foundation

/// Bytes sealed to the holder of an X25519 private key: ephemeral public key (32) ‖ AES-256-GCM(nonce ‖
/// ciphertext ‖ tag) under HKDF-SHA256(shared secret, salt = ephemeral ‖ recipient, info = context), with the
/// context also authenticated. The context names what the bytes are for, so a box cannot be replayed elsewhere.
public enum PublicKeyBox {
    public static let overhead = 32 + 12 + 16

    public static func seal(_ plaintext: [UInt8], to recipient: X25519PublicKey, context: [UInt8]) throws -> [UInt8] {
        let ephemeral = X25519PrivateKey()
        let secret = try ephemeral.sharedSecret(with: recipient)
        let key = try HKDF.sha256(ikm: secret, salt: ephemeral.publicKey.rawRepresentation + recipient.rawRepresentation, info: context, length: 32)
        return ephemeral.publicKey.rawRepresentation + (try AES256GCM.seal(key: key, plaintext: plaintext, authenticating: context))
    }

    public static func open(_ box: [UInt8], with recipient: X25519PrivateKey, context: [UInt8]) throws -> [UInt8] {
        guard box.count >= overhead else { throw SealingError.openFailed }
        let ephemeral = Array(box.prefix(32))
        let secret = try recipient.sharedSecret(with: try X25519PublicKey(rawRepresentation: ephemeral))
        let key = try HKDF.sha256(ikm: secret, salt: ephemeral + recipient.publicKey.rawRepresentation, info: context, length: 32)
        return try AES256GCM.open(key: key, sealed: Array(box.dropFirst(32)), authenticating: context)
    }
}
