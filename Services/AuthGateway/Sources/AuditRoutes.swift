import FaceGateCore
import Foundation
import HTTPServer
import KafkaClient
import ServiceKit

/// Auditor API: read-only search, CSV export of any size, chain verification, and signed checkpoints of a chain head.
extension GatewayContext {
    func registerAuditRoutes(on router: APIRoutes) {
        let auditors = router.group(auditor)
        auditors.add("GET", "/v1/audit/transactions", answers: [AuditTrail.Page.self]) { [self] request, scope in
            .json(try await auditTrail.search(Self.auditQuery(request), limit: Int(request.query["limit"] ?? ""), cursor: request.query["cursor"],
                                              scope: scope))
        }
        auditors.add("GET", "/v1/audit/transactions.csv", answers: []) { [self] request, scope in try await exportTransactions(request, scope: scope) }
        auditors.add("GET", "/v1/audit/verify", answers: [TransactionLog.Verification.self]) { [self] request, scope in
            .json(try await auditTrail.verify(app: request.query["appId"], checkpoint: request.query["checkpoint"], scope: scope))
        }
        // The names of the apps the key reads, so an auditor's tools can show names instead of ids.
        auditors.add("GET", "/v1/audit/apps", answers: [AuditedApps.self]) { [self] _, scope in
            .json(AuditedApps(items: try await apps.all { scope?.contains($0) ?? true }.map { AuditedApps.App(appId: $0.id.wire, name: $0.name) }))
        }
        // The app's chain head, signed: keep it (or take it from `audit.transactions.v1`) and pass it to `/v1/audit/verify` later.
        auditors.add("GET", "/v1/audit/checkpoint", answers: [AuditTrail.SignedCheckpoint.self]) { [self] request, scope in
            .json(try await auditTrail.checkpoint(of: try auditTrail.app(request.query["appId"], scope: scope)))
        }
    }

    struct AuditedApps: Encodable {
        struct App: Encodable { var appId: String; var name: String }
        var items: [App]
    }

    var auditTrail: AuditTrail {
        AuditTrail(records: transactions, keys: keySet, signingKey: signingKey, issuer: configuration.issuer,
                   acceptUnkeyed: configuration.acceptUnkeyedAuditRows)
    }

    static func auditQuery(_ request: HTTPRequest) -> AuditTrail.Query {
        AuditTrail.Query(appId: request.query["appId"], kind: request.query["kind"], outcome: request.query["outcome"],
                         userId: request.query["userId"], deviceId: request.query["deviceId"], from: request.query["from"], to: request.query["to"])
    }

    /// Streams every matching row (`AuditExport`): the server reads the next page only when the client has taken the last.
    func exportTransactions(_ request: HTTPRequest, scope: [UUID]?) async throws -> HTTPResponse {
        let export = try auditTrail.export(Self.auditQuery(request), scope: scope)
        let logger = self.logger
        let stream = AsyncStream<[UInt8]> {
            do {
                // The stream runs after the handler returned, outside the request's scope.
                return try await Tenant.acrossApps { try await export.next() }
            } catch {
                logger.error("CSV export stopped", ["error": "\(error)"])
                return nil
            }
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/csv; charset=utf-8"),
                                                   ("Content-Disposition", "attachment; filename=\"transactions.csv\"")],
                            body: .stream(stream))
    }

    /// Publishes the checkpoints of the chains that grew (`AuditTrail.publishCheckpoints`) on the audit topic, with the
    /// header `facegate-type: audit.checkpoint`.
    func publishCheckpoints(after published: inout [UUID: Int64]) async throws {
        try await auditTrail.publishCheckpoints(after: &published) { [self] signed in
            _ = try await producer.send(KafkaRecord(topic: runtime.topics.auditTransactions, key: Array(signed.appId.utf8), value: try FaceGateJSON.encode(signed),
                                                    headers: [KafkaHeader(key: MessageHeader.messageType, value: Array("audit.checkpoint".utf8)), TraceContext.header]))
        }
    }
}
