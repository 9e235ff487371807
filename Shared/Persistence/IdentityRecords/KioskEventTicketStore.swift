import AppRecords
import FaceGateCore
import Foundation
import PostgresClient

/// Single-use tickets that open a kiosk session's event stream once (`one_time_challenges` of purpose `kiosk-events`),
/// for browsers' `EventSource`, which cannot send the interview token as a header.
package protocol KioskEventTicketStore: Sendable {
    func issue(_ ticket: String, appId: UUID, session: UUID, ttlSeconds: Int) async throws
    /// Spends the ticket, once; false when it is unknown, spent, expired or another session's.
    func spend(_ ticket: String, session: UUID) async throws -> Bool
}

package struct PostgresKioskEventTickets: KioskEventTicketStore {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    package func issue(_ ticket: String, appId: UUID, session: UUID, ttlSeconds: Int) async throws {
        _ = try await database.query("""
            INSERT INTO one_time_challenges (id, app_id, purpose, subject, expires_at)
            VALUES (\(ticket), \(appId), 'kiosk-events', \(session.wire), now() + make_interval(secs => \(ttlSeconds)))
            """)
    }

    package func spend(_ ticket: String, session: UUID) async throws -> Bool {
        try await database.query("""
            UPDATE one_time_challenges SET used_at = now()
            WHERE id = \(ticket) AND purpose = 'kiosk-events' AND subject = \(session.wire) AND used_at IS NULL AND expires_at > now()
            """).affectedRows == 1
    }
}
