import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import KafkaClient

/// CTID identity verification. The gateway issues serial numbers and forwards ciphertext: it holds no
/// institution key and no sealing key, so opening envelopes and sealing registry rows is the
/// ctid-verifier's work, reached as a job on `ctid.jobs.v1`.
extension GatewayContext {
    func registerCTIDRoutes(on router: APIRoutes) {
        let clients = router.group(client)
        clients.add("POST", "/v1/ctid/serial-numbers", maxBodyBytes: 4096, idempotent: true) { [self] request, app in
            try await issueCTIDSerial(request, app: app)
        }
        clients.add("POST", "/v1/ctid/verifications", upload: true) { [self] request, app in try await verifyCTID(request, app: app) }
        router.group(appOperator).add("POST", "/v1/apps/{appId}/ctid-registry", upload: true) { [self] request, app in
            try await registerCTIDIdentity(request, app: app)
        }
    }

    /// Every envelope fault answers exactly these bytes (fixed here, not re-encoded per call, so not even
    /// key order can differ): nothing tells which check failed.
    static let invalidEnvelopeBody = Array(#"{"error":{"code":"INVALID_ENVELOPE","message":"\#(CTIDEnvelopeError.message)"}}"#.utf8)
    static var invalidEnvelopeResponse: HTTPResponse {
        HTTPResponse(status: 400, headers: [("Content-Type", "application/json")], body: .bytes(invalidEnvelopeBody))
    }

    struct SerialBody: Decodable { var authMode: String }
    struct SerialAnswer: Encodable {
        var bizSerialNum: String
        var randNum: String
        var expiresIn: Int
    }

    func issueCTIDSerial(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        try await apps.admit(app, module: .ctid)
        let body = try request.decodeJSON(SerialBody.self)
        guard CTIDAuthMode.isModeCode(body.authMode) else { throw APIError(.invalidRequest, "authMode must be a hex code such as \"0x42\"") }
        guard let mode = CTIDAuthMode(wire: body.authMode) else {
            throw APIError(.invalidRequest, "unsupported auth mode: \(body.authMode.lowercased()) needs the CTID network credential; use 0x40, 0x42, 0x10 or 0x12")
        }
        // 128 random bits as hex; the challenge code is 6 random digits (uniform, by rejection).
        let serial = SecureRandom.bytes(16).map { String(format: "%02x", $0) }.joined()
        var randNum = ""
        while randNum.count < 6 {
            let byte = SecureRandom.bytes(1)[0]
            if byte < 250 { randNum.append(String(byte % 10)) }
        }
        let ttl = configuration.ctidSerialTTLSeconds
        try await ctidSerials.issue(serial, appId: app.id, authMode: mode, randNum: randNum, ttlSeconds: ttl)
        return .json(SerialAnswer(bizSerialNum: serial, randNum: randNum, expiresIn: ttl))
    }

    func verifyCTID(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        try await apps.admit(app, module: .ctid)
        // A body that is not even an envelope is still the verifier's to judge and record.
        let envelope = try? FaceGateJSON.decode(CTIDEnvelope.self, from: request.body)
        let device = request.headers["X-Device-Id"].flatMap { (1...128).contains($0.utf8.count) ? $0 : nil }
        let result = try await ctidJob(CTIDJob(kind: .verify, appId: app.id, envelope: envelope, deviceId: device, clientIp: request.remoteAddress))
        switch result.outcome {
        case .answered:
            guard let answer = result.envelope else { throw APIError(.internalError, "the verifier answered without an envelope") }
            return .json(answer)
        case .invalidEnvelope:
            return Self.invalidEnvelopeResponse
        case .unavailable:
            throw APIError(.serviceUnavailable, "identity verification is unavailable right now; try again")
        default:
            throw APIError(.internalError, "unexpected verifier answer")
        }
    }

    func registerCTIDIdentity(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let body = try request.decodeJSON(CTIDRegistration.self)
        let result = try await ctidJob(CTIDJob(kind: .register, appId: app.id, registration: body))
        switch result.outcome {
        case .registered:
            struct Registered: Encodable { var number: String; var registered = true }
            return .json(Registered(number: ResidentIDNumber.mask(body.number.uppercased())), status: 201)
        case .invalidRequest: throw APIError(.invalidRequest, result.message ?? "invalid registry entry")
        case .notFound: throw APIError(.notFound, "no such app")
        case .imageRejected: throw APIError(.lowQuality, result.message ?? "the photo has no usable face")
        default: throw APIError(.serviceUnavailable, result.message ?? "identity verification is unavailable right now; try again")
        }
    }

    /// Sends a CTID job and waits for the verifier's answer within the request deadline.
    func ctidJob(_ job: CTIDJob) async throws -> CTIDJobResult {
        do {
            return try await requester.send(job, type: job.kind.messageType, appId: job.appId, to: runtime.topics.ctidJobs,
                                            as: CTIDJobResult.self)[0]
        } catch {
            logger.warning("ctid job not answered", ["error": "\(error)", "job.kind": job.kind.rawValue])
            throw APIError(.serviceUnavailable, "identity verification is unavailable right now; try again")
        }
    }
}
