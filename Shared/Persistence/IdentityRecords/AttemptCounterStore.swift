import AppRecords
import FaceGateCore
import Foundation
import PostgresClient

/// The brute-force counters of `AttemptGuard` (table `attempt_counters`): one row per app and subject.
package struct AttemptRule: Sendable {
    package var throttleAfter: Int
    package var throttleSeconds: Int
    /// 0: never locked.
    package var lockAfter: Int
    /// 0: failures count while they are consecutive (a success clears them). Otherwise a sliding window of this many
    /// seconds (GCRA): `throttleAfter` failures at once, then one per `failureWindow / throttleAfter` seconds, and
    /// nobody's success clears them; a steady trickle of failures below that rate never throttles.
    package var failureWindow = 0

    package init(throttleAfter: Int, throttleSeconds: Int, lockAfter: Int, failureWindow: Int = 0) {
        self.throttleAfter = throttleAfter
        self.throttleSeconds = throttleSeconds
        self.lockAfter = lockAfter
        self.failureWindow = failureWindow
    }

    /// The window's emission interval: seconds one failure occupies.
    package var failureInterval: Double { Double(failureWindow) / Double(max(throttleAfter, 1)) }
}

package protocol AttemptCounterStore: Sendable {
    /// Counts one failure against each subject in order, each unless it is locked or inside its wait, and none after
    /// one that is refused, in one statement (parallel charges are each counted or refused, never lost); whether each
    /// was counted. Locks a subject once its total reaches `rule.lockAfter` (0: never; the configuration asks at least 2).
    func charge(appId: UUID, _ subjects: [(subject: String, rule: AttemptRule)]) async throws -> [Bool]
    /// `charge` as a step to send with other statements.
    func charging(appId: UUID, _ subjects: [(subject: String, rule: AttemptRule)]) -> PostgresStep<[Bool]>
    /// The subject's state under `rule`, or nil when it has no counter.
    func state(appId: UUID, subject: String, rule: AttemptRule) async throws -> AttemptState?
    /// Takes charges back, in one round trip: a success clears the consecutive count, a neutral outcome removes just
    /// this charge; either unlocks a subject whose total falls below `rule.lockAfter`.
    func refund(appId: UUID, _ subjects: [(subject: String, success: Bool, rule: AttemptRule)]) async throws
    /// Forgets the subject (the operator's reset).
    func reset(appId: UUID, subject: String) async throws
}

extension AttemptCounterStore {
    package func charging(appId: UUID, _ subjects: [(subject: String, rule: AttemptRule)]) -> PostgresStep<[Bool]> {
        .computed { try await charge(appId: appId, subjects) }
    }

    package func charge(appId: UUID, subject: String, rule: AttemptRule) async throws -> Bool {
        try await charge(appId: appId, [(subject, rule)]) == [true]
    }

    package func refund(appId: UUID, subject: String, success: Bool, rule: AttemptRule) async throws {
        try await refund(appId: appId, [(subject, success, rule)])
    }
}

package struct AttemptState: Sendable, Equatable {
    package var locked: Bool
    /// At or over `throttleAfter` consecutive failures.
    package var throttled: Bool
    /// Seconds until the wait after the last failure ends (≤ 0: over).
    package var waitSeconds: Int

    package init(locked: Bool, throttled: Bool, waitSeconds: Int) {
        self.locked = locked
        self.throttled = throttled
        self.waitSeconds = waitSeconds
    }
}

