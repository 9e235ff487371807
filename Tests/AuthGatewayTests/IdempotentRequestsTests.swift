import AppRecords
@testable import AuthGateway
import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import IdentityRecords
import Testing

/// The `Idempotency-Key` rules of creating POSTs over in-memory records; end to end (a gateway, PostgreSQL):
/// IntegrationTests' IntegratorTests.keysAndIdempotentCreates.
@Suite struct IdempotentRequestsTests {
    let records = InMemoryIdempotencyRecords(clock: FakeClock())
    var idempotency: IdempotentRequests { IdempotentRequests(records: records) }

    func request(_ body: String, key: String? = "create-1", credential: String = "Bearer operator-1") -> HTTPRequest {
        var headers: [(String, String)] = [("Content-Type", "application/json"), ("Authorization", credential)]
        if let key { headers.append(("Idempotency-Key", key)) }
        return HTTPRequest(method: "POST", path: "/v1/apps", headers: HTTPHeaders(headers), body: Array(body.utf8))
    }

    /// Answers `status` with a fresh id each time (or throws `error`), counting its calls.
    final class Creator: Sendable {
        let calls = Calls<Int>()
        let status: Int
        let error: HTTPError?
        init(status: Int = 201, error: HTTPError? = nil) {
            self.status = status
            self.error = error
        }
        var handler: HTTPHandler {
            { [self] _ in
                calls.record(status)
                if let error { throw error }
                return HTTPResponse(status: status, headers: [("Content-Type", "application/json"), ("X-Other", "dropped")],
                                    body: .bytes(Array(#"{"id":"\#(UUID().uuidString)","secret":"shown-once"}"#.utf8)))
            }
        }
    }

    func bytes(_ response: HTTPResponse) -> [UInt8] {
        guard case .bytes(let bytes) = response.body else { return [] }
        return bytes
    }

    @Test func theSameRequestAgainGetsTheFirstAnswerSealedAndMarkedAsReplayed() async throws {
        let creator = Creator()
        let first = try await idempotency.run(request(#"{"name":"a","modules":{"faceLogin":"trial"}}"#), creator.handler)
        // The same object with its keys in another order is the same request.
        let again = try await idempotency.run(request(#"{"modules":{"faceLogin":"trial"},"name":"a"}"#), creator.handler)
        #expect(creator.calls.all.count == 1)
        #expect(again.status == 201 && bytes(again) == bytes(first))
        #expect(again.headers.contains { $0.0 == "Idempotent-Replayed" && $0.1 == "true" })
        #expect(again.headers.contains { $0.0 == "Content-Type" } && !again.headers.contains { $0.0 == "X-Other" })
        // Kept sealed under the caller's credential: the record does not hold the secret the answer showed.
        let id = IdempotencyRecordID(scope: SHA256.hash(Array("facegate idempotency scope\nBearer operator-1".utf8)), key: "create-1")
        let sealed = try #require(try await records.record(id)?.sealedAnswer)
        #expect(sealed.count > 20 && String(decoding: sealed, as: UTF8.self).range(of: "shown-once") == nil)
    }

    @Test func anotherRequestUnderTheKeyIsAConflictAndAnotherCallerHasKeysOfItsOwn() async throws {
        let creator = Creator()
        _ = try await idempotency.run(request(#"{"name":"a"}"#), creator.handler)
        #expect(await errorCode { try await idempotency.run(request(#"{"name":"b"}"#), creator.handler) } == .conflict)
        let other = try await idempotency.run(request(#"{"name":"b"}"#, credential: "Bearer operator-2"), creator.handler)
        #expect(other.status == 201 && !other.headers.contains { $0.0 == "Idempotent-Replayed" })
        #expect(creator.calls.all.count == 2)
    }

    @Test func refusalsThatMaySucceedLaterAndFailuresFreeTheKey() async throws {
        for status in [401, 403, 429, 500, 503] {
            let refused = Creator(status: status)
            _ = try await idempotency.run(request("{}", key: "k-\(status)"), refused.handler)
            _ = try await idempotency.run(request("{}", key: "k-\(status)"), refused.handler)
            #expect(refused.calls.all.count == 2, "\(status) is not kept")
        }
        // A 4xx the same request would meet again is kept, thrown or returned, and replayed as an answer.
        let invalid = Creator(error: APIError(.invalidRequest, "name is required").http(transactionId: nil))
        #expect(await errorCode { try await idempotency.run(request("{}", key: "k-400"), invalid.handler) } == .invalidRequest)
        let replayed = try await idempotency.run(request("{}", key: "k-400"), invalid.handler)
        #expect(replayed.status == 400 && String(decoding: bytes(replayed), as: UTF8.self).contains("INVALID_REQUEST"))
        #expect(invalid.calls.all.count == 1)
        struct Unexpected: Error {}
        let crashed: HTTPHandler = { _ in throw Unexpected() }
        #expect(await errorCode { try await idempotency.run(request("{}", key: "k-crash"), crashed) } != nil)
        #expect(try await idempotency.run(request("{}", key: "k-crash"), Creator().handler).status == 201, "freed for the retry")
    }

    @Test func aRequestStillRunningAnswersInProgressAndABadKeyIsRefused() async throws {
        let id = IdempotencyRecordID(scope: SHA256.hash(Array("facegate idempotency scope\nBearer operator-1".utf8)), key: "busy")
        let hash = SHA256.hash(Array("POST /v1/apps\napplication/json\n{}".utf8))
        #expect(try await records.claim(id, requestHash: hash, retentionSeconds: 3600, abandonedSeconds: 120))
        let creator = Creator()
        #expect(await errorCode { try await idempotency.run(request("{}", key: "busy"), creator.handler) } == .idempotencyInProgress)
        for key in ["", "has space", String(repeating: "k", count: 256), "ключ"] {
            #expect(await errorCode { try await idempotency.run(request("{}", key: key), creator.handler) } == .invalidRequest, "\(key)")
        }
        // Without a key nothing is remembered.
        _ = try await idempotency.run(request("{}", key: nil), creator.handler)
        _ = try await idempotency.run(request("{}", key: nil), creator.handler)
        #expect(creator.calls.all.count == 2)
    }
}
