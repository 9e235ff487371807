import Foundation
import PostgresClient

/// Brute-force rule per (app, subject), shared by every gateway instance through PostgreSQL and
/// surviving restarts (NIST SP 800-63B §5.2.2): after `throttleAfter` consecutive failures at least
/// `throttleSeconds` between attempts (`RATE_LIMITED` + `Retry-After`); after `lockAfter` failures the
/// subject is locked until an operator resets it. A success clears the consecutive count.
struct AttemptGuard: Sendable {
    let database: PostgresPool
    let throttleAfter: Int
    let throttleSeconds: Int
    let lockAfter: Int

    static func subject(device: String) -> String { "device:" + device }

    func check(appId: UUID, subject: String) async throws {
        let rows = try await database.query("""
            SELECT consecutive_failures, locked_at IS NOT NULL AS locked,
                   GREATEST(0, CEIL(EXTRACT(EPOCH FROM (last_failure_at + make_interval(secs => \(throttleSeconds)) - now()))))::int AS wait
            FROM attempt_counters WHERE app_id = \(appId) AND subject = \(subject)
            """)
        guard let row = rows.first else { return }
        if try row.decode("locked", as: Bool.self) {
            throw APIError(.credentialLocked, "too many failed attempts: this device is locked until an operator resets it")
        }
        let wait = try row.decode("wait", as: Int.self)
        if try row.decode("consecutive_failures", as: Int.self) >= throttleAfter, wait > 0 {
            throw APIError(.rateLimited, "too many failed attempts; wait \(wait) s", retryAfter: wait)
        }
    }

    func recordFailure(appId: UUID, subject: String) async throws {
        _ = try await database.query("""
            INSERT INTO attempt_counters (app_id, subject, consecutive_failures, total_failures, last_failure_at)
            VALUES (\(appId), \(subject), 1, 1, now())
            ON CONFLICT (app_id, subject) DO UPDATE SET
                consecutive_failures = attempt_counters.consecutive_failures + 1,
                total_failures = attempt_counters.total_failures + 1,
                last_failure_at = now(),
                locked_at = CASE WHEN attempt_counters.total_failures + 1 >= \(lockAfter) THEN now() ELSE attempt_counters.locked_at END
            """)
    }

    func recordSuccess(appId: UUID, subject: String) async throws {
        _ = try await database.query("""
            UPDATE attempt_counters SET consecutive_failures = 0 WHERE app_id = \(appId) AND subject = \(subject) AND consecutive_failures > 0
            """)
    }
}
