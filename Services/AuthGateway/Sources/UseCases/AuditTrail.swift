import AuditRecords
import FaceGateCore
import Foundation
import JWT
import ServiceKit
import Synchronization

/// The reads an auditor's calls make of the audit trail (`TransactionLog`).
protocol AuditRecords: Sendable {
    /// Up to `limit` matching transactions, newest first, older than `cursor` when given.
    func page(_ filter: TransactionLog.Filter, before cursor: (time: Date, id: UUID)?, limit: Int) async throws -> [TransactionRecord]
    /// The app's chain head (row count and the last row's hash); nil before its first row.
    func head(of appId: UUID) async throws -> (count: Int64, hash: [UInt8])?
    /// Every app's chain length (rows), read across apps.
    func lengths() async throws -> [(appId: UUID, count: Int64)]
    /// Recomputes the app's chain; with a checkpoint, also checks the row it counted.
    func verify(appId: UUID, checkpoint: AuditCheckpoint?, acceptUnkeyed: Bool) async throws -> TransactionLog.Verification
}

extension TransactionLog: AuditRecords {}

/// An auditor's reads (`/v1/audit/…`), without HTTP: searches narrowed to the apps the auditor's key covers, chain
/// verification against a checkpoint only this platform signed, and signed checkpoints of a chain head.
struct AuditTrail: Sendable {
    let records: any AuditRecords
    /// The gateway's token keys: a checkpoint must carry one of their signatures.
    let keys: JWTKeySet
    let signingKey: JWTSigningKey
    let issuer: String
    /// Rows written before the chain was keyed pass verification (`FACEGATE_ACCEPT_UNKEYED_AUDIT_ROWS`).
    let acceptUnkeyed: Bool

    /// A search as sent: an absent or empty value matches every row.
    struct Query: Sendable {
        var appId: String?
        var kind: String?
        var outcome: String?
        var userId: String?
        var deviceId: String?
        /// RFC 3339; from inclusive, to exclusive.
        var from: String?
        var to: String?
    }

    struct Page: Codable, Sendable {
        var items: [AuditItem]
        /// Opaque (`PageCursor`); absent on the last page.
        var nextCursor: String?
    }

    struct SignedCheckpoint: Codable, Sendable {
        var appId: String
        var count: Int64
        var headHash: String
        var issuedAt: Date
        var checkpoint: String
    }

    /// The query's filters, narrowed to the apps `scope` covers (nil: every app); naming an app outside it is
    /// `FORBIDDEN`.
    func filter(_ query: Query, scope: [UUID]?) throws -> TransactionLog.Filter {
        func present(_ value: String?) -> String? { value.flatMap { $0.isEmpty ? nil : $0 } }
        func uuid(_ value: String?, _ name: String) throws -> UUID? {
            guard let text = present(value) else { return nil }
            guard let id = UUID(uuidString: text) else { throw APIError(.invalidRequest, "\(name) must be a UUID") }
            return id
        }
        func time(_ value: String?, _ name: String) throws -> Date? {
            guard let text = present(value) else { return nil }
            guard let date = RFC3339.date(from: text) else { throw APIError(.invalidRequest, "\(name) must be an RFC 3339 time") }
            return date
        }
        var filter = TransactionLog.Filter(kind: present(query.kind), outcome: present(query.outcome), userId: try uuid(query.userId, "userId"),
                                           deviceId: present(query.deviceId), from: try time(query.from, "from"), to: try time(query.to, "to"))
        if let appId = try uuid(query.appId, "appId") {
            try Self.check(appId, in: scope)
            filter.appIds = appId.wire
        } else if let scope {
            filter.appIds = scope.map(\.wire).joined(separator: ",")
        }
        return filter
    }

    /// Newest first; `limit` is held to 1…1000 (100 when absent).
    func search(_ query: Query, limit: Int?, cursor: String?, scope: [UUID]?) async throws -> Page {
        let filter = try self.filter(query, scope: scope)
        let limit = min(max(limit ?? 100, 1), 1000)
        let cursor = try PageCursor.decode(cursor)
        let rows = try await records.page(filter, before: cursor.map { ($0.time, $0.id) }, limit: limit + 1)
        let (items, next) = PageCursor.page(rows, limit: limit) { PageCursor(time: $0.createdAt, id: $0.id) }
        return Page(items: items.map(AuditItem.init), nextCursor: next)
    }

