import FaceGateCore
import Foundation
import HTTPServer
import ServiceKit

/// Auditor API: read-only search, CSV export of any size, chain verification, and signed checkpoints of a chain head.
struct AuditRoutes: RouteCollection {
    let auditTrail: AuditTrail
    let apps: any AppStore

    func boot(_ routes: APIRoutes) {
        let auditors = routes.group(\.auditor)
        auditors.add("GET", "/v1/audit/transactions", answers: [AuditTrail.Page.self]) { request, context in
            .json(try await auditTrail.search(Self.query(request), limit: Int(request.query["limit"] ?? ""), cursor: request.query["cursor"],
                                              scope: context.caller))
        }
        auditors.add("GET", "/v1/audit/transactions.csv", answers: []) { request, context in try export(request, context) }
        auditors.add("GET", "/v1/audit/verify", answers: [TransactionLog.Verification.self]) { request, context in
            .json(try await auditTrail.verify(app: request.query["appId"], checkpoint: request.query["checkpoint"], scope: context.caller))
        }
        // The names of the apps the key reads, so an auditor's tools can show names instead of ids.
        auditors.add("GET", "/v1/audit/apps", answers: [AuditedApps.self]) { _, context in
            let scope = context.caller
            return .json(AuditedApps(items: try await apps.all { scope?.contains($0) ?? true }.map { AuditedApps.App(appId: $0.id.wire, name: $0.name) }))
        }
        // The app's chain head, signed: keep it (or take it from `audit.transactions.v1`) and pass it to `/v1/audit/verify` later.
        auditors.add("GET", "/v1/audit/checkpoint", answers: [AuditTrail.SignedCheckpoint.self]) { request, context in
            .json(try await auditTrail.checkpoint(of: try auditTrail.app(request.query["appId"], scope: context.caller)))
        }
    }

    struct AuditedApps: Encodable {
        struct App: Encodable { var appId: String; var name: String }
        var items: [App]
    }

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
