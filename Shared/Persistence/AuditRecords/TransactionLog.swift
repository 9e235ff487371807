import Crypto
import FaceGateCore
import Foundation
import KafkaClient
import PostgresClient
import ServiceKit

/// The audit chain's HMAC keys, which the database never holds: `FACEGATE_AUDIT_KEY` (base64 of 32 bytes) keys
/// new rows; `FACEGATE_PREVIOUS_AUDIT_KEYS` (comma list) still verify the rows they keyed. Each row names its
/// key by id (`hash_key_id`).
public struct AuditKeys: Sendable {
    public let current: [UInt8]
    public let currentId: String
    private let byId: [String: [UInt8]]

    public init(current: [UInt8], previous: [[UInt8]] = []) {
        self.current = current
        currentId = Self.id(of: current)
        byId = Dictionary((previous + [current]).map { (Self.id(of: $0), $0) }) { _, latest in latest }
    }

    public init(environment env: Environment) throws(ConfigurationError) {
        let current = try env.base64Key("FACEGATE_AUDIT_KEY", bytes: 32)
        var previous: [[UInt8]] = []
        for item in (env.optionalString("FACEGATE_PREVIOUS_AUDIT_KEYS") ?? "").split(separator: ",") {
            guard let data = Data(base64Encoded: item.trimmingCharacters(in: .whitespaces)), data.count == 32 else {
                throw ConfigurationError(variable: "FACEGATE_PREVIOUS_AUDIT_KEYS", problem: "must be a comma list of base64 32-byte keys")
            }
            previous.append(Array(data))
        }
        self.init(current: current, previous: previous)
    }

    /// base64url of the first 9 bytes of SHA-256 over a label and the key (it says nothing about the key).
    public static func id(of key: [UInt8]) -> String {
        Base64URL.encode(Array(SHA256.hash(Array("facegate audit key id\n".utf8) + key).prefix(9)))
    }

    public func key(id: String) -> [UInt8]? { byId[id] }
}

/// Where a worker writes the transactions it records (`TransactionLog`; an in-memory twin in tests).
public protocol TransactionRecorder: Sendable {
    func append(_ record: TransactionRecord) async throws
}

/// The append-only, per-app chained audit trail: each row's hash is an HMAC (keyed with `AuditKeys`) over the
/// previous row's hash and the row, so whoever can write the database but not read the services' keys cannot
/// forge a row or re-chain after an edit. PostgreSQL is the record; each committed row is also published on
/// `audit.transactions.v1` for downstream consumers (best effort, after commit).
public struct TransactionLog: TransactionRecorder {
    private let database: PostgresPool
    private let publishing: (producer: KafkaProducer, topic: String, background: BackgroundWork)?
    private let logger: Logger
    private let keys: AuditKeys

    /// `publishing`: where committed records are published, by work in `background`; nil publishes nothing.
    public init(database: PostgresPool, publishing: (producer: KafkaProducer, topic: String, background: BackgroundWork)?, logger: Logger,
                keys: AuditKeys) {
        self.database = database
        self.publishing = publishing
        self.logger = logger
        self.keys = keys
    }

    /// Chains `record` in a transaction of its own, two round trips: the head, then the row with the head's advance.
    public func append(_ record: TransactionRecord) async throws {
        try await Tenant.run(app: record.appId) {
            try await database.readThenWrite(Self.lockedHead(of: record.appId)) { head in ([try chaining(record, after: head)], ()) }
        }
        publish(record)
    }

    /// Chains `record` inside the caller's database transaction, so it commits together with the
    /// caller's other writes; call `publish` once that transaction has committed.
    public func insert(_ record: TransactionRecord, in connection: PostgresConnection) async throws {
        _ = try await connection.query(try chaining(record, after: try await connection.query(Self.lockedHead(of: record.appId))))
    }

    /// The app's head, created at genesis when it has none, and locked until the transaction ends (the no-op update of an
    /// existing head takes its row lock and returns its latest values, as SELECT … FOR UPDATE would).
    private static func lockedHead(of app: UUID) -> PostgresQuery {
        """
        INSERT INTO transaction_chain_heads AS h (app_id, last_seq, last_hash)
        VALUES (\(app), 0, \(TransactionRecord.genesisHash))
        ON CONFLICT (app_id) DO UPDATE SET last_seq = h.last_seq
        RETURNING last_seq, last_hash
        """
    }

