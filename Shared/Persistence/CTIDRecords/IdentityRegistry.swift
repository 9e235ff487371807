import Crypto
import FaceGateCore
import Foundation
import PostgresClient

/// One trusted identity record of an app.
public struct RegisteredIdentity: Sendable {
    public var name: String
    public var validStart: String
    public var validEnd: String
    /// A reference portrait sealed with the platform key, as a matcher's `template` job returns it.
    public var sealedTemplate: Data?

    public init(name: String, validStart: String, validEnd: String, sealedTemplate: Data?) {
        self.name = name
        self.validStart = validStart
        self.validEnd = validEnd
        self.sealedTemplate = sealedTemplate
    }
}

/// The trusted identity source the verifier checks claims against.
public protocol IdentityRegistry: Sendable {
    func lookup(appId: UUID, number: String) async throws -> RegisteredIdentity?
    func register(appId: UUID, number: String, identity: RegisteredIdentity) async throws
    /// An opaque key for the tries at `number`, registered or not: keyed apart from the registry's own lookup key.
    func attemptKey(appId: UUID, number: String) -> String
}

/// The `ctid_registry` table: rows keyed by HMAC-SHA256(key derived from `numberKey`, number), so
/// the plain number is never stored; the name is sealed and bound to its row.
public struct PostgresIdentityRegistry: IdentityRegistry {
    private let database: PostgresPool
    private let sealer: Sealer
    private let numberKey: [UInt8]

    public init(database: PostgresPool, sealer: Sealer, numberKey: [UInt8]) throws {
        self.database = database
        self.sealer = sealer
        self.numberKey = try HKDF.sha256(ikm: numberKey, salt: [], info: Array("facegate.ctid-registry.number.v1".utf8), length: 32)
    }

    public func attemptKey(appId: UUID, number: String) -> String {
        Base64URL.encode(HMACSHA256.authenticationCode(key: numberKey, data: Array("attempts\n\(appId.uuidString.lowercased())\n\(number.uppercased())".utf8)))
    }

    func numberHash(_ number: String) -> [UInt8] {
        HMACSHA256.authenticationCode(key: numberKey, data: Array(number.uppercased().utf8))
    }


    public func lookup(appId: UUID, number: String) async throws -> RegisteredIdentity? {
        let hash = numberHash(number)
        guard let row = try await database.query("""
            SELECT name_sealed, valid_start, valid_end, template_sealed FROM ctid_registry
            WHERE app_id = \(appId) AND number_hash = \(hash)
            """).first else { return nil }
        let name = try sealer.open(try row.decode("name_sealed", as: [UInt8].self), context: Sealer.registryNameContext(appId: appId, numberHash: hash))
        return RegisteredIdentity(name: String(decoding: name, as: UTF8.self), validStart: try row.decode("valid_start"),
                                  validEnd: try row.decode("valid_end"),
                                  sealedTemplate: try row.decode("template_sealed", as: [UInt8]?.self).map { Data($0) })
    }

    public func register(appId: UUID, number: String, identity: RegisteredIdentity) async throws {
        let hash = numberHash(number)
        let name = try sealer.seal(Array(identity.name.utf8), context: Sealer.registryNameContext(appId: appId, numberHash: hash))
        let template = identity.sealedTemplate.map { Array($0) }
        _ = try await database.query("""
            INSERT INTO ctid_registry (app_id, number_hash, name_sealed, valid_start, valid_end, template_sealed)
            VALUES (\(appId), \(hash), \(name), \(identity.validStart), \(identity.validEnd), \(template))
            ON CONFLICT (app_id, number_hash) DO UPDATE SET name_sealed = EXCLUDED.name_sealed, valid_start = EXCLUDED.valid_start,
                valid_end = EXCLUDED.valid_end, template_sealed = EXCLUDED.template_sealed
            """)
    }
}
