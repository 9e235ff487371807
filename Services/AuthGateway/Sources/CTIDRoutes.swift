import AppRecords
import FaceGateCore
import Foundation
import HTTPServer

/// CTID identity verification over HTTP (the decisions are `CTIDVerification`'s); registry entries go to the
/// ctid-verifier, which seals them, as jobs on `ctid.jobs.v1`.
struct CTIDRoutes: RouteCollection {
    let ctidVerification: CTIDVerification

    func boot(_ routes: APIRoutes) {
        let clients = routes.group(\.client, tag: .ctid)
        clients.add("POST", "/v1/ctid/serial-numbers", "issueCtidSerialNumber",
                    "Issue a single-use CTID serial number and challenge code bound to the app and auth mode",
                    body: .json(SerialRequest.self), answers: [.ok(CTIDSerialNumber.self, "The serial number")],
                    errors: [.moduleDisabled, .moduleNotFormal], maxBodyBytes: 4096, idempotent: true) { request, context in
            .json(try await ctidVerification.issueSerial(app: context.caller) { try request.decodeJSON(SerialRequest.self).authMode })
        }
        clients.add("POST", "/v1/ctid/verifications", "verifyCtid", """
            Verify an identity claim sent as a CTID envelope; the answer is an envelope whose plaintext is \
            {bizSerialNum, authResult, resultCode, message, transactionId}
            """, body: .document(CTIDEnvelope.self), parameters: [.deviceId], answers: [.ok(CTIDEnvelope.self, "The verifier's answer envelope")],
                    errors: [.invalidEnvelope, .moduleDisabled, .moduleNotFormal, .credentialLocked, .rateLimited],
                    because: [.invalidEnvelope: "any envelope fault (MAC, key, padding, encoding), always the same body",
                              .credentialLocked: "too many failed verifications of this identity",
                              .rateLimited: "too many failed verifications from this device or address, or of this identity"],
                    doors: [.ctidVerification]) { request, context in
            try await verify(request, context)
        }
        routes.group(\.appOperator, tag: .ctid).add(
            "POST", "/v1/apps/{appId}/ctid-registry", "registerCtidIdentity",
            "Add or replace a trusted identity record of the app (number hashed, name sealed, portrait kept as a sealed template)",
            body: .document(CTIDRegistration.self), answers: [.created(CTIDRegistered.self, "Registered")], errors: [.lowQuality],
            because: [.lowQuality: "the photo has no usable face"]
        ) { request, context in
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

    struct CTIDRegistered: Codable, DocumentedSchema {
        static let schemaName = "CtidRegistered"
        var number: String
        var registered = true
    }

    struct SerialRequest: Decodable, DocumentedSchema {
        static let schemaName = "CtidSerialRequest"
        var authMode: String
    }
}
