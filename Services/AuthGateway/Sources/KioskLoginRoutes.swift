import AppRecords
import FaceGateCore
import Foundation
import HTTPServer

/// Kiosk login (Bearer access token + a DPoP proof by a registered kiosk's key): a burst of camera frames answering a
/// liveness challenge, 1:N identification with the most frontal frame, then an identity token (method `kiosk`) and
/// the id of the kiosk session that onboarded the customer — never that session's interview token, which
/// would open the customer's onboarding events to whoever matches the face. A failure on the face's merits
/// is a 200 with `success: false` and the wire code in `error`; auth, module and limit problems use the
/// error envelope.
struct KioskLoginRoutes: RouteCollection {
    let kioskLogin: KioskLogin
    let kiosks: KioskProofs

    func boot(_ routes: APIRoutes) {
        routes.group(\.device, tag: .kiosk).add("POST", "/v1/kiosk/login", "kioskLogin", """
            Kiosk 1:N login (module kiosk): frames answering a liveness challenge, or one photo when the app's kiosk liveness is off. \
            A refusal on the face's merits is 200 with success false and its code in error
            """, body: .upload(form: KioskFrames.self), answers: [.ok(KioskLoginReply.self, "The login's result")],
            errors: [.moduleDisabled, .moduleNotFormal, .kioskNotRegistered, .credentialLocked, .rateLimited], doors: [.kioskLogin]) { request, context in
            try await login(request, context)
        }
    }

    struct KioskLoginReply: Codable, TrustAnswer, DocumentedSchema {
        static let schemaName = "KioskLoginResult"
        var success: Bool
        var customerUUID: String?
        var token: String?
        var interviewId: String?
        var interviewToken: String?
        var transactionId: String
        var spoofAttempt: Bool
        var firstName: String?
        var error: String?

        // Every field is always present, null when it does not apply.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(success, forKey: .success)
            try container.encode(customerUUID, forKey: .customerUUID)
            try container.encode(token, forKey: .token)
            try container.encode(interviewId, forKey: .interviewId)
            try container.encode(interviewToken, forKey: .interviewToken)
            try container.encode(transactionId, forKey: .transactionId)
            try container.encode(spoofAttempt, forKey: .spoofAttempt)
            try container.encode(firstName, forKey: .firstName)
            try container.encode(error, forKey: .error)
        }

        enum CodingKeys: String, CodingKey {
            case success, customerUUID, token, interviewId, interviewToken, transactionId, spoofAttempt, firstName, error
        }
    }

    private func login(_ request: HTTPRequest, _ context: CallContext<AppRecord>) async throws -> HTTPResponse {
        let app = context.caller
        return try await context.recorded(kind: "kiosk.login", appId: app.id) { draft in
            let kiosk = try await kiosks.kiosk(context, app: app, draft: &draft)
            let answer = try await kioskLogin.login(app: app, kiosk: kiosk, probe: {
                let (challengeId, frames) = try request.livenessFrames(challengeRequired: app.liveness.kiosk == .active)
                return KioskLogin.Probe(challengeId: challengeId, frames: frames)
            }, draft: &draft)
            switch answer {
            case .identified(let userId, let firstName, let token, let interviewId):
                return .json(KioskLoginReply(success: true, customerUUID: userId.wire, token: token, interviewId: interviewId?.wire,
                                             interviewToken: nil, transactionId: draft.id.wire, spoofAttempt: false, firstName: firstName, error: nil))
            case .refused(let code, let spoof):
                return .json(KioskLoginReply(success: false, transactionId: draft.id.wire, spoofAttempt: spoof, error: code.rawValue))
            }
        }
    }
}
