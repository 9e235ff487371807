import FaceGateCore
import Foundation
import HTTPServer
import JWT
import KafkaClient
import ServiceKit
import Synchronization

/// Auditor API: read-only search, CSV export of any size, chain verification, and signed checkpoints of a chain head.
extension GatewayContext {
    func registerAuditRoutes(on router: APIRoutes) {
        let auditors = router.group(auditor)
        auditors.add("GET", "/v1/audit/transactions") { [self] request, scope in try await searchTransactions(request, scope: scope) }
        auditors.add("GET", "/v1/audit/transactions.csv") { [self] request, scope in try await exportTransactions(request, scope: scope) }
        auditors.add("GET", "/v1/audit/verify") { [self] request, scope in try await verifyChain(request, scope: scope) }
        // The app's chain head, signed: keep it (or take it from `audit.transactions.v1`) and pass it to `/v1/audit/verify` later.
        auditors.add("GET", "/v1/audit/checkpoint") { [self] request, scope in .json(try await signedCheckpoint(try auditedApp(request, scope: scope))) }
    }

    struct AuditItem: Encodable {
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
        }

        enum CodingKeys: String, CodingKey {
            case transactionId, appId, kind, outcome, userId, deviceId, clientIp, score, latencyMs, createdAt
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
        }

        static let csvHeader = "transactionId,appId,kind,outcome,userId,deviceId,clientIp,score,latencyMs,createdAt\r\n"

        var csvLine: String {
            let fields = [transactionId, appId, kind, outcome, userId ?? "", deviceId ?? "", clientIp ?? "", score.map { String($0) } ?? "",
                          String(latencyMs), RFC3339.string(from: createdAt)]
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

    /// Parses the query filters and narrows them to the apps this auditor may read.
    func auditFilter(_ request: HTTPRequest, scope: [UUID]?) throws -> TransactionLog.Filter {
        func uuid(_ name: String) throws -> UUID? {
            guard let text = request.query[name], !text.isEmpty else { return nil }
            guard let value = UUID(uuidString: text) else { throw APIError(.invalidRequest, "\(name) must be a UUID") }
            return value
        }
        func time(_ name: String) throws -> Date? {
            guard let text = request.query[name], !text.isEmpty else { return nil }
            guard let value = RFC3339.date(from: text) else { throw APIError(.invalidRequest, "\(name) must be an RFC 3339 time") }
            return value
        }
        var filter = TransactionLog.Filter(kind: request.query["kind"].flatMap { $0.isEmpty ? nil : $0 },
                                 outcome: request.query["outcome"].flatMap { $0.isEmpty ? nil : $0 },
                                 userId: try uuid("userId"), deviceId: request.query["deviceId"].flatMap { $0.isEmpty ? nil : $0 },
                                 from: try time("from"), to: try time("to"))
        if let appId = try uuid("appId") {
            if let scope, !scope.contains(appId) { throw APIError(.forbidden, "this auditor key does not cover that app") }
            filter.appIds = appId.uuidString.lowercased()
        } else if let scope {
            filter.appIds = scope.map { $0.uuidString.lowercased() }.joined(separator: ",")
        }
        return filter
    }

    func searchTransactions(_ request: HTTPRequest, scope: [UUID]?) async throws -> HTTPResponse {
        let filter = try auditFilter(request, scope: scope)
        let limit = min(max(Int(request.query["limit"] ?? "") ?? 100, 1), 1000)
        let cursor = try PageCursor.decode(request.query["cursor"])
        var items = try await transactions.page(filter, before: cursor.map { ($0.time, $0.id) }, limit: limit + 1).map(AuditItem.init)
        var next: String?
        if items.count > limit {
            items.removeLast()
            next = PageCursor(time: items.last!.createdAt, id: UUID(uuidString: items.last!.transactionId)!).encoded
        }
        struct Page: Encodable { var items: [AuditItem]; var nextCursor: String? }
        return .json(Page(items: items, nextCursor: next))
    }

    /// Streams every matching row, a page at a time: the server asks for the next page only when the
    /// client has taken the last one, so an export of any size holds about one page in memory.
    func exportTransactions(_ request: HTTPRequest, scope: [UUID]?) async throws -> HTTPResponse {
        let filter = try auditFilter(request, scope: scope)
        let (transactions, logger) = (self.transactions, self.logger)
        let pages = CSVPages()
        let stream = AsyncStream<[UInt8]> {
            guard let state = pages.next() else { return nil }
            if case .header = state { return Array(AuditItem.csvHeader.utf8) }
            guard case .after(let cursor) = state else { return nil }
            do {
                // The stream runs after the handler returned, outside the request's scope.
                let records = try await Tenant.acrossApps {
                    try await transactions.page(filter, before: cursor.map { ($0.time, $0.id) }, limit: 1000)
                }
                pages.advance(records.count < 1000 ? nil : records.last.map { PageCursor(time: $0.createdAt, id: $0.id) })
                return records.isEmpty ? [] : Array(records.map { AuditItem($0).csvLine }.joined().utf8)
            } catch {
                logger.error("CSV export stopped", ["error": "\(error)"])
                pages.advance(nil)
                return nil
            }
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/csv; charset=utf-8"),
                                                   ("Content-Disposition", "attachment; filename=\"transactions.csv\"")],
                            body: .stream(stream))
    }

