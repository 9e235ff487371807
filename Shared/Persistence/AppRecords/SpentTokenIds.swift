import FaceGateCore
import Foundation
import PostgresClient
import ServiceKit

/// Token ids spent once (`used_token_ids`): identity tokens exchanged or registering a device credential, DPoP proofs'
/// `jti`. Shared by every gateway instance; the sweep deletes them an hour after the token itself expired.
package protocol SpentTokenIds: Sendable {
    /// Spends `id` until `expiresAt` (Unix seconds); false when it was spent before.
    func spend(_ id: String, appId: UUID, expiresAt: Int64) async throws -> Bool
    /// The same spend as a step to send with other statements (`PostgresStep.then`, `together`): it fails with
    /// `TokenIdSpentBefore` when the id was spent before, and then nothing sent with it is kept.
    func spending(_ id: String, appId: UUID, expiresAt: Int64) -> PostgresStep<Void>
}

/// The id of a token was spent before: a replay.
package struct TokenIdSpentBefore: Error {}

extension PostgresSpentTokenIds {
    /// Deletes the ids an hour after their token expired: the token's own `exp` refuses it from then on.
    package func sweepExpired() async throws {
        try await Tenant.acrossApps {
            _ = try await database.query("DELETE FROM used_token_ids WHERE expires_at < now() - interval '1 hour'")
        }
    }
}

package struct PostgresSpentTokenIds: SpentTokenIds {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    package func spend(_ id: String, appId: UUID, expiresAt: Int64) async throws -> Bool {
        try await database.query("""
            INSERT INTO used_token_ids (jti, app_id, expires_at) VALUES (\(id), \(appId), to_timestamp(\(expiresAt)))
            ON CONFLICT (jti) DO NOTHING
            """).affectedRows == 1
    }

    /// A plain insert: an id spent before violates the key, which aborts the transaction it is sent in.
    package func spending(_ id: String, appId: UUID, expiresAt: Int64) -> PostgresStep<Void> {
        PostgresStep(database, "INSERT INTO used_token_ids (jti, app_id, expires_at) VALUES (\(id), \(appId), to_timestamp(\(expiresAt)))") { _ in }
            .refusing { error in error.sqlState == "23505" && error.tableName == "used_token_ids" ? TokenIdSpentBefore() : nil }
    }
}
