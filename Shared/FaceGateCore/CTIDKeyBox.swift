import Crypto
import Foundation

/// Institution keys sealed to the ctid-verifier's X25519 public key: the gateway seals a new app's
/// key once (and shows it once to the operator); only the verifier, holding the private key, opens it.
/// Layout: ephemeral public key (32) ‖ AES-256-GCM(nonce ‖ ciphertext ‖ tag) under
/// HKDF-SHA256(shared secret, salt = ephemeral ‖ recipient, info = "facegate.ctid-key.v1:" + appId).
public enum CTIDKeyBox {
    public static func seal(_ key: [UInt8], appId: UUID, to recipient: [UInt8]) throws -> [UInt8] {
        let recipientKey = try X25519PublicKey(rawRepresentation: recipient)
        let ephemeral = X25519PrivateKey()
        let secret = try ephemeral.sharedSecret(with: recipientKey)
        let boxKey = try derive(secret, ephemeral: ephemeral.publicKey.rawRepresentation, recipient: recipient, appId: appId)
        return ephemeral.publicKey.rawRepresentation + (try AES256GCM.seal(key: boxKey, plaintext: key, authenticating: context(appId)))
    }

    public static func open(_ box: [UInt8], appId: UUID, with privateKey: [UInt8]) throws -> [UInt8] {
        guard box.count > 32 else { throw SealingError.openFailed }
        let recipient = try X25519PrivateKey(rawRepresentation: privateKey)
        let ephemeral = Array(box.prefix(32))
        let secret = try recipient.sharedSecret(with: try X25519PublicKey(rawRepresentation: ephemeral))
        let boxKey = try derive(secret, ephemeral: ephemeral, recipient: recipient.publicKey.rawRepresentation, appId: appId)
        return try AES256GCM.open(key: boxKey, sealed: Array(box.dropFirst(32)), authenticating: context(appId))
    }

    private static func context(_ appId: UUID) -> [UInt8] { Array("facegate.ctid-key.v1:\(appId.uuidString.lowercased())".utf8) }

    private static func derive(_ secret: [UInt8], ephemeral: [UInt8], recipient: [UInt8], appId: UUID) throws -> [UInt8] {
        try HKDF.sha256(ikm: secret, salt: ephemeral + recipient, info: context(appId), length: 32)
    }
}
