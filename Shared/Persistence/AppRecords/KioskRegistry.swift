import FaceGateCore
import Foundation
import PostgresClient

/// A registered kiosk (`kiosks`): the device an operator trusts to run kiosk login and onboarding for an app, known by the
/// RFC 7638 thumbprint of its P-256 DPoP key.
package struct RegisteredKiosk: Sendable, Equatable {
    package var id: UUID
    package var appId: UUID
    package var name: String
    package var jkt: String
    /// Client addresses the kiosk may call from; nil: any.
    package var allowedAddresses: [String]?
    package var createdAt: Date
    package var revokedAt: Date?

    package init(id: UUID, appId: UUID, name: String, jkt: String, allowedAddresses: [String]? = nil, createdAt: Date, revokedAt: Date? = nil) {
        self.id = id
        self.appId = appId
        self.name = name
        self.jkt = jkt
        self.allowedAddresses = allowedAddresses
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// Whether a key is a registered kiosk's: such a key is never a user's device.
package protocol KioskKeys: Sendable {
    func isLiveKiosk(appId: UUID, jkt: String) async throws -> Bool
}

/// The kiosks of an app. A key is live in at most one unrevoked kiosk of an app; a revoked kiosk stays listed.
package protocol KioskRegistry: KioskKeys {
    /// False when the key is already live in another kiosk of the app.
    func register(_ kiosk: RegisteredKiosk) async throws -> Bool
    func kiosks(appId: UUID) async throws -> [RegisteredKiosk]
    /// The unrevoked kiosk of the app holding this key.
    func live(appId: UUID, jkt: String) async throws -> RegisteredKiosk?
    /// Revokes it (a revoked kiosk stays revoked at its first time); nil when the app has no such kiosk.
    func revoke(_ id: UUID, appId: UUID) async throws -> RegisteredKiosk?
}

extension KioskRegistry {
    package func isLiveKiosk(appId: UUID, jkt: String) async throws -> Bool { try await live(appId: appId, jkt: jkt) != nil }
}

package struct PostgresKioskRegistry: KioskRegistry {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    private static let columns = "id, app_id, name, jkt, array_to_string(allowed_addresses, ',') AS allowed, created_at, revoked_at"

    package func register(_ kiosk: RegisteredKiosk) async throws -> Bool {
        let allowed = kiosk.allowedAddresses.map { "{" + $0.joined(separator: ",") + "}" }
        return try await database.query("""
            INSERT INTO kiosks (id, app_id, name, jkt, allowed_addresses, created_at)
            VALUES (\(kiosk.id), \(kiosk.appId), \(kiosk.name), \(kiosk.jkt), \(allowed)::text[], \(kiosk.createdAt))
            ON CONFLICT (app_id, jkt) WHERE revoked_at IS NULL DO NOTHING
            """).affectedRows == 1
    }

    package func kiosks(appId: UUID) async throws -> [RegisteredKiosk] {
        try await database.query("SELECT \(unsafeRaw: Self.columns) FROM kiosks WHERE app_id = \(appId) ORDER BY created_at, id").map(Self.kiosk)
    }

    package func live(appId: UUID, jkt: String) async throws -> RegisteredKiosk? {
        try await database.query("""
            SELECT \(unsafeRaw: Self.columns) FROM kiosks WHERE app_id = \(appId) AND jkt = \(jkt) AND revoked_at IS NULL
            """).first.map(Self.kiosk)
    }

    package func revoke(_ id: UUID, appId: UUID) async throws -> RegisteredKiosk? {
        try await database.query("""
            UPDATE kiosks SET revoked_at = coalesce(revoked_at, now()) WHERE id = \(id) AND app_id = \(appId) RETURNING \(unsafeRaw: Self.columns)
            """).first.map(Self.kiosk)
    }

    private static func kiosk(_ row: PostgresRow) throws -> RegisteredKiosk {
        RegisteredKiosk(id: try row.decode("id"), appId: try row.decode("app_id"), name: try row.decode("name"), jkt: try row.decode("jkt"),
                        allowedAddresses: try row.decode("allowed", as: String?.self).map { $0.split(separator: ",").map(String.init) },
                        createdAt: try row.decode("created_at"), revokedAt: try row.decode("revoked_at"))
    }
}
