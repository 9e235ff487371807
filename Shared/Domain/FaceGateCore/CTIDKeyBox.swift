import Crypto
import Foundation

/// Institution keys sealed to the ctid-verifier's X25519 public key: the gateway seals a new app's
/// key once (and shows it once to the operator); only the verifier, holding the private key, opens it.
/// A `PublicKeyBox` with the context "facegate.ctid-key.v1:" + appId.
public enum CTIDKeyBox {
    public static func seal(_ key: [UInt8], appId: UUID, to recipient: [UInt8]) throws -> [UInt8] {
        try PublicKeyBox.seal(key, to: try X25519PublicKey(rawRepresentation: recipient), context: context(appId))
    }

    public static func open(_ box: [UInt8], appId: UUID, with privateKey: [UInt8]) throws -> [UInt8] {
        try PublicKeyBox.open(box, with: try X25519PrivateKey(rawRepresentation: privateKey), context: context(appId))
    }

    private static func context(_ appId: UUID) -> [UInt8] { Array("facegate.ctid-key.v1:\(appId.uuidString.lowercased())".utf8) }
}