    /// Every matching row as CSV (header first, newest first), read a page of `pageSize` at a time as the export is taken.
    func export(_ query: Query, scope: [UUID]?, pageSize: Int = 1000) throws -> AuditExport {
        AuditExport(records: records, filter: try filter(query, scope: scope), pageSize: pageSize)
    }

    /// The app of a per-app call (required), checked against the caller's scope.
    func app(_ appId: String?, scope: [UUID]?) throws -> UUID {
        guard let appId = appId.flatMap(UUID.init(uuidString:)) else { throw APIError(.invalidRequest, "appId is required") }
        try Self.check(appId, in: scope)
        return appId
    }

    /// Verifies the app's chain, and with `checkpoint` (a token this platform signed for that app) the row it counted.
    func verify(app: String?, checkpoint: String?, scope: [UUID]?) async throws -> TransactionLog.Verification {
        let appId = try self.app(app, scope: scope)
        let claims = try checkpoint.map { token in
            do {
                let claims = try JWT.verify(token, as: AuditCheckpoint.self, keys: keys, type: AuditCheckpoint.type, issuer: issuer,
                                            audience: AuditCheckpoint.audience)
                guard claims.sub == appId.wire, claims.count >= 0 else { throw JWTError.audience }
                return claims
            } catch {
                throw APIError(.invalidRequest, "checkpoint is not one this platform signed for that app")
            }
        }
        return try await records.verify(appId: appId, checkpoint: claims, acceptUnkeyed: acceptUnkeyed)
    }

    /// The app's chain head, signed: kept by the auditor (or taken from `audit.transactions.v1`) and passed to `verify`.
    func checkpoint(of appId: UUID) async throws -> SignedCheckpoint {
        let head = try await Tenant.run(app: appId) { try await records.head(of: appId) }
        let claims = AuditCheckpoint(issuer: issuer, appId: appId, count: head?.count ?? 0, head: head?.hash ?? TransactionRecord.genesisHash)
        return SignedCheckpoint(appId: appId.wire, count: claims.count, headHash: claims.headHash, issuedAt: claims.issuedAt,
                                checkpoint: try JWT.sign(claims, type: AuditCheckpoint.type, key: signingKey))
    }

    /// Signs the head of every chain that grew since `published` (the lengths last published, updated here) and hands
    /// each checkpoint to `publish`, so a copy lives outside the database.
    func publishCheckpoints(after published: inout [UUID: Int64], _ publish: (SignedCheckpoint) async throws -> Void) async throws {
        for (appId, count) in try await Tenant.acrossApps({ try await records.lengths() }) where published[appId] != count {
            let signed = try await checkpoint(of: appId)
            try await publish(signed)
            published[appId] = signed.count
        }
    }

    private static func check(_ appId: UUID, in scope: [UUID]?) throws {
        if let scope, !scope.contains(appId) { throw APIError(.forbidden, "this auditor key does not cover that app") }
    }
}

/// A transaction as auditors read it, in JSON and in CSV.
struct AuditItem: Codable, Sendable {
    var transactionId: String
    var appId: String
    var kind: String
    var outcome: String
    var userId: String?
    var deviceId: String?
    var clientIp: String?
    var score: Float?
    var latencyMs: Int
    var createdAt: Date
    /// Who acted: `{type, id}`, type `operator` (id: the key's id, or `bootstrap`), `auditor`, `appServer` (the app),
    /// `client` (the device), `kiosk` or `service`; null where no caller was authenticated (a refused credential).
    var actor: Actor?
    /// What an administrative call changed, `{"field": [old, new]}`; null on other rows. Never a secret or a photo.
    var change: JSONValue?
    /// The row's other context (ids it touched, counts, masked numbers).
    var detail: [String: String]

    struct Actor: Codable, Sendable {
        var type: String
        var id: String?
    }

    init(_ record: TransactionRecord) {
        transactionId = record.id.wire
        appId = record.appId.wire
        kind = record.kind
        outcome = record.outcome
        userId = record.userId?.wire
        deviceId = record.deviceId
        clientIp = record.clientIp
        score = record.score
        latencyMs = record.latencyMs
        createdAt = record.createdAt
        actor = record.detail[TransactionRecord.actorKey].map { text in
            let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
            return Actor(type: parts[0], id: parts.count > 1 ? parts[1] : nil)
        }
        change = record.detail[TransactionRecord.changeKey].flatMap { try? FaceGateJSON.decode(JSONValue.self, from: Array($0.utf8)) }
        detail = record.detail.filter { $0.key != TransactionRecord.actorKey && $0.key != TransactionRecord.changeKey }
    }

