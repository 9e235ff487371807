import AuditRecords
import AppRecords
import FaceGateCore
import Foundation
import HTTPServer
import ServiceKit

/// Auditor API: read-only search, CSV export of any size, chain verification, and signed checkpoints of a chain head.
struct AuditRoutes: RouteCollection {
    let auditTrail: AuditTrail
    let apps: any AppStore

    func boot(_ routes: APIRoutes) {
        let auditors = routes.group(\.auditor, tag: .audit)
        auditors.add("GET", "/v1/audit/transactions", "searchTransactions", "Search transactions (newest first, cursor pages)",
                     parameters: Self.filters + [Parameter(name: "limit", schema: ["type": "integer", "minimum": 1, "maximum": 1000, "default": 100]), .cursor],
                     answers: [.ok(AuditTrail.Page.self, "One page")], errors: [.forbidden], because: Self.coverage) { request, context in
            .json(try await auditTrail.search(Self.query(request), limit: Int(request.query["limit"] ?? ""), cursor: request.query["cursor"],
                                              scope: context.caller))
        }
        auditors.add("GET", "/v1/audit/transactions.csv", "exportTransactions",
                     "Export transactions as CSV (same filters, streamed; the columns of Transaction)", parameters: Self.filters,
                     answers: [.content("RFC 4180 CSV with a header row", [("text/csv", ["type": "string"])])], errors: [.forbidden],
                     because: Self.coverage) { request, context in try export(request, context) }
        auditors.add("GET", "/v1/audit/verify", "verifyTransactionChain", "Verify an app's transaction hash chain",
                     parameters: [Self.app, Parameter(name: "checkpoint", schema: ["type": "string"], description: """
                         A checkpoint kept from GET /v1/audit/checkpoint (or the audit topic): also catches a removed tail or a deleted trail
                         """)],
                     answers: [.ok(TransactionLog.Verification.self, "The verification")], errors: [.forbidden],
                     because: Self.coverage.merging([.invalidRequest: "no appId, or a checkpoint this platform did not sign for that app"]) { $1 }) { request, context in
            .json(try await auditTrail.verify(app: request.query["appId"], checkpoint: request.query["checkpoint"], scope: context.caller))
        }
        // The names of the apps the key reads, so an auditor's tools can show names instead of ids.
        auditors.add("GET", "/v1/audit/apps", "listAuditedApps", """
            The id and name of every app the key reads (its apps; every app for an operator key or an auditor key with allApps), \
            oldest first, of the first 1,000 apps; deleted apps are not listed
            """, answers: [.ok(AuditedApps.self, "The apps")]) { _, context in
            let scope = context.caller
            return .json(AuditedApps(items: try await apps.all { scope?.contains($0) ?? true }.map { AuditedApps.App(appId: $0.id.wire, name: $0.name) }))
        }
        // The app's chain head, signed: keep it (or take it from `audit.transactions.v1`) and pass it to `/v1/audit/verify` later.
        auditors.add("GET", "/v1/audit/checkpoint", "getAuditCheckpoint", "The app's chain head (row count and last hash), signed",
                     parameters: [Self.app], answers: [.ok(AuditTrail.SignedCheckpoint.self, "The checkpoint")], errors: [.forbidden],
                     because: Self.coverage) { request, context in
            .json(try await auditTrail.checkpoint(of: try auditTrail.app(request.query["appId"], scope: context.caller)))
        }
    }

    struct AuditedApps: Codable, DocumentedSchema {
        static let schemaName = "AuditedAppList"
        struct App: Codable { var appId: String; var name: String }
        var items: [App]
    }

    /// The filters of a search and an export (`query`).
    static let filters = [
        Parameter(name: "appId", schema: ["type": "string", "format": "uuid"]), Parameter(name: "kind", schema: ["type": "string"]),
        Parameter(name: "outcome", schema: ["type": "string"]), Parameter(name: "userId", schema: ["type": "string", "format": "uuid"]),
        Parameter(name: "deviceId", schema: ["type": "string"]), Parameter(name: "from", schema: ["type": "string", "format": "date-time"]),
        Parameter(name: "to", schema: ["type": "string", "format": "date-time"]),
    ]
    private static let app = Parameter(name: "appId", schema: ["type": "string", "format": "uuid"], required: true)
    private static let coverage: [ErrorCode: String] = [.forbidden: "the key does not cover that app"]

    static func query(_ request: HTTPRequest) -> AuditTrail.Query {
        AuditTrail.Query(appId: request.query["appId"], kind: request.query["kind"], outcome: request.query["outcome"],
                         userId: request.query["userId"], deviceId: request.query["deviceId"], from: request.query["from"], to: request.query["to"])
    }

    /// Streams every matching row (`AuditExport`): the server reads the next page only when the client has taken the last.
    private func export(_ request: HTTPRequest, _ context: CallContext<[UUID]?>) throws -> HTTPResponse {
        let export = try auditTrail.export(Self.query(request), scope: context.caller)
        let logger = context.calls.logger
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
}
