import FaceGateCore
import Foundation
import HTTPServer

/// CTID identity verification over HTTP (the decisions are `CTIDVerification`'s); registry entries go to the
/// ctid-verifier, which seals them, as jobs on `ctid.jobs.v1`.
struct CTIDRoutes: RouteCollection {
    let ctidVerification: CTIDVerification

    func boot(_ routes: APIRoutes) {
        let clients = routes.group(\.client)
        clients.add("POST", "/v1/ctid/serial-numbers", answers: [CTIDSerialNumber.self], maxBodyBytes: 4096, idempotent: true) { request, context in
            struct Body: Decodable { var authMode: String }
            return .json(try await ctidVerification.issueSerial(app: context.caller) { try request.decodeJSON(Body.self).authMode })
        }
        clients.add("POST", "/v1/ctid/verifications", answers: [CTIDEnvelope.self], doors: [.ctidVerification], upload: true) { request, context in
            try await verify(request, context)
        }
        routes.group(\.appOperator).add("POST", "/v1/apps/{appId}/ctid-registry", answers: [CTIDRegistered.self], upload: true) { request, context in
            let masked = try await ctidVerification.register(app: context.caller, try request.decodeJSON(CTIDRegistration.self))
            return .json(CTIDRegistered(number: masked), status: 201)
        }
    }

    /// Every envelope fault answers exactly these bytes (fixed here, not re-encoded per call, so not even
    /// key order can differ): nothing tells which check failed.
    static let invalidEnvelopeBody = Array(#"{"error":{"code":"INVALID_ENVELOPE","message":"\#(CTIDEnvelopeError.message)"}}"#.utf8)
    static var invalidEnvelopeResponse: HTTPResponse {
        HTTPResponse(status: 400, headers: [("Content-Type", "application/json")], body: .bytes(invalidEnvelopeBody))
    }

    private func verify(_ request: HTTPRequest, _ context: CallContext<AppRecord>) async throws -> HTTPResponse {
        let verdict = try await ctidVerification.verify(
            app: context.caller, envelope: try? FaceGateJSON.decode(CTIDEnvelope.self, from: request.body),
            deviceId: request.headers["X-Device-Id"].flatMap { (1...128).contains($0.utf8.count) ? $0 : nil }, clientAddress: context.clientAddress)
        switch verdict {
        case .answered(let answer): return .json(answer)
        case .invalidEnvelope: return Self.invalidEnvelopeResponse
        case .withheld(let refusal): throw refusal
        }
    }

    struct CTIDRegistered: Encodable { var number: String; var registered = true }
}
