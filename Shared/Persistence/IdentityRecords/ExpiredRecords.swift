import AppRecords
import FaceGateCore
import Foundation
import PostgresClient
import ServiceKit

/// The retention rule of the single-use records this module keeps: challenges and tickets, confirmations and liveness
/// frame digests go an hour after they expire (spent token ids and CTID serials too, swept by their own stores).
package struct ExpiredRecords: Sendable {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    package func sweep() async throws {
        try await Tenant.acrossApps {
            _ = try await database.query("DELETE FROM one_time_challenges WHERE expires_at < now() - interval '1 hour'")
            _ = try await database.query("DELETE FROM login_confirmations WHERE expires_at < now() - interval '1 hour'")
            _ = try await database.query("DELETE FROM used_liveness_frames WHERE expires_at < now() - interval '1 hour'")
        }
    }
}
