import FaceGateCore
import Foundation
import HTTPServer
import KafkaClient
import ServiceKit
import Synchronization

/// Auditor API: read-only search, CSV export of any size, chain verification, and signed checkpoints of a chain head.
extension GatewayContext {
    func registerAuditRoutes(on router: APIRoutes) {
        let auditors = router.group(auditor)
        auditors.add("GET", "/v1/audit/transactions") { [self] request, scope in
            .json(try await auditTrail.search(Self.auditQuery(request), limit: Int(request.query["limit"] ?? ""), cursor: request.query["cursor"],
                                              scope: scope))
        }
        auditors.add("GET", "/v1/audit/transactions.csv") { [self] request, scope in try await exportTransactions(request, scope: scope) }
        auditors.add("GET", "/v1/audit/verify") { [self] request, scope in
            .json(try await auditTrail.verify(app: request.query["appId"], checkpoint: request.query["checkpoint"], scope: scope))
        }
        // The app's chain head, signed: keep it (or take it from `audit.transactions.v1`) and pass it to `/v1/audit/verify` later.
        auditors.add("GET", "/v1/audit/checkpoint") { [self] request, scope in
            .json(try await auditTrail.checkpoint(of: try auditTrail.app(request.query["appId"], scope: scope)))
        }
    }

    var auditTrail: AuditTrail {
        AuditTrail(records: transactions, keys: keySet, signingKey: signingKey, issuer: configuration.issuer,
                   acceptUnkeyed: configuration.acceptUnkeyedAuditRows)
    }

    static func auditQuery(_ request: HTTPRequest) -> AuditTrail.Query {
        AuditTrail.Query(appId: request.query["appId"], kind: request.query["kind"], outcome: request.query["outcome"],
                         userId: request.query["userId"], deviceId: request.query["deviceId"], from: request.query["from"], to: request.query["to"])
    }

    /// Streams every matching row, a page at a time: the server asks for the next page only when the
    /// client has taken the last one, so an export of any size holds about one page in memory.
    func exportTransactions(_ request: HTTPRequest, scope: [UUID]?) async throws -> HTTPResponse {
        let filter = try auditTrail.filter(Self.auditQuery(request), scope: scope)
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

    /// Signs the head of every chain that grew since this instance last did, and publishes it on the audit
    /// topic (header `facegate-type: audit.checkpoint`), so a copy lives outside the database.
    func publishCheckpoints(after published: inout [UUID: Int64]) async throws {
        for (appId, count) in try await Tenant.acrossApps({ try await transactions.lengths() }) {
            guard published[appId] != count else { continue }
            let signed = try await auditTrail.checkpoint(of: appId)
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