    /// The row of `record` after `head`, and the head's advance, in one statement.
    private func chaining(_ record: TransactionRecord, after head: PostgresRows) throws -> PostgresQuery {
        let app = record.appId
        guard let row = head.first else { throw TransactionLogError.chainHeadMissing }
        let seq = try row.decode("last_seq", as: Int64.self) + 1
        let previous = try row.decode("last_hash", as: [UInt8].self)
        let hash = record.rowHash(previousHash: previous, chainSeq: seq, key: keys.current)
        let detail = String(decoding: try FaceGateJSON.encode(record.detail), as: UTF8.self)
        return """
            WITH appended AS (
                INSERT INTO transactions (id, app_id, chain_seq, kind, outcome, user_id, device_id, client_ip, score,
                                          latency_ms, detail, created_at, prev_hash, row_hash, hash_key_id)
                VALUES (\(record.id), \(app), \(seq), \(record.kind), \(record.outcome), \(record.userId), \(record.deviceId),
                        \(record.clientIp), \(record.score.map { Double($0) }), \(record.latencyMs), \(detail)::jsonb,
                        \(record.createdAt), \(previous), \(hash), \(keys.currentId))
            )
            UPDATE transaction_chain_heads SET last_seq = \(seq), last_hash = \(hash) WHERE app_id = \(app)
            """
    }

    /// Publishes a committed record on the audit topic (best effort: PostgreSQL is the record). The caller does
    /// not wait for the delivery: with the broker away it would hold an answer for librdkafka's whole message
    /// timeout.
    public func publish(_ record: TransactionRecord) {
        guard let (producer, topic, background) = publishing else { return }
        let logger = logger
        background.submit {
            do {
                let value = try FaceGateJSON.encode(record)
                _ = try await producer.send(KafkaRecord(topic: topic, key: Array(record.appId.uuidString.lowercased().utf8), value: value,
                                                        headers: [TraceContext.header]))
            } catch {
                logger.warning("audit record not published", ["transaction.id": record.id.uuidString.lowercased(), "error": "\(error)"])
            }
        }
    }

    /// Which transactions an auditor asks for; a nil field matches every row.
    public struct Filter: Sendable {
        /// Apps' ids, comma-separated.
        public var appIds: String?
        public var kind: String?
        public var outcome: String?
        public var userId: UUID?
        public var deviceId: String?
        /// From (inclusive) and to (exclusive).
        public var from: Date?
        public var to: Date?

        public init(appIds: String? = nil, kind: String? = nil, outcome: String? = nil, userId: UUID? = nil, deviceId: String? = nil,
                    from: Date? = nil, to: Date? = nil) {
            (self.appIds, self.kind, self.outcome, self.userId, self.deviceId, self.from, self.to) = (appIds, kind, outcome, userId, deviceId, from, to)
        }
    }

    /// Up to `limit` matching transactions, newest first, older than `cursor` (creation time, id) when given.
    public func page(_ filter: Filter, before cursor: (time: Date, id: UUID)?, limit: Int) async throws -> [TransactionRecord] {
        try await database.query("""
            SELECT id, app_id, kind, outcome, user_id, device_id, client_ip, score, latency_ms, detail::text AS detail, created_at
            FROM transactions
            WHERE (\(filter.appIds)::text IS NULL OR app_id::text = ANY(string_to_array(\(filter.appIds), ',')))
              AND (\(filter.kind)::text IS NULL OR kind = \(filter.kind))
              AND (\(filter.outcome)::text IS NULL OR outcome = \(filter.outcome))
              AND (\(filter.userId)::uuid IS NULL OR user_id = \(filter.userId))
              AND (\(filter.deviceId)::text IS NULL OR device_id = \(filter.deviceId))
              AND (\(filter.from)::timestamptz IS NULL OR created_at >= \(filter.from))
              AND (\(filter.to)::timestamptz IS NULL OR created_at < \(filter.to))
              AND (\(cursor?.time)::timestamptz IS NULL OR (created_at, id) < (\(cursor?.time), \(cursor?.id)))
            ORDER BY created_at DESC, id DESC
            LIMIT \(limit)
            """).map(Self.record(from:))
    }