/// `AttemptCounterStore` in PostgreSQL, shared by every gateway instance and surviving restarts.
package struct PostgresAttemptCounters: AttemptCounterStore {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    /// A windowed rule (`failureWindow` > 0) keeps its GCRA time in `last_failure_at`: when the failures charged so far
    /// would all have drained at one per `failureInterval`. A charge is admitted while that time is at most
    /// `failureWindow - failureInterval` ahead, and moves it one interval on; a refund moves it back.
    package func charge(appId: UUID, _ subjects: [(subject: String, rule: AttemptRule)]) async throws -> [Bool] {
        try await charging(appId: appId, subjects).run()
    }

    package func charging(appId: UUID, _ subjects: [(subject: String, rule: AttemptRule)]) -> PostgresStep<[Bool]> {
        guard !subjects.isEmpty else { return .computed { [] } }
        // WITH s0 AS (upsert RETURNING 1), s1 AS (upsert … only if s0 returned a row), … SELECT whether each returned one.
        var statement: PostgresQuery = "WITH "
        for (index, (subject, rule)) in subjects.enumerated() {
            let after = index == 0 ? "" : " WHERE EXISTS (SELECT 1 FROM s\(index - 1))"
            statement.append(PostgresQuery(unsafeSQL: (index == 0 ? "" : ", ") + "s\(index) AS ("))
            statement.append(charging(appId: appId, subject: subject, rule: rule, onlyIf: after))
            statement.append(")")
        }
        statement.append(PostgresQuery(unsafeSQL: " SELECT " + subjects.indices.map { "EXISTS (SELECT 1 FROM s\($0)) AS s\($0)" }.joined(separator: ", ")))
        return PostgresStep(database, statement) { rows in
            guard let row = rows.first else { return subjects.map { _ in false } }
            return try subjects.indices.map { try row.decode("s\($0)", as: Bool.self) }
        }
    }

    /// The upsert of one charge, returning a row when it counted.
    private func charging(appId: UUID, subject: String, rule: AttemptRule, onlyIf condition: String) -> PostgresQuery {
        let (window, interval) = (rule.failureWindow, rule.failureInterval)
        return """
            INSERT INTO attempt_counters AS c (app_id, subject, consecutive_failures, total_failures, last_failure_at)
            SELECT \(appId), \(subject), 1, 1, now() + make_interval(secs => \(window > 0 ? interval : 0))\(unsafeRaw: condition)
            ON CONFLICT (app_id, subject) DO UPDATE SET
                consecutive_failures = c.consecutive_failures + 1,
                total_failures = c.total_failures + 1,
                last_failure_at = CASE WHEN \(window) > 0 THEN GREATEST(c.last_failure_at, now()) + make_interval(secs => \(interval)) ELSE now() END,
                locked_at = CASE WHEN \(rule.lockAfter) > 0 AND c.total_failures + 1 >= \(rule.lockAfter) THEN now() ELSE c.locked_at END
            WHERE c.locked_at IS NULL
              AND CASE WHEN \(window) > 0 THEN c.last_failure_at - now() <= make_interval(secs => \(Double(window) - interval))
                       ELSE c.consecutive_failures < \(rule.throttleAfter) OR c.last_failure_at + make_interval(secs => \(rule.throttleSeconds)) <= now() END
            RETURNING 1
            """
    }

    package func state(appId: UUID, subject: String, rule: AttemptRule) async throws -> AttemptState? {
        let (window, interval) = (rule.failureWindow, rule.failureInterval)
        guard let row = try await database.query("""
            SELECT locked_at IS NOT NULL AS locked,
                   CASE WHEN \(window) > 0 THEN last_failure_at - now() > make_interval(secs => \(Double(window) - interval))
                        ELSE consecutive_failures >= \(rule.throttleAfter) END AS throttled,
                   CEIL(EXTRACT(EPOCH FROM (CASE WHEN \(window) > 0 THEN last_failure_at - make_interval(secs => \(Double(window) - interval))
                                                 ELSE last_failure_at + make_interval(secs => \(rule.throttleSeconds)) END - now())))::int AS wait
            FROM attempt_counters WHERE app_id = \(appId) AND subject = \(subject)
            """).first else { return nil }
        return AttemptState(locked: try row.decode("locked"), throttled: try row.decode("throttled"),
                            waitSeconds: try row.decode("wait", as: Int?.self) ?? 0)
    }

    package func refund(appId: UUID, _ subjects: [(subject: String, success: Bool, rule: AttemptRule)]) async throws {
        guard !subjects.isEmpty else { return }
        _ = try await database.query(subjects.map { refunding(appId: appId, subject: $0.subject, success: $0.success, rule: $0.rule) })
    }

    private func refunding(appId: UUID, subject: String, success: Bool, rule: AttemptRule) -> PostgresQuery {
        """
            UPDATE attempt_counters SET
                last_failure_at = CASE WHEN \(rule.failureWindow) > 0 THEN last_failure_at - make_interval(secs => \(rule.failureInterval))
                                       ELSE last_failure_at END,
                consecutive_failures = CASE WHEN \(success) THEN 0 ELSE GREATEST(consecutive_failures - 1, 0) END,
                total_failures = GREATEST(total_failures - 1, 0),
                locked_at = CASE WHEN \(rule.lockAfter) > 0 AND total_failures - 1 < \(rule.lockAfter) THEN NULL ELSE locked_at END
            WHERE app_id = \(appId) AND subject = \(subject)
            """
    }

    package func reset(appId: UUID, subject: String) async throws {
        _ = try await database.query("DELETE FROM attempt_counters WHERE app_id = \(appId) AND subject = \(subject)")
    }
}
