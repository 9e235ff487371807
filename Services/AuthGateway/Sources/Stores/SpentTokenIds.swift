import FaceGateCore
import Foundation
import PostgresClient

/// Token ids spent once (`used_token_ids`): identity tokens exchanged or registering a device credential, DPoP proofs'
/// `jti`. Shared by every gateway instance; the sweep deletes them an hour after the token itself expired.
protocol SpentTokenIds: Sendable {
    /// Spends `id` until `expiresAt` (Unix seconds); false when it was spent before.
    func spend(_ id: String, appId: UUID, expiresAt: Int64) async throws -> Bool
}

struct PostgresSpentTokenIds: SpentTokenIds {
    let database: PostgresPool

    func spend(_ id: String, appId: UUID, expiresAt: Int64) async throws -> Bool {
        try await database.query("""
            INSERT INTO used_token_ids (jti, app_id, expires_at) VALUES (\(id), \(appId), to_timestamp(\(expiresAt)))
            ON CONFLICT (jti) DO NOTHING
            """).affectedRows == 1
    }
}