    enum CodingKeys: String, CodingKey {
        case transactionId, appId, kind, outcome, userId, deviceId, clientIp, score, latencyMs, createdAt, actor, change, detail
    }

    /// Absent values are written as null, so every item has every field the API lists.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(transactionId, forKey: .transactionId)
        try container.encode(appId, forKey: .appId)
        try container.encode(kind, forKey: .kind)
        try container.encode(outcome, forKey: .outcome)
        try container.encode(userId, forKey: .userId)
        try container.encode(deviceId, forKey: .deviceId)
        try container.encode(clientIp, forKey: .clientIp)
        try container.encode(score, forKey: .score)
        try container.encode(latencyMs, forKey: .latencyMs)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(actor, forKey: .actor)
        try container.encode(change, forKey: .change)
        try container.encode(detail, forKey: .detail)
    }

    static let csvHeader = "transactionId,appId,kind,outcome,userId,deviceId,clientIp,score,latencyMs,createdAt,actorType,actorId,change,detail\r\n"

    var csvLine: String {
        func json<T: Encodable>(_ value: T?) -> String { value.map { String(decoding: (try? FaceGateJSON.encode($0)) ?? [], as: UTF8.self) } ?? "" }
        let fields = [transactionId, appId, kind, outcome, userId ?? "", deviceId ?? "", clientIp ?? "", score.map { String($0) } ?? "",
                      String(latencyMs), RFC3339.string(from: createdAt), actor?.type ?? "", actor?.id ?? "", json(change),
                      detail.isEmpty ? "" : json(detail)]
        return fields.map(Self.csvField).joined(separator: ",") + "\r\n"
    }

    /// RFC 4180 quoting, and a leading quote mark against formula injection in spreadsheets.
    static func csvField(_ value: String) -> String {
        var text = value
        if let first = text.first, "=+-@".contains(first) { text = "'" + text }
        guard text.contains(where: { ",\"\r\n".contains($0) }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// A CSV export under way: each `next()` gives the header, then one page of rows, until nil. A page is read only when
/// the previous one has been taken, so an export of any size holds about one page; a failed read ends the export.
final class AuditExport: Sendable {
    private enum Position { case header, after(PageCursor?), done }
    private let records: any AuditRecords
    private let filter: TransactionLog.Filter
    private let pageSize: Int
    private let position = Mutex(Position.header)

    init(records: any AuditRecords, filter: TransactionLog.Filter, pageSize: Int) {
        self.records = records
        self.filter = filter
        self.pageSize = pageSize
    }

    func next() async throws -> [UInt8]? {
        let current = position.withLock { position -> Position in
            defer { if case .header = position { position = .after(nil) } }
            return position
        }
        let cursor: PageCursor?
        switch current {
        case .done: return nil
        case .header: return Array(AuditItem.csvHeader.utf8)
        case .after(let after): cursor = after
        }
        let rows: [TransactionRecord]
        do {
            rows = try await records.page(filter, before: cursor.map { ($0.time, $0.id) }, limit: pageSize)
        } catch {
            position.withLock { $0 = .done }
            throw error
        }
        let next = rows.count < pageSize ? nil : rows.last.map { PageCursor(time: $0.createdAt, id: $0.id) }
        position.withLock { $0 = next.map { .after($0) } ?? .done }
        return Array(rows.map { AuditItem($0).csvLine }.joined().utf8)
    }
}


/// Any JSON value: what an administrative change held before and after, whatever the setting's shape.
indirect enum JSONValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null
        } else if let value = try? container.decode(Bool.self) { self = .bool(value)
        } else if let value = try? container.decode(Double.self) { self = .number(value)
        } else if let value = try? container.decode(String.self) { self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) { self = .array(value)
        } else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// `value` as JSON (how it encodes on the wire).
    init<T: Encodable>(encoding value: T) throws {
        self = try FaceGateJSON.decode(JSONValue.self, from: try FaceGateJSON.encode(value))
    }
}
