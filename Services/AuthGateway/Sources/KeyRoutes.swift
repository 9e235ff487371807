import FaceGateCore
import Foundation
import HTTPServer

/// Operator and auditor keys, managed by an operator whose key covers every app (the rules are `AccessKeys`'). Each
/// action is a transaction on the platform chain.
extension GatewayContext {
    func registerKeyRoutes(on router: APIRoutes) {
        let operators = router.group(globalOperator)
        operators.add("POST", "/v1/operator-keys", answers: [AccessKeys.Created.self], maxBodyBytes: 16 << 10, idempotent: true) { [self] request, _ in
            try await createKey(request, role: .operator)
        }
        operators.add("GET", "/v1/operator-keys", answers: [KeyPage.self]) { [self] _, _ in try await listKeys(role: .operator) }
        operators.add("DELETE", "/v1/operator-keys/{operatorKeyId}", answers: []) { [self] request, _ in
            try await revokeKey(request, role: .operator, parameter: "operatorKeyId")
        }
        operators.add("POST", "/v1/auditors", answers: [AccessKeys.Created.self], maxBodyBytes: 16 << 10, idempotent: true) { [self] request, _ in
            try await createKey(request, role: .auditor)
        }
        operators.add("GET", "/v1/auditors", answers: [KeyPage.self]) { [self] _, _ in try await listKeys(role: .auditor) }
        operators.add("DELETE", "/v1/auditors/{auditorId}", answers: []) { [self] request, _ in
            try await revokeKey(request, role: .auditor, parameter: "auditorId")
        }
    }

    var accessKeys: AccessKeys { AccessKeys(keys: apiKeys, apps: apps) }

    /// The request is checked (name, expiry, apps) before anything is recorded.
    func createKey(_ request: HTTPRequest, role: AccessKeys.Role) async throws -> HTTPResponse {
        let key = try await accessKeys.check(try request.decodeJSON(AccessKeys.NewKey.self), role: role)
        return try await recorded(request, kind: "\(role.rawValue)-key.create", appId: platformAppId) { draft in
            .json(try await accessKeys.create(key, draft: &draft), status: 201)
        }
    }

    struct KeyPage: Encodable { var items: [AccessKeys.View] }

    func listKeys(role: AccessKeys.Role) async throws -> HTTPResponse { .json(KeyPage(items: try await accessKeys.list(role))) }

    func revokeKey(_ request: HTTPRequest, role: AccessKeys.Role, parameter: String) async throws -> HTTPResponse {
        let keyId = try request.uuidParameter(parameter)
        return try await recorded(request, kind: "\(role.rawValue)-key.revoke", appId: platformAppId) { draft in
            try await accessKeys.revoke(keyId, role: role, draft: &draft)
            return .noContent
        }
    }
}
