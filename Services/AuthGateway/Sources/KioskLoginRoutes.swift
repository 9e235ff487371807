import FaceGateCore
import Foundation
import HTTPServer
import ServiceKit

/// Kiosk login (Bearer access token + a DPoP proof by a registered kiosk's key): a burst of camera frames answering a
/// liveness challenge, 1:N identification with the most frontal frame, then an identity token (method `kiosk`) and
/// the id of the kiosk session that onboarded the customer — never that session's interview token, which
/// would open the customer's onboarding events to whoever matches the face. A failure on the face's merits
/// is a 200 with `success: false` and the wire code in `error`; auth, module and limit problems use the
/// error envelope.
extension GatewayContext {
    func registerKioskLoginRoutes(on router: APIRoutes) {
        router.group(client).add("POST", "/v1/kiosk/login", answers: [KioskLoginReply.self], doors: [.kioskLogin], upload: true) { [self] request, app in try await kioskLogin(request, app: app) }
    }

    struct KioskLoginReply: Encodable, TrustAnswer {
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

    var kioskLoginFlow: KioskLogin {
        KioskLogin(admission: apps, attempts: attempts, users: users, sessions: kioskSessions, challenges: livenessChallenges,
                   matcher: self, tokens: identityTokens) { [self] kiosk in
            let key = kiosk.wire
            if kioskLoginRate.admit(key) { return (true, 0) }
            kioskLoginsLimited.increment()
            return (false, kioskLoginRate.retryAfter(key))
        }
    }

    func kioskLogin(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        try await recorded(request, kind: "kiosk.login", appId: app.id) { draft in
            let kiosk = try await kioskDevice(request, app: app, draft: &draft)
            let answer = try await kioskLoginFlow.login(app: app, kiosk: kiosk, probe: {
                let (challengeId, frames) = try livenessFrames(from: request, challengeRequired: app.liveness.kiosk == .active)
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

extension KioskSessionStore: OnboardingSessions {}