    /// The app's chain head: how many rows it holds and the last row's hash; nil before its first row.
    public func head(of appId: UUID) async throws -> (count: Int64, hash: [UInt8])? {
        try await database.query("SELECT last_seq, last_hash FROM transaction_chain_heads WHERE app_id = \(appId)").first.map {
            (count: try $0.decode("last_seq"), hash: try $0.decode("last_hash"))
        }
    }

    /// Every app's chain length.
    public func lengths() async throws -> [(appId: UUID, count: Int64)] {
        try await database.query("SELECT app_id, last_seq FROM transaction_chain_heads").map {
            (appId: try $0.decode("app_id"), count: try $0.decode("last_seq"))
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
        /// With a checkpoint: whether the row it counted still holds the hash it signed.
        public var checkpoint: CheckpointResult?

        public struct CheckpointResult: Sendable, Codable {
            public var count: Int64
            public var issuedAt: Date
            public var ok: Bool
        }

        public init(appId: String, ok: Bool, checked: Int, firstBrokenTransactionId: String? = nil, checkpoint: CheckpointResult? = nil) {
            (self.appId, self.ok, self.checked, self.firstBrokenTransactionId, self.checkpoint) = (appId, ok, checked, firstBrokenTransactionId, checkpoint)
        }

        /// `firstBrokenTransactionId` is written as null when the chain is intact.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(appId, forKey: .appId)
            try container.encode(ok, forKey: .ok)
            try container.encode(checked, forKey: .checked)
            try container.encode(firstBrokenTransactionId, forKey: .firstBrokenTransactionId)
            try container.encodeIfPresent(checkpoint, forKey: .checkpoint)
        }
    }

    /// Recomputes the app's chain in order. A changed row breaks its own hash; a deleted or reordered
    /// row breaks the sequence or the link; a deleted tail no longer reaches the recorded head. A row keyed
    /// with an unknown key is broken, and so is an unkeyed (SHA-256) row — unless `acceptUnkeyed` allows the
    /// rows written before the chain was keyed, and then only before the first keyed row. With a
    /// checkpoint, the row it counted must still hold the hash it signed: that catches a deleted tail
    /// whose head was rewritten, and the deletion of everything since.
    public func verify(appId: UUID, checkpoint: AuditCheckpoint? = nil, acceptUnkeyed: Bool = false) async throws -> Verification {
        try await Tenant.run(app: appId) { try await verifyChain(appId: appId, checkpoint: checkpoint, acceptUnkeyed: acceptUnkeyed) }
    }

    private func verifyChain(appId: UUID, checkpoint: AuditCheckpoint?, acceptUnkeyed: Bool) async throws -> Verification {
        var expectedSeq: Int64 = 1
        var previous = TransactionRecord.genesisHash
        var checked = 0
        var broken: UUID?
        var keyed = false
        var checkpointHash: [UInt8]?
        try await database.forEachRow("""
            SELECT id, app_id, chain_seq, kind, outcome, user_id, device_id, client_ip, score, latency_ms, detail::text AS detail,
                   created_at, prev_hash, row_hash, hash_key_id
            FROM transactions WHERE app_id = \(appId) ORDER BY chain_seq
            """) { row in
            guard broken == nil else { return }
            let record = try Self.record(from: row)
            let seq = try row.decode("chain_seq", as: Int64.self)
            let storedPrevious = try row.decode("prev_hash", as: [UInt8].self)
            let storedHash = try row.decode("row_hash", as: [UInt8].self)
            let keyId = try row.decode("hash_key_id", as: String?.self)
            checked += 1
            let key = keyId.flatMap(keys.key(id:))
            keyed = keyed || keyId != nil
            if seq != expectedSeq || storedPrevious != previous || (keyId != nil && key == nil) || (keyId == nil && (keyed || !acceptUnkeyed))
                || record.rowHash(previousHash: previous, chainSeq: seq, key: key) != storedHash {
                broken = record.id
                return
            }
            if seq == checkpoint?.count { checkpointHash = storedHash }
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
        var verification = Verification(appId: appId.wire, ok: broken == nil, checked: checked, firstBrokenTransactionId: broken?.wire)
        if let checkpoint {
            let holds = checkpoint.count == 0 || checkpointHash.map { constantTimeEquals($0, checkpoint.head) } ?? false
            verification.checkpoint = .init(count: checkpoint.count, issuedAt: checkpoint.issuedAt, ok: holds)
            verification.ok = verification.ok && holds
        }
        return verification
    }
}

enum TransactionLogError: Error { case chainHeadMissing }
