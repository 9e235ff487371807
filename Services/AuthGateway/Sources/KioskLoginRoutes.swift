import FaceGateCore
import Foundation
import HTTPServer
import PostgresClient

/// Kiosk login (Bearer access token + `X-Device-Id`): a burst of camera frames answering a liveness
/// challenge, 1:N identification with the most frontal frame, then an identity token (method `kiosk`) and
/// the id of the kiosk session that onboarded the customer — never that session's interview token, which
/// would open the customer's onboarding events to whoever matches the face. A failure on the face's merits
/// is a 200 with `success: false` and the wire code in `error`; auth, module and limit problems use the
/// error envelope.
extension GatewayContext {
    func registerKioskLoginRoutes(on router: APIRoutes) {
        router.group(client).add("POST", "/v1/kiosk/login", upload: true) { [self] request, app in try await kioskLogin(request, app: app) }
    }

    struct KioskLoginReply: Encodable {
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

    func kioskLogin(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let device = try await clientDevice(request, app: app).id
        return try await recorded(request, kind: "kiosk.login", appId: app.id, deviceId: device) { draft in
            try await apps.admit(app, module: .kiosk)
            return try await attempts.attempt(appId: app.id, [.device(device), .clientAddress(clientAddress(request))]) {
                try await identifyAtKiosk(request, app: app, device: device, draft: &draft)
            }
        }
    }

    private func identifyAtKiosk(_ request: HTTPRequest, app: AppRecord, device: String,
                                 draft: inout TransactionDraft) async throws -> (HTTPResponse, AttemptGuard.Outcome) {
        let transactionId = draft.id.wire

        /// A refusal on the merits: recorded with its code, counted against the device, answered as a 200.
        func refused(_ code: ErrorCode, spoof: Bool, reasons: [String]? = nil) -> (HTTPResponse, AttemptGuard.Outcome) {
            draft.outcome = code.rawValue
            if spoof { draft.detail["spoofAttempt"] = "true" }
            if let reasons { draft.detail["spoofReasons"] = reasons.joined(separator: "; ") }
            return (.json(KioskLoginReply(success: false, transactionId: transactionId, spoofAttempt: spoof, error: code.rawValue)),
                    code.isFailedAttempt ? .failure : .neutral)
        }

        let livenessActive = app.liveness.kiosk == .active
        let challengeId: String?
        let frames: [Data]
        do {
            (challengeId, frames) = try livenessFrames(from: request, challengeRequired: livenessActive)
        } catch let error as APIError where error.code == .imageFormatError {
            return refused(.imageFormatError, spoof: false)
        }
        let job: FaceJob
        if livenessActive, let challengeId {
            let actions: [LivenessAction]
            do {
                actions = try await livenessChallenges.consume(challengeId, appId: app.id, deviceId: device, frames: frames)
            } catch let error as APIError where error.code == .spoofDetected {
                return refused(.spoofDetected, spoof: true, reasons: [error.message])
            }
            job = FaceJob(kind: .liveness, appId: app.id, threshold: app.matchThreshold, frames: frames, actions: actions, identify: true)
        } else {
            // Liveness off: no challenge; the first frame is identified as a face-login image would be.
            draft.detail["liveness"] = "off"
            job = FaceJob(kind: .identify, appId: app.id, image: frames[0], threshold: app.matchThreshold)
        }
        let result = try await faceJob(job)
        draft.score = result.candidates.first?.distance
        switch result.outcome {
        case .match:
            break
        case .spoofDetected:
            return refused(.spoofDetected, spoof: true, reasons: result.liveness?.reasons)
        case .noFace, .noMatchFace, .ambiguousMatch, .imageFormatError:
            return refused(result.outcome.errorCode!, spoof: false)
        default:
            throw APIError(refusing: result)
        }
        let userId = result.candidates[0].userId
        draft.userId = userId
        let users = try await database.query("SELECT name FROM users WHERE id = \(userId) AND app_id = \(app.id)")
        guard let user = users.first else {
            // Deleted between the match and now: the gallery catches up on the next change.
            return refused(.noMatchFace, spoof: false)
        }
        let name = try user.decode("name", as: String.self)
        let interview = try await database.query("""
            SELECT id FROM kiosk_sessions
            WHERE app_id = \(app.id) AND customer_id = \(userId) AND state = 'completed'
              AND coalesce((data->'result'->>'existingUser')::boolean, false) = false
            ORDER BY updated_at DESC, created_at DESC LIMIT 1
            """).first.map { try $0.decode("id", as: UUID.self) }
        let token = try identityTokens.issue(app: app.id, user: userId, device: device, method: "kiosk", transaction: draft.id)
        if let interview { draft.detail["interviewId"] = interview.wire }
        return (.json(KioskLoginReply(
            success: true, customerUUID: userId.wire, token: token, interviewId: interview?.wire, interviewToken: nil,
            transactionId: transactionId, spoofAttempt: false, firstName: name.split(separator: " ").first.map(String.init), error: nil)),
                .success)
    }
}
