import AppRecords
import FaceGateCore
import Foundation
import HTTPServer

/// Operator and auditor keys, managed by an operator whose key covers every app (the rules are `AccessKeys`'). Each
/// action is a transaction on the platform chain.
struct KeyRoutes: RouteCollection {
    let accessKeys: AccessKeys

    func boot(_ routes: APIRoutes) {
        let operators = routes.group(\.globalOperator, tag: .keys)
        for role in [AccessKeys.Role.operator, .auditor] {
            let (path, parameter, name) = role == .operator ? ("/v1/operator-keys", "operatorKeyId", "Operator") : ("/v1/auditors", "auditorId", "Auditor")
            let created: Answer = role == .operator ? .created(CreatedOperatorKey.self, "Created; the key is shown only here")
                : .created(CreatedAuditorKey.self, "Created; the key is shown only here")
            operators.add("POST", path, "create\(name)Key", role == .operator ? "Create an operator key, for every app or some"
                          : "Create an auditor key, for every app or some", body: .json(AccessKeys.NewKey.self), answers: [created],
                          maxBodyBytes: 16 << 10, idempotent: true) { request, context in
                try await create(request, context, role: role)
            }
            operators.add("GET", path, "list\(name)Keys", "List \(name.lowercased()) keys (never the secret), revoked and expired ones included",
                          answers: [.ok(KeyPage.self, "The keys")]) { _, _ in .json(KeyPage(items: try await accessKeys.list(role))) }
            operators.add("DELETE", path + "/{\(parameter)}", "revoke\(name)Key", "Revoke an \(name.lowercased()) key; it stops working at once",
                          answers: [.noContent("Revoked")], errors: [.notFound]) { request, context in
                let keyId = try request.uuidParameter(parameter)
                return try await context.recorded(kind: "\(role.rawValue)-key.revoke", appId: platformAppId) { draft in
                    try await accessKeys.revoke(keyId, role: role, draft: &draft)
                    return .noContent
                }
            }
        }
    }

    struct KeyPage: Codable, DocumentedSchema {
        static let schemaName = "ApiKeyList"
        var items: [AccessKeys.View]
    }

    /// `AccessKeys.Created` of an operator key, as the wire has it.
    struct CreatedOperatorKey: Codable, DocumentedSchema {
        var operatorKeyId: UUID
        var operatorKey: String
        var name: String?
        var appIds: [UUID]?
        var expiresAt: Date?
    }

    /// `AccessKeys.Created` of an auditor key, as the wire has it.
    struct CreatedAuditorKey: Codable, DocumentedSchema {
        var auditorId: UUID
        var auditorKey: String
        var name: String?
        var appIds: [UUID]?
        var expiresAt: Date?
    }

    /// The request is checked (name, expiry, apps) before anything is recorded.
    private func create(_ request: HTTPRequest, _ context: CallContext<Callers.OperatorScope>, role: AccessKeys.Role) async throws -> HTTPResponse {
        let key = try await accessKeys.check(try request.decodeJSON(AccessKeys.NewKey.self), role: role)
        return try await context.recorded(kind: "\(role.rawValue)-key.create", appId: platformAppId) { draft in
            .json(try await accessKeys.create(key, draft: &draft), status: 201)
        }
    }
}
