import FaceGateCore
import Foundation
import PostgresClient

/// Which remembered request: the caller's scope (a digest of its credential) and its Idempotency-Key.
package struct IdempotencyRecordID: Sendable, Hashable {
    package var scope: [UInt8]
    package var key: String

    package init(scope: [UInt8], key: String) {
        self.scope = scope
        self.key = key
    }
}

/// A remembered request: what was asked, and once answered, the answer sealed for the caller.
package struct IdempotencyRecord: Sendable, Equatable {
    package var requestHash: [UInt8]
    package var status: Int?
    package var sealedAnswer: [UInt8]?

    package init(requestHash: [UInt8], status: Int? = nil, sealedAnswer: [UInt8]? = nil) {
        self.requestHash = requestHash
        self.status = status
        self.sealedAnswer = sealedAnswer
    }
}

/// The remembered requests (`idempotent_requests`), shared by every gateway instance.
package protocol IdempotencyRecords: Sendable {
    /// Takes the key for a new request: true if it was free, had expired (`retentionSeconds`) or was left unanswered for
    /// `abandonedSeconds` (the record then starts again); false if another request holds it.
    func claim(_ id: IdempotencyRecordID, requestHash: [UInt8], retentionSeconds: Int, abandonedSeconds: Int) async throws -> Bool
    func record(_ id: IdempotencyRecordID) async throws -> IdempotencyRecord?
    /// Keeps the answer of the claimed request.
    func settle(_ id: IdempotencyRecordID, status: Int, sealedAnswer: [UInt8]) async throws
    /// Frees a key whose request ended without an answer to keep; a kept answer stays.
    func release(_ id: IdempotencyRecordID) async throws
    func sweep(olderThanSeconds: Int) async throws
}

package struct PostgresIdempotencyRecords: IdempotencyRecords {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    package func claim(_ id: IdempotencyRecordID, requestHash: [UInt8], retentionSeconds: Int, abandonedSeconds: Int) async throws -> Bool {
        try await database.query("""
            INSERT INTO idempotent_requests AS r (scope, idempotency_key, request_hash) VALUES (\(id.scope), \(id.key), \(requestHash))
            ON CONFLICT (scope, idempotency_key) DO UPDATE SET request_hash = EXCLUDED.request_hash, status = NULL,
                response_sealed = NULL, created_at = now()
            WHERE r.created_at < now() - make_interval(secs => \(retentionSeconds))
               OR (r.status IS NULL AND r.created_at < now() - make_interval(secs => \(abandonedSeconds)))
            RETURNING 1 AS claimed
            """).first != nil
    }

    package func record(_ id: IdempotencyRecordID) async throws -> IdempotencyRecord? {
        let rows = try await database.query("""
            SELECT request_hash, status, response_sealed FROM idempotent_requests WHERE scope = \(id.scope) AND idempotency_key = \(id.key)
            """)
        return try rows.first.map { row in
            IdempotencyRecord(requestHash: try row.decode("request_hash", as: [UInt8].self), status: try row.decode("status", as: Int?.self),
                              sealedAnswer: try row.decode("response_sealed", as: [UInt8]?.self))
        }
    }

    package func settle(_ id: IdempotencyRecordID, status: Int, sealedAnswer: [UInt8]) async throws {
        _ = try await database.query("""
            UPDATE idempotent_requests SET status = \(status), response_sealed = \(sealedAnswer)
            WHERE scope = \(id.scope) AND idempotency_key = \(id.key)
            """)
    }

    package func release(_ id: IdempotencyRecordID) async throws {
        _ = try await database.query("""
            DELETE FROM idempotent_requests WHERE scope = \(id.scope) AND idempotency_key = \(id.key) AND status IS NULL
            """)
    }

    package func sweep(olderThanSeconds: Int) async throws {
        _ = try await database.query("DELETE FROM idempotent_requests WHERE created_at < now() - make_interval(secs => \(olderThanSeconds))")
    }
}
