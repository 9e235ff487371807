import Crypto
import FaceGateCore
import Foundation
import HTTPServer

/// Operator and auditor keys, managed by an operator whose key covers every app: created (the secret is
/// shown once; only its SHA-256 is stored), listed (never the secret), revoked, and optionally expiring.
/// Every gateway reads keys from PostgreSQL on each call, so a revocation holds everywhere at once.
/// Each action is a transaction on the platform chain.
extension GatewayContext {
    func registerKeyRoutes(on router: APIRoutes) {
        let operators = router.group(globalOperator)
        operators.add("POST", "/v1/operator-keys", maxBodyBytes: 16 << 10, idempotent: true) { [self] request, _ in
            try await createKey(request, role: .operator)
        }
        operators.add("GET", "/v1/operator-keys") { [self] _, _ in try await listKeys(role: .operator) }
        operators.add("DELETE", "/v1/operator-keys/{operatorKeyId}") { [self] request, _ in
            try await revokeKey(request, role: .operator, parameter: "operatorKeyId")
        }
        operators.add("POST", "/v1/auditors", maxBodyBytes: 16 << 10, idempotent: true) { [self] request, _ in
            try await createKey(request, role: .auditor)
        }
        operators.add("GET", "/v1/auditors") { [self] _, _ in try await listKeys(role: .auditor) }
        operators.add("DELETE", "/v1/auditors/{auditorId}") { [self] request, _ in
            try await revokeKey(request, role: .auditor, parameter: "auditorId")
        }
    }

    enum KeyRole: String {
        case `operator`, auditor

        /// The stored role name.
        var column: String { self == .operator ? "admin" : "auditor" }
        var prefix: String { self == .operator ? "fgo_" : "fga_" }
    }

    struct CreateKeyBody: Decodable {
        var name: String
        var appIds: [UUID]?
        /// Auditor keys: every app. Without it and without `appIds` an auditor key covers no app (default deny).
        var allApps: Bool?
        /// Seconds from now (API.md), or an absolute time.
        var expiresIn: Int?
        var expiresAt: Date?
    }

    func createKey(_ request: HTTPRequest, role: KeyRole) async throws -> HTTPResponse {
        let body = try request.decodeJSON(CreateKeyBody.self)
        let name = body.name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...200).contains(name.count) else { throw APIError(.invalidRequest, "name must be 1–200 characters") }
        guard body.expiresIn == nil || body.expiresAt == nil else { throw APIError(.invalidRequest, "send expiresIn or expiresAt, not both") }
        if let seconds = body.expiresIn, !(1...(10 * 366 * 86400)).contains(seconds) { throw APIError(.invalidRequest, "expiresIn must be 1 s to 10 years") }
        let expiresAt = body.expiresAt ?? body.expiresIn.map { Date(timeIntervalSinceNow: TimeInterval($0)) }
        if let expiresAt, expiresAt <= Date() { throw APIError(.invalidRequest, "expiresAt must be in the future") }
        if let appIds = body.appIds {
            guard (1...1000).contains(appIds.count) else { throw APIError(.invalidRequest, "appIds must name 1–1000 apps") }
            for appId in appIds where try await apps.find(appId) == nil { throw APIError(.invalidRequest, "no app \(appId.wire)") }
        }
        // An operator key without apps is for every app; an auditor key reads only what it is given.
        if body.allApps == true, body.appIds != nil { throw APIError(.invalidRequest, "send appIds or allApps, not both") }
        let appIds = role == .auditor && body.allApps != true ? body.appIds ?? [] : body.appIds
        let secret = newSecret(prefix: role.prefix)
        let keyId = UUID()
        return try await recorded(request, kind: "\(role.rawValue)-key.create", appId: platformAppId) { draft in
            try await apiKeys.create(id: keyId, role: role.column, name: name, hash: SHA256.hash(Array(secret.utf8)), appIds: appIds,
                                     expiresAt: expiresAt)
            draft.detail = ["keyId": keyId.wire, "name": name]
            let appIds = appIds?.map(\.wire)
            if role == .auditor {
                struct Created: Encodable { var auditorId: String; var auditorKey: String; var name: String; var appIds: [String]?; var expiresAt: Date? }
                return .json(Created(auditorId: keyId.wire, auditorKey: secret, name: name, appIds: appIds, expiresAt: expiresAt), status: 201)
            }
            struct Created: Encodable { var operatorKeyId: String; var operatorKey: String; var name: String; var appIds: [String]?; var expiresAt: Date? }
            return .json(Created(operatorKeyId: keyId.wire, operatorKey: secret, name: name, appIds: appIds, expiresAt: expiresAt), status: 201)
        }
    }

    /// A listed key: `operatorKeyId` or `auditorId` by its role (API.md's names).
    struct KeyView: Encodable {
        var operatorKeyId: String?
        var auditorId: String?
        var role: String
        var name: String
        var appIds: [String]?
        var createdAt: Date
        var expiresAt: Date?
        var revokedAt: Date?
    }

    func listKeys(role: KeyRole) async throws -> HTTPResponse {
        let items = try await apiKeys.list(role: role.column).map { key in
            KeyView(operatorKeyId: role == .operator ? key.id.wire : nil, auditorId: role == .auditor ? key.id.wire : nil, role: role.rawValue,
                    name: key.name, appIds: key.appIds?.map(\.wire), createdAt: key.createdAt, expiresAt: key.expiresAt, revokedAt: key.revokedAt)
        }
        struct Page: Encodable { var items: [KeyView] }
        return .json(Page(items: items))
    }

    func revokeKey(_ request: HTTPRequest, role: KeyRole, parameter: String) async throws -> HTTPResponse {
        let keyId = try request.uuidParameter(parameter)
        return try await recorded(request, kind: "\(role.rawValue)-key.revoke", appId: platformAppId) { draft in
            draft.detail = ["keyId": keyId.wire]
            guard try await apiKeys.revoke(keyId, role: role.column) else { throw APIError(.notFound, "no such \(role.rawValue) key") }
            return .noContent
        }
    }
}
