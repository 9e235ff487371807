import FaceGateCore
import Foundation
import HTTPServer

/// Operator and auditor keys, managed by an operator whose key covers every app (the rules are `AccessKeys`'). Each
/// action is a transaction on the platform chain.
struct KeyRoutes: RouteCollection {
    let accessKeys: AccessKeys

    func boot(_ routes: APIRoutes) {
        let operators = routes.group(\.globalOperator)
        for (role, path, parameter) in [(AccessKeys.Role.operator, "/v1/operator-keys", "operatorKeyId"), (.auditor, "/v1/auditors", "auditorId")] {
            operators.add("POST", path, answers: [AccessKeys.Created.self], maxBodyBytes: 16 << 10, idempotent: true) { request, context in
                try await create(request, context, role: role)
            }
            operators.add("GET", path, answers: [KeyPage.self]) { _, _ in .json(KeyPage(items: try await accessKeys.list(role))) }
            operators.add("DELETE", path + "/{\(parameter)}", answers: []) { request, context in
                let keyId = try request.uuidParameter(parameter)
                return try await context.recorded(kind: "\(role.rawValue)-key.revoke", appId: platformAppId) { draft in
                    try await accessKeys.revoke(keyId, role: role, draft: &draft)
                    return .noContent
                }
            }
        }
    }

    struct KeyPage: Encodable { var items: [AccessKeys.View] }

    /// The request is checked (name, expiry, apps) before anything is recorded.
    private func create(_ request: HTTPRequest, _ context: CallContext<Callers.OperatorScope>, role: AccessKeys.Role) async throws -> HTTPResponse {
        let key = try await accessKeys.check(try request.decodeJSON(AccessKeys.NewKey.self), role: role)
        return try await context.recorded(kind: "\(role.rawValue)-key.create", appId: platformAppId) { draft in
            .json(try await accessKeys.create(key, draft: &draft), status: 201)
        }
    }
}
