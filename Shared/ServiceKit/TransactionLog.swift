import FaceGateCore
import Foundation
import KafkaClient
import PostgresClient

/// The append-only, per-app hash-chained audit trail. PostgreSQL is the record; each committed row
/// is also published on `audit.transactions.v1` for downstream consumers (best effort, after commit).
public struct TransactionLog: Sendable {
    private let database: PostgresPool
    private let producer: KafkaProducer?
    private let topic: String
    private let logger: Logger

    public init(database: PostgresPool, producer: KafkaProducer?, topic: String, logger: Logger) {
        self.database = database
        self.producer = producer
        self.topic = topic
        self.logger = logger
    }

    public func append(_ record: TransactionRecord) async throws {
        try await database.withTransaction { connection in try await Self.insert(record, in: connection) }
        await publish(record)
    }

    /// Chains `record` inside the caller's database transaction, so it commits together with the
    /// caller's other writes; call `publish` once that transaction has committed.
    public static func insert(_ record: TransactionRecord, in connection: PostgresConnection) async throws {
        let app = record.appId
        _ = try await connection.query("""
            INSERT INTO transaction_chain_heads (app_id, last_seq, last_hash)
            VALUES (\(app), 0, \(TransactionRecord.genesisHash)) ON CONFLICT (app_id) DO NOTHING
            """)
        let head = try await connection.query("SELECT last_seq, last_hash FROM transaction_chain_heads WHERE app_id = \(app) FOR UPDATE")
        guard let row = head.first else { throw TransactionLogError.chainHeadMissing }
        let seq = try row.decode("last_seq", as: Int64.self) + 1
        let previous = try row.decode("last_hash", as: [UInt8].self)
        let hash = record.rowHash(previousHash: previous, chainSeq: seq)
        let detail = String(decoding: try FaceGateJSON.encode(record.detail), as: UTF8.self)
        _ = try await connection.query("""
            INSERT INTO transactions (id, app_id, chain_seq, kind, outcome, user_id, device_id, client_ip, score,
                                      latency_ms, detail, created_at, prev_hash, row_hash)
            VALUES (\(record.id), \(app), \(seq), \(record.kind), \(record.outcome), \(record.userId), \(record.deviceId),
                    \(record.clientIp), \(record.score.map { Double($0) }), \(record.latencyMs), \(detail)::jsonb,
                    \(record.createdAt), \(previous), \(hash))
            """)
        _ = try await connection.query("UPDATE transaction_chain_heads SET last_seq = \(seq), last_hash = \(hash) WHERE app_id = \(app)")
    }

    /// Publishes a committed record on the audit topic (best effort: PostgreSQL is the record).
    public func publish(_ record: TransactionRecord) async {
        if let producer {
            do {
                let value = try FaceGateJSON.encode(record)
                _ = try await producer.send(KafkaRecord(topic: topic, key: Array(record.appId.uuidString.lowercased().utf8), value: value))
            } catch {
                logger.warning("audit record not published", ["transaction.id": record.id.uuidString.lowercased(), "error": "\(error)"])
            }
        }
    }

    /// Decodes a `transactions` row (columns as the table names them).
    public static func record(from row: PostgresRow) throws -> TransactionRecord {
        let detailText = try row.decode("detail", as: String.self)
        let detail = (try? FaceGateJSON.decode([String: String].self, from: Array(detailText.utf8))) ?? [:]
        return TransactionRecord(
            id: try row.decode("id"), appId: try row.decode("app_id"), kind: try row.decode("kind"), outcome: try row.decode("outcome"),
            userId: try row.decode("user_id", as: UUID?.self), deviceId: try row.decode("device_id", as: String?.self),
            clientIp: try row.decode("client_ip", as: String?.self), score: try row.decode("score", as: Float?.self),
            latencyMs: try row.decode("latency_ms", as: Int.self), createdAt: try row.decode("created_at", as: Date.self), detail: detail)
    }

    public struct Verification: Sendable, Codable {
        public var appId: String
        public var ok: Bool
        public var checked: Int
        public var firstBrokenTransactionId: String?

        /// `firstBrokenTransactionId` is written as null when the chain is intact.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(appId, forKey: .appId)
            try container.encode(ok, forKey: .ok)
            try container.encode(checked, forKey: .checked)
            try container.encode(firstBrokenTransactionId, forKey: .firstBrokenTransactionId)
        }
    }

    /// Recomputes the app's chain in order. A changed row breaks its own hash; a deleted or reordered
    /// row breaks the sequence or the link; a deleted tail no longer reaches the recorded head.
    public func verify(appId: UUID) async throws -> Verification {
        var expectedSeq: Int64 = 1
        var previous = TransactionRecord.genesisHash
        var checked = 0
        var broken: UUID?
        try await database.forEachRow("""
            SELECT id, app_id, chain_seq, kind, outcome, user_id, device_id, client_ip, score, latency_ms, detail::text AS detail,
                   created_at, prev_hash, row_hash
            FROM transactions WHERE app_id = \(appId) ORDER BY chain_seq
            """) { row in
            guard broken == nil else { return }
            let record = try Self.record(from: row)
            let seq = try row.decode("chain_seq", as: Int64.self)
            let storedPrevious = try row.decode("prev_hash", as: [UInt8].self)
            let storedHash = try row.decode("row_hash", as: [UInt8].self)
            checked += 1
            if seq != expectedSeq || storedPrevious != previous || record.rowHash(previousHash: previous, chainSeq: seq) != storedHash {
                broken = record.id
                return
            }
            previous = storedHash
            expectedSeq += 1
        }
        if broken == nil, let head = try await database.query("SELECT last_seq, last_hash FROM transaction_chain_heads WHERE app_id = \(appId)").first {
            let lastSeq = try head.decode("last_seq", as: Int64.self)
            let lastHash = try head.decode("last_hash", as: [UInt8].self)
            if lastSeq != expectedSeq - 1 || lastHash != previous {
                // The tail was removed: report the last row that still exists as the break point.
                let tail = try await database.query("SELECT id FROM transactions WHERE app_id = \(appId) ORDER BY chain_seq DESC LIMIT 1").first
                broken = try tail?.decode("id", as: UUID.self) ?? platformAppId
            }
        }
        return Verification(appId: appId.wire, ok: broken == nil, checked: checked, firstBrokenTransactionId: broken?.wire)
    }
}

enum TransactionLogError: Error { case chainHeadMissing }
