import Crypto
import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation
import HTTPServer
import PostgresClient

/// `Idempotency-Key` on creating POSTs: the same caller sending the same key and the same request within
/// 24 h gets the first answer again (marked `Idempotent-Replayed: true`) instead of a second app, user,
/// template or key; the same key with another request is `CONFLICT`, and while the first is
/// still running `IDEMPOTENCY_IN_PROGRESS`.
///
/// - Keys are per caller: the scope is a digest of the `Authorization` header.
/// - Answers may carry a secret shown once (an app secret, a new key), so they are stored sealed
///   (AES-256-GCM) under a key derived from the caller's credential and the Idempotency-Key: the database
///   alone cannot open them.
/// - Kept: 2xx and 4xx answers, except 401, 403 and 429 (the same request may succeed later); 5xx and
///   failures that left no answer free the key at once. A first request that never finished (its gateway
///   died) frees the key after `abandonedSeconds`.
struct IdempotentRequests: Sendable {
    let records: any IdempotencyRecords
    var retentionSeconds = 24 * 3600
    /// A first request older than this without an answer is taken to have died with its gateway.
    var abandonedSeconds = 120

    static let header = "Idempotency-Key"

    func run(_ request: HTTPRequest, _ handler: HTTPHandler) async throws -> HTTPResponse {
        guard let key = request.headers[Self.header] else { return try await handler(request) }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw APIError(.invalidRequest, "Idempotency-Key must be 1–255 printable ASCII characters without spaces").http(transactionId: nil)
        }
        // Without a credential the handler refuses the call anyway; nothing to remember.
        guard let credential = request.headers["Authorization"], !credential.isEmpty else { return try await handler(request) }
        let id = IdempotencyRecordID(scope: SHA256.hash(Array(("facegate idempotency scope\n" + credential).utf8)), key: key)
        let sealingKey = HMACSHA256.authenticationCode(key: Array(credential.utf8), data: Array(("facegate idempotent answer\n" + key).utf8))
        let requestHash = SHA256.hash(Array("\(request.method) \(request.path)\n\(request.headers["Content-Type"] ?? "")\n".utf8) + Self.canonicalBody(request))
        guard try await records.claim(id, requestHash: requestHash, retentionSeconds: retentionSeconds, abandonedSeconds: abandonedSeconds) else {
            return try await replay(id, requestHash: requestHash, sealingKey: sealingKey)
        }
        let response: HTTPResponse
        do {
            response = try await handler(request)
        } catch let error as HTTPError {
            try await settle(id, error.response, sealingKey: sealingKey)
            throw error
        } catch {
            try? await records.release(id)
            throw error
        }
        try await settle(id, response, sealingKey: sealingKey)
        return response
    }

    private func replay(_ id: IdempotencyRecordID, requestHash: [UInt8], sealingKey: [UInt8]) async throws -> HTTPResponse {
        guard let record = try await records.record(id) else {
            // Freed between the two statements (a 5xx answer): the caller may simply send it again.
            throw APIError(.idempotencyInProgress, "the first request with this Idempotency-Key has just ended without an answer; send it again")
                .http(transactionId: nil)
        }
        guard constantTimeEquals(record.requestHash, requestHash) else {
            throw APIError(.conflict, "this Idempotency-Key was used for another request in the last 24 h; use a new key")
                .http(transactionId: nil)
        }
        guard let status = record.status, let sealed = record.sealedAnswer else {
            throw APIError(.idempotencyInProgress, "the first request with this Idempotency-Key is still running; ask again shortly")
                .http(transactionId: nil)
        }
        let stored = try FaceGateJSON.decode(StoredAnswer.self, from: try AES256GCM.open(key: sealingKey, sealed: sealed, authenticating: id.scope))
        return HTTPResponse(status: status, headers: stored.headers.map { ($0.name, $0.value) } + [("Idempotent-Replayed", "true")],
                            body: .bytes(Array(stored.body)))
    }

    private func settle(_ id: IdempotencyRecordID, _ response: HTTPResponse, sealingKey: [UInt8]) async throws {
        guard Self.isKept(response.status), case .bytes(let body) = response.body else {
            try await records.release(id)
            return
        }
        let kept = response.headers.filter { ["content-type", "location", "www-authenticate"].contains($0.0.lowercased()) }
        let answer = StoredAnswer(headers: kept.map { .init(name: $0.0, value: $0.1) }, body: Data(body))
        let sealed = try AES256GCM.seal(key: sealingKey, plaintext: try FaceGateJSON.encode(answer), authenticating: id.scope)
        try await records.settle(id, status: response.status, sealedAnswer: sealed)
    }

    /// A JSON body with its keys sorted (a client that serializes the same object again in another key
    /// order sends the same request); any other body as sent.
    static func canonicalBody(_ request: HTTPRequest) -> [UInt8] {
        guard (request.headers["Content-Type"] ?? "").lowercased().hasPrefix("application/json"),
              let object = try? JSONSerialization.jsonObject(with: Data(request.body), options: [.fragmentsAllowed]),
              let sorted = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed]) else {
            return request.body
        }
        return Array(sorted)
    }

    static func isKept(_ status: Int) -> Bool {
        (200..<500).contains(status) && ![401, 403, 429].contains(status)
    }

    /// Deletes answers past their 24 h.
    func sweep() async throws { try await records.sweep(olderThanSeconds: retentionSeconds) }

    private struct StoredAnswer: Codable {
        struct Header: Codable { var name: String; var value: String }
        var headers: [Header]
        var body: Data
    }
}

