import FaceGateCore
import Foundation
import PostgresClient
import ServiceKit

/// The retention rule of the single-use records the stores above keep: spent or expired token ids (the token's own `exp`
/// refuses it from then on), challenges and tickets, confirmations and liveness frame digests go an hour after they
/// expire (CTID serials too, swept by their own store).
struct ExpiredRecords: Sendable {
    let database: PostgresPool

    static let tables = ["used_token_ids", "one_time_challenges", "login_confirmations", "used_liveness_frames"]

    func sweep() async throws {
        try await Tenant.acrossApps {
            for table in Self.tables {
                _ = try await database.query(PostgresQuery(unsafeSQL: "DELETE FROM \(table) WHERE expires_at < now() - interval '1 hour'"))
            }
        }
    }
}
