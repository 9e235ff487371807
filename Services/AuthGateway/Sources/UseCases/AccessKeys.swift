import Crypto
import AppRecords
import FaceGateCore
import Foundation

/// Operator and auditor keys (`/v1/operator-keys`, `/v1/auditors`), without HTTP: the secret is shown once and stored
/// only as its SHA-256; a key may expire; an operator key without apps covers every app, an auditor key only the apps
/// it is given (or every app when asked); listings never show a secret. Every gateway reads keys from the store on each
/// call, so a revocation holds everywhere at once.
struct AccessKeys: Sendable {
    let keys: any ApiKeyStore
    let apps: any AppStore

    enum Role: String, Sendable {
        case `operator`, auditor

        /// The stored role name.
        var column: String { self == .operator ? "admin" : "auditor" }
        var prefix: String { self == .operator ? "fgo_" : "fga_" }
    }

    struct NewKey: Decodable, Sendable {
        var name: String
        var appIds: [UUID]?
        /// Auditor keys: every app. Without it and without `appIds` an auditor key covers no app (default deny).
        var allApps: Bool?
        /// Seconds from now (API.md), or an absolute time.
        var expiresIn: Int?
        var expiresAt: Date?
    }

    /// A key whose request passed the rules, ready to create.
    struct CheckedKey: Sendable {
        var role: Role
        var name: String
        /// nil: every app.
        var appIds: [UUID]?
        var expiresAt: Date?
    }

    /// Shown once, under the role's names (`operatorKeyId`/`operatorKey` or `auditorId`/`auditorKey`).
    struct Created: Encodable, Sendable {
        var role: Role
        var keyId: UUID
        var secret: String
        var name: String
        var appIds: [UUID]?
        var expiresAt: Date?

        private enum CodingKeys: String, CodingKey { case operatorKeyId, operatorKey, auditorId, auditorKey, name, appIds, expiresAt }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(keyId.wire, forKey: role == .operator ? .operatorKeyId : .auditorId)
            try container.encode(secret, forKey: role == .operator ? .operatorKey : .auditorKey)
            try container.encode(name, forKey: .name)
            try container.encodeIfPresent(appIds?.map(\.wire), forKey: .appIds)
            try container.encodeIfPresent(expiresAt, forKey: .expiresAt)
        }
    }

    /// A listed key: `operatorKeyId` or `auditorId` by its role (API.md's names), never the secret.
    struct View: Codable, Sendable {
        var operatorKeyId: String?
        var auditorId: String?
        var role: String
        var name: String
        var appIds: [String]?
        var createdAt: Date
        var expiresAt: Date?
        var revokedAt: Date?
    }

    /// The rules a new key must pass; nothing is stored.
    func check(_ new: NewKey, role: Role) async throws -> CheckedKey {
        let name = new.name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...200).contains(name.count) else { throw APIError(.invalidRequest, "name must be 1–200 characters") }
        guard new.expiresIn == nil || new.expiresAt == nil else { throw APIError(.invalidRequest, "send expiresIn or expiresAt, not both") }
        if let seconds = new.expiresIn, !(1...(10 * 366 * 86400)).contains(seconds) { throw APIError(.invalidRequest, "expiresIn must be 1 s to 10 years") }
        let expiresAt = new.expiresAt ?? new.expiresIn.map { Date(timeIntervalSinceNow: TimeInterval($0)) }
        if let expiresAt, expiresAt <= Date() { throw APIError(.invalidRequest, "expiresAt must be in the future") }
        if let appIds = new.appIds {
            guard (1...1000).contains(appIds.count) else { throw APIError(.invalidRequest, "appIds must name 1–1000 apps") }
            for appId in appIds where try await apps.find(appId) == nil { throw APIError(.invalidRequest, "no app \(appId.wire)") }
        }
        if new.allApps == true, new.appIds != nil { throw APIError(.invalidRequest, "send appIds or allApps, not both") }
        // An operator key without apps is for every app; an auditor key reads only what it is given.
        let appIds = role == .auditor && new.allApps != true ? new.appIds ?? [] : new.appIds
        return CheckedKey(role: role, name: name, appIds: appIds, expiresAt: expiresAt)
    }

    func create(_ key: CheckedKey, draft: inout TransactionDraft) async throws -> Created {
        let secret = newSecret(prefix: key.role.prefix)
        let keyId = UUID()
        try await keys.create(id: keyId, role: key.role.column, name: key.name, hash: SHA256.hash(Array(secret.utf8)), appIds: key.appIds,
                              expiresAt: key.expiresAt)
        draft.detail = ["keyId": keyId.wire, "name": key.name]
        return Created(role: key.role, keyId: keyId, secret: secret, name: key.name, appIds: key.appIds, expiresAt: key.expiresAt)
    }

    func list(_ role: Role) async throws -> [View] {
        try await keys.list(role: role.column).map { key in
            View(operatorKeyId: role == .operator ? key.id.wire : nil, auditorId: role == .auditor ? key.id.wire : nil, role: role.rawValue,
                 name: key.name, appIds: key.appIds?.map(\.wire), createdAt: key.createdAt, expiresAt: key.expiresAt, revokedAt: key.revokedAt)
        }
    }

    /// Revoking a revoked key again changes nothing and succeeds; a key of another role is not found.
    func revoke(_ keyId: UUID, role: Role, draft: inout TransactionDraft) async throws {
        draft.detail = ["keyId": keyId.wire]
        guard try await keys.revoke(keyId, role: role.column) else { throw APIError(.notFound, "no such \(role.rawValue) key") }
    }
}
