import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import KafkaClient

/// CTID identity verification over HTTP (the decisions are `CTIDVerification`'s); registry entries go to the
/// ctid-verifier, which seals them, as jobs on `ctid.jobs.v1`.
extension GatewayContext: CTIDJobs {
    func registerCTIDRoutes(on router: APIRoutes) {
        let clients = router.group(client)
        clients.add("POST", "/v1/ctid/serial-numbers", answers: [CTIDSerialNumber.self], maxBodyBytes: 4096, idempotent: true) { [self] request, app in
            try await issueCTIDSerial(request, app: app)
        }
        clients.add("POST", "/v1/ctid/verifications", answers: [CTIDEnvelope.self], doors: [.ctidVerification], upload: true) { [self] request, app in try await verifyCTID(request, app: app) }
        router.group(appOperator).add("POST", "/v1/apps/{appId}/ctid-registry", answers: [CTIDRegistered.self], upload: true) { [self] request, app in
            try await registerCTIDIdentity(request, app: app)
        }
    }

    /// Every envelope fault answers exactly these bytes (fixed here, not re-encoded per call, so not even
    /// key order can differ): nothing tells which check failed.
    static let invalidEnvelopeBody = Array(#"{"error":{"code":"INVALID_ENVELOPE","message":"\#(CTIDEnvelopeError.message)"}}"#.utf8)
    static var invalidEnvelopeResponse: HTTPResponse {
        HTTPResponse(status: 400, headers: [("Content-Type", "application/json")], body: .bytes(invalidEnvelopeBody))
    }

    var ctidVerification: CTIDVerification {
        CTIDVerification(admission: apps, attempts: attempts, serials: ctidSerials, verifier: self, serialTTLSeconds: configuration.ctidSerialTTLSeconds)
    }

    func issueCTIDSerial(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        struct Body: Decodable { var authMode: String }
        return .json(try await ctidVerification.issueSerial(app: app) { try request.decodeJSON(Body.self).authMode })
    }

    func verifyCTID(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let verdict = try await ctidVerification.verify(
            app: app, envelope: try? FaceGateJSON.decode(CTIDEnvelope.self, from: request.body),
            deviceId: request.headers["X-Device-Id"].flatMap { (1...128).contains($0.utf8.count) ? $0 : nil }, clientAddress: clientAddress(request))
        switch verdict {
        case .answered(let answer): return .json(answer)
        case .invalidEnvelope: return Self.invalidEnvelopeResponse
        case .withheld(let refusal): throw refusal
        }
    }

    struct CTIDRegistered: Encodable { var number: String; var registered = true }

    func registerCTIDIdentity(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let masked = try await ctidVerification.register(app: app, try request.decodeJSON(CTIDRegistration.self))
        return .json(CTIDRegistered(number: masked), status: 201)
    }

    /// Sends a CTID job and waits for the verifier's answer within the request deadline.
    func ctidJob(_ job: CTIDJob) async throws -> CTIDJobResult {
        do {
            return try await requester.send(job, appId: job.appId)[0]
        } catch {
            logger.warning("ctid job not answered", ["error": "\(error)", "job.kind": job.kind.rawValue])
            throw APIError(.serviceUnavailable, "identity verification is unavailable right now; try again")
        }
    }
}
