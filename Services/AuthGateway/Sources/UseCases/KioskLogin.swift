import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation

/// The kiosk session that onboarded a customer (`kiosk_sessions`, written by the kiosk-orchestrator).
protocol OnboardingSessions: Sendable {
    /// The latest completed session that created `customer` as a new customer, if any.
    func onboardingSession(of customer: UUID, appId: UUID) async throws -> UUID?
}

/// Kiosk login (`POST /v1/kiosk/login`), without HTTP: a registered kiosk (the route proved its key) sends a burst
/// answering a liveness challenge (or, with the app's kiosk liveness off, one selfie), identified 1:N; then an identity
/// token (method `kiosk`, `amr` `face`, `cnf` the kiosk's key, `kioskId`) and the id of the session that onboarded the
/// customer — never that session's interview token, which would open the customer's onboarding events to whoever matches
/// the face. A refusal on the face's merits is an answer, not an error.
struct KioskLogin: Sendable {
    let admission: any ModuleAdmission
    let attempts: AttemptGuard
    let users: any UserDirectory
    let sessions: any OnboardingSessions
    let challenges: any LivenessChallengeStore
    let matcher: any FaceMatching
    let tokens: IdentityTokenIssuer
    /// Takes one of the kiosk's logins from its rate; false when it has used them up.
    let rate: @Sendable (_ kiosk: UUID) -> (admitted: Bool, retryAfter: Int)

    /// The frames sent, in capture order, and the challenge they answer (required with the app's kiosk liveness active).
    struct Probe: Sendable {
        var challengeId: String?
        var frames: [Data]
    }

    enum Answer: Sendable, Equatable {
        case identified(userId: UUID, firstName: String?, identityToken: String, interviewId: UUID?)
        case refused(ErrorCode, spoof: Bool)
    }

    /// A kiosk serves walk-ups, most of them not enrolled: a face that matches no one costs the kiosk nothing but a login
    /// from its rate (`RATE_LIMITED` when it is used up), so strangers can neither throttle nor lock it. A spoof verdict
    /// (or a replayed burst) is a failed attempt of the kiosk. `probe` is read inside the attempt; a frame that is not an
    /// image is a refusal that costs nothing.
    func login(app: AppRecord, kiosk: RegisteredKiosk, probe: () throws -> Probe, draft: inout TransactionDraft) async throws -> Answer {
        try await admission.admit(app, module: .kiosk)
        let (admitted, retryAfter) = rate(kiosk.id)
        guard admitted else {
            throw APIError(.rateLimited, "this kiosk has used up its kiosk logins for now (FACEGATE_KIOSK_LOGIN_RATE); wait \(retryAfter) s",
                           retryAfter: retryAfter)
        }
        return try await attempts.attempt(appId: app.id, [.kiosk(kiosk.id)]) {
            let answer = try await identify(app: app, kiosk: kiosk, probe: probe, draft: &draft)
            guard case .refused(let code, let spoof) = answer else { return (answer, .success) }
            draft.outcome = code.rawValue
            if spoof { draft.detail["spoofAttempt"] = "true" }
            return (answer, spoof ? .failure : .neutral)
        }
    }

    private func identify(app: AppRecord, kiosk: RegisteredKiosk, probe: () throws -> Probe, draft: inout TransactionDraft) async throws -> Answer {
        let sent: Probe
        do {
            sent = try probe()
        } catch let error as APIError where error.code == .imageFormatError {
            return .refused(.imageFormatError, spoof: false)
        }
        let job: FaceJob
        if app.liveness.kiosk == .active, let challengeId = sent.challengeId {
            let actions: [LivenessAction]
            do {
                actions = try await challenges.consume(challengeId, appId: app.id, deviceId: kiosk.jkt, frames: sent.frames)
            } catch let error as APIError where error.code == .spoofDetected {
                draft.detail["spoofReasons"] = error.message
                return .refused(.spoofDetected, spoof: true)
            }
            job = FaceJob(appId: app.id, threshold: app.matchThreshold, .liveness(FaceJob.Burst(frames: sent.frames, actions: actions, identify: true)))
        } else {
            // Liveness off: no challenge; the first frame is identified as a face-login image would be.
            draft.detail["liveness"] = "off"
            job = FaceJob(appId: app.id, threshold: app.matchThreshold, .identify(image: sent.frames[0], topK: 5))
        }
        let result = try await matcher.match(job)
        draft.score = result.candidates.first?.distance
        switch result.outcome {
        case .match:
            break
        case .spoofDetected:
            if let reasons = result.liveness?.reasons { draft.detail["spoofReasons"] = reasons.joined(separator: "; ") }
            return .refused(.spoofDetected, spoof: true)
        case .noFace, .noMatchFace, .ambiguousMatch, .imageFormatError:
            return .refused(result.outcome.errorCode!, spoof: false)
        default:
            throw APIError(refusing: result)
        }
        let userId = result.candidates[0].userId
        draft.userId = userId
        // Erased a moment ago, still in a matcher's gallery until the erasure's broadcast arrives: no one.
        guard let name = try await users.profile(of: userId, appId: app.id)?.name else { return .refused(.noMatchFace, spoof: false) }
        let interview = try await sessions.onboardingSession(of: userId, appId: app.id)
        if let interview { draft.detail["interviewId"] = interview.wire }
        let token = try tokens.issue(app: app.id, user: userId, device: kiosk.jkt, method: "kiosk", transaction: draft.id,
                                     keyThumbprint: kiosk.jkt, amr: TrustPolicy.amr(.kioskLogin), kioskId: kiosk.id)
        return .identified(userId: userId, firstName: name.split(separator: " ").first.map(String.init), identityToken: token, interviewId: interview)
    }
}