    /// The `appId` query parameter of a per-app auditor call, checked against the caller's scope.
    private func auditedApp(_ request: HTTPRequest, scope: [UUID]?) throws -> UUID {
        guard let text = request.query["appId"], let appId = UUID(uuidString: text) else {
            throw APIError(.invalidRequest, "appId is required")
        }
        if let scope, !scope.contains(appId) { throw APIError(.forbidden, "this auditor key does not cover that app") }
        return appId
    }

    func verifyChain(_ request: HTTPRequest, scope: [UUID]?) async throws -> HTTPResponse {
        let appId = try auditedApp(request, scope: scope)
        let checkpoint = try request.query["checkpoint"].map { token in
            do {
                let claims = try JWT.verify(token, as: AuditCheckpoint.self, keys: keySet, type: AuditCheckpoint.type,
                                            issuer: configuration.issuer, audience: AuditCheckpoint.audience)
                guard claims.sub == appId.wire, claims.count >= 0 else { throw JWTError.audience }
                return claims
            } catch {
                throw APIError(.invalidRequest, "checkpoint is not one this platform signed for that app")
            }
        }
        return .json(try await transactions.verify(appId: appId, checkpoint: checkpoint, acceptUnkeyed: configuration.acceptUnkeyedAuditRows))
    }


    struct SignedCheckpoint: Encodable {
        var appId: String
        var count: Int64
        var headHash: String
        var issuedAt: Date
        var checkpoint: String
    }

    func signedCheckpoint(_ appId: UUID) async throws -> SignedCheckpoint {
        let head = try await Tenant.run(app: appId) { try await transactions.head(of: appId) }
        let claims = AuditCheckpoint(issuer: configuration.issuer, appId: appId, count: head?.count ?? 0,
                                     head: head?.hash ?? TransactionRecord.genesisHash)
        return SignedCheckpoint(appId: appId.wire, count: claims.count, headHash: claims.headHash, issuedAt: claims.issuedAt,
                                checkpoint: try JWT.sign(claims, type: AuditCheckpoint.type, key: signingKey))
    }

    /// Signs the head of every chain that grew since this instance last did, and publishes it on the audit
    /// topic (header `facegate-type: audit.checkpoint`), so a copy lives outside the database.
    func publishCheckpoints(after published: inout [UUID: Int64]) async throws {
        for (appId, count) in try await Tenant.acrossApps({ try await transactions.lengths() }) {
            guard published[appId] != count else { continue }
            let signed = try await signedCheckpoint(appId)
            _ = try await producer.send(KafkaRecord(topic: runtime.topics.auditTransactions, key: Array(appId.wire.utf8), value: try FaceGateJSON.encode(signed),
                                                    headers: [KafkaHeader(key: MessageHeader.messageType, value: Array("audit.checkpoint".utf8))]))
            published[appId] = signed.count
        }
    }
}

/// Where a CSV export stands: the header next, a page after a cursor, or done.
final class CSVPages: Sendable {
    enum State { case header, after(PageCursor?), done }
    private let state = Mutex<State>(.header)

    func next() -> State? {
        state.withLock { current in
            switch current {
            case .header:
                current = .after(nil)
                return .header
            case .after(let cursor): return .after(cursor)
            case .done: return nil
            }
        }
    }

    /// After a page: the cursor of the next one, or nil when that was the last.
    func advance(_ cursor: PageCursor?) {
        state.withLock { $0 = cursor.map { .after($0) } ?? .done }
    }
}
