import FaceGateCore
import Foundation
import PostgresClient

/// An operator or auditor key as the API lists it (never its secret, which is stored only as a hash).
package struct ApiKeyRecord: Sendable {
    package var id: UUID
    package var name: String
    /// The apps the key covers; nil: every app.
    package var appIds: [UUID]?
    package var createdAt: Date
    package var expiresAt: Date?
    package var revokedAt: Date?

    package init(id: UUID, name: String, appIds: [UUID]? = nil, createdAt: Date, expiresAt: Date? = nil, revokedAt: Date? = nil) {
        self.id = id
        self.name = name
        self.appIds = appIds
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
    }
}

/// Operator and auditor keys (`api_keys`), by role: `admin` (operators) or `auditor`.
package protocol ApiKeyStore: Sendable {
    /// The id, role and apps of the live (neither revoked nor expired) key with this SHA-256 hash.
    func live(hash: [UInt8]) async throws -> (id: UUID, role: String, appIds: [UUID]?)?
    func create(id: UUID, role: String, name: String, hash: [UInt8], appIds: [UUID]?, expiresAt: Date?) async throws
    func list(role: String) async throws -> [ApiKeyRecord]
    /// Revokes the key (a revoked key stays revoked at its first time); false when there is no such key of the role.
    func revoke(_ id: UUID, role: String) async throws -> Bool
    /// A deleted app leaves the operator keys that named it; those that named only it are revoked. Auditor keys keep it:
    /// the app's audit trail outlives the app, and they still read it.
    func forget(app: UUID) async throws
}

package struct PostgresApiKeys: ApiKeyStore {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    package func live(hash: [UInt8]) async throws -> (id: UUID, role: String, appIds: [UUID]?)? {
        try await database.query("""
            SELECT id, role, app_ids::text AS app_ids FROM api_keys
            WHERE key_hash = \(hash) AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
            """).first.map { row -> (id: UUID, role: String, appIds: [UUID]?) in
            (try row.decode("id", as: UUID.self), try row.decode("role", as: String.self), try Self.appList(row))
        }
    }

    package func create(id: UUID, role: String, name: String, hash: [UInt8], appIds: [UUID]?, expiresAt: Date?) async throws {
        _ = try await database.query("""
            INSERT INTO api_keys (id, role, name, key_hash, app_ids, expires_at)
            VALUES (\(id), \(role), \(name), \(hash), \(appIds.map(\.arrayLiteral))::uuid[], \(expiresAt))
            """)
    }

    package func list(role: String) async throws -> [ApiKeyRecord] {
        try await database.query("""
            SELECT id, name, app_ids::text AS app_ids, created_at, expires_at, revoked_at FROM api_keys
            WHERE role = \(role) ORDER BY created_at, id
            """).map { row in
            ApiKeyRecord(id: try row.decode("id"), name: try row.decode("name"), appIds: try Self.appList(row), createdAt: try row.decode("created_at"),
                         expiresAt: try row.decode("expires_at"), revokedAt: try row.decode("revoked_at"))
        }
    }

    package func revoke(_ id: UUID, role: String) async throws -> Bool {
        try await database.query("UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = \(id) AND role = \(role)")
            .affectedRows == 1
    }

    package func forget(app: UUID) async throws {
        _ = try await database.query("""
            UPDATE api_keys SET app_ids = array_remove(app_ids, \(app)),
                   revoked_at = CASE WHEN app_ids = ARRAY[\(app)]::uuid[] THEN coalesce(revoked_at, now()) ELSE revoked_at END
            WHERE role = 'admin' AND \(app) = ANY(app_ids)
            """)
    }

    /// `app_ids` as PostgreSQL's text form of a uuid[] (`{…,…}`); NULL: every app.
    private static func appList(_ row: PostgresRow) throws -> [UUID]? {
        guard let list = try row.decode("app_ids", as: String?.self) else { return nil }
        return list.trimmingCharacters(in: CharacterSet(charactersIn: "{}")).split(separator: ",").compactMap { UUID(uuidString: String($0)) }
    }
}
