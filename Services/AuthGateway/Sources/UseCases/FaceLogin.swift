import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation
import PostgresClient

/// Sends a face job to the matchers and waits for their (merged) answer; `SERVICE_UNAVAILABLE` when none comes in time.
protocol FaceMatching: Sendable {
    /// `messageId`: the job's id, when a retry must reach the matcher's record of the first try (enrollment).
    func match(_ job: FaceJob, messageId: String?) async throws -> FaceJobResult
}

extension FaceMatching {
    func match(_ job: FaceJob) async throws -> FaceJobResult { try await match(job, messageId: nil) }
}

/// Face login and its confirmation (`POST /v1/face-login`, `POST /v1/face-login/confirm`), without HTTP: the routes
/// authenticate the app, prove the device and record the transaction; this decides who, if anyone, gets a token.
struct FaceLogin: Sendable {
    let admission: any ModuleAdmission
    let attempts: AttemptGuard
    let bindings: any DeviceBindingStore
    let users: any UserDirectory
    let challenges: any LivenessChallengeStore
    let matcher: any FaceMatching
    let tokens: IdentityTokenIssuer
    /// Registered kiosks' keys, which are never bound to a user.
    let kioskKeys: any KioskKeys
    let confirmationTTL: Int
    /// Enrolls the probe of a confident login with the newer face model, in the background (`GatewayComposition.reenroll`).
    let reenroll: @Sendable (_ app: AppRecord, _ user: UUID, _ image: Data, _ model: FaceModel) -> Void

    /// What the client sent: one image, or (the app's face-login liveness is `active`) a burst answering a challenge.
    enum Probe: Sendable {
        case image(Data)
        case burst(challengeId: String, frames: [Data])
    }

    enum Answer: Sendable, Equatable {
        case success(identityToken: String, userId: UUID)
        case confirmRequired(confirmationId: UUID)
    }

    /// Charges the attempt to the device and the client address, then identifies. `probe` is read inside the attempt
    /// (a throttled device is refused before its upload is looked at).
    /// - A bound device key is first verified 1:1 against the users it is bound to (far fewer false accepts than a
    ///   search of the whole app); only then does the search run.
    /// - A match with a user bound to this device is a success.
    /// - A device key bound to nobody always gets `CONFIRM_REQUIRED`, whatever the face matched: the answer says
    ///   nothing about who is enrolled; the confirmation then checks the claimed user against the users the face was
    ///   within the threshold of.
    /// - A match on a header-identified device, or on a key bound to others, asks to confirm that user.
    /// Asking to confirm is neither success nor failure (the device's count is cleared only once the person is confirmed).
    /// - `proofSpend`: the device proof's `jti` still to spend (`DeviceProofs.deviceSpendingLater`); it goes first, so a
    ///   replayed proof is refused before the gate counts the call or the attempt is charged.
    func login(app: AppRecord, device: ClientDevice, proofSpend: PostgresStep<Void>? = nil, clientAddress: String,
               probe: () throws -> Probe, draft: inout TransactionDraft) async throws -> Answer {
        let gate: PostgresStep<APIError?>
        do {
            gate = try admission.admission(app, module: .faceLogin)
        } catch {
            try await proofSpend?.run()   // a replay is still refused as one, before the module
            throw error
        }
        // The proof's spend, the module gate, the charges and the device's bound users: one round trip.
        return try await attempts.attempt(appId: app.id, [.device(device.id), .clientAddress(clientAddress)],
                                          admission: proofSpend.map { $0.then(gate) } ?? gate,
                                          reading: bindings.readingBoundUsers(appId: app.id, device: device)) { bound in
            try await identify(app: app, device: device, bound: bound, probe: try probe(), draft: &draft)
        }
    }

    private func identify(app: AppRecord, device: ClientDevice, bound: [UUID], probe: Probe,
                          draft: inout TransactionDraft) async throws -> (Answer, AttemptGuard.Outcome) {
        let job: FaceJob
        switch probe {
        case .burst(let challengeId, let frames):
            let actions = try await challenges.consume(challengeId, appId: app.id, deviceId: device.id, frames: frames)
            job = FaceJob(appId: app.id, threshold: app.matchThreshold, .liveness(FaceJob.Burst(frames: frames, actions: actions, identify: true)))
            draft.detail["liveness"] = "active"
        case .image(let image):
            // A bound key's users are compared 1:1 first, in the same job: the photo is embedded once.
            job = FaceJob(appId: app.id, threshold: app.matchThreshold, boundUsers: device.isKey ? bound : [], .identify(image: image, topK: 5))
        }
        let result = try await matcher.match(job)
        // The rule the matchers decided with (the app's threshold, their margin for the model).
        let rule = result.rule ?? MatchRule(model: app.faceModel, threshold: app.matchThreshold)
        if result.boundMatch == true { draft.detail["search"] = "1:1" }
        draft.score = result.candidates.first?.distance
        var matched = result.outcome == .match ? result.candidates.first?.userId : nil
        draft.userId = matched
        switch result.outcome {
        case .match, .noMatchFace, .ambiguousMatch:
            if let user = matched, bound.contains(user) {
                if let image = job.image, let distance = draft.score, rule.isConfident(distance) { reenrollOnNewerModel(app: app, user: user, image: image) }
                return (try success(app: app, user: user, device: device, transaction: draft.id), .success)
            }
            // A user erased a moment ago can still be in a matcher's gallery (erasures reach the matchers by broadcast):
            // the face of someone who is no longer enrolled matches no one.
            var candidates = rule.possible(result.candidates)
            if let user = matched, try await !users.exists(user, appId: app.id) {
                matched = nil
                draft.userId = nil
                candidates.removeAll { $0.userId == user }
            }
            if device.isKey && bound.isEmpty {
                draft.detail["search"] = "unbound key"
                return (try await confirmationRequired(app: app, device: device, candidates: candidates, draft: &draft), .neutral)
            }
            guard matched != nil, let candidate = result.candidates.first else {
                throw result.outcome == .match ? APIError(.noMatchFace, APIError.defaultMessage(.noMatchFace)) : APIError(refusing: result)
            }
            return (try await confirmationRequired(app: app, device: device, candidates: [candidate], draft: &draft), .neutral)
        case .spoofDetected:
            draft.detail["spoofReasons"] = result.liveness?.reasons.joined(separator: "; ")
            throw APIError(.spoofDetected, "the liveness check failed; get a new challenge and try again")
        default:
            throw APIError(refusing: result)
        }
    }

    /// Progressive re-enrollment: after a confident login (`MatchRule.isConfident`) of a user of an app still on an older
    /// model, the same probe is enrolled with the newer model. The login's answer does not wait for it.
    private func reenrollOnNewerModel(app: AppRecord, user: UUID, image: Data) {
        let target = FaceModel.defaultForNewApps
        guard app.faceModel != target else { return }
        reenroll(app, user, image, target)
    }

    private func success(app: AppRecord, user: UUID, device: ClientDevice, transaction: UUID, door: Door = .faceLogin) throws -> Answer {
        .success(identityToken: try tokens.issue(app: app.id, user: user, device: device.id, method: "face", transaction: transaction,
                                                 keyThumbprint: device.thumbprint, amr: TrustPolicy.amr(door, deviceIsKey: device.isKey)),
                 userId: user)
    }

    /// One confirmation, single use, for this device, naming the users the face may be.
    private func confirmationRequired(app: AppRecord, device: ClientDevice, candidates: [FaceCandidate],
                                      draft: inout TransactionDraft) async throws -> Answer {
        let confirmation = PendingConfirmation(appId: app.id, deviceId: device.id, userId: draft.userId,
                                               candidates: candidates.map { .init(userId: $0.userId, distance: $0.distance) },
                                               transactionId: draft.id, score: draft.score, ttlSeconds: confirmationTTL)
        try await bindings.open(confirmation)
        draft.outcome = ErrorCode.confirmRequired.rawValue
        return .confirmRequired(confirmationId: confirmation.id)
    }

    /// Binds the device to the user the person claims with their employee number, when the face was within the
    /// threshold of that user (`TrustPolicy`'s `faceLoginConfirm` door). Where the app's policy needs a binding ticket, the
    /// ticket is checked first, without looking at the number: a missing, foreign or spent one is `BINDING_TICKET_INVALID`
    /// whatever the number, and spends the confirmation. Only then is the number looked up, and a wrong or unknown number,
    /// a face that is not the claimed user's, and a ticket for another user all answer `EMPLOYEE_NUMBER_MISMATCH`; five
    /// of them void the confirmation. Every try is charged to the device, to the binding attempts of the users the face
    /// may be (whatever device sends it) and to the client address before anything is compared. A registered kiosk's key
    /// is never bound. The confirmation is single use and expires.
    func confirm(app: AppRecord, device: ClientDevice, clientAddress: String, confirmationId: UUID, employeeNumber: String,
                 bindingTicket: String?, draft: inout TransactionDraft) async throws -> Answer {
        try await admission.admit(app, module: .faceLogin)
        // Before anything is looked at, so the refusal tells nothing about the number or the face.
        if device.isKey, try await kioskKeys.isLiveKiosk(appId: app.id, jkt: device.id) {
            throw APIError(.forbidden, "a registered kiosk's key is not a user's device and cannot be bound")
        }
        guard let confirmation = try await bindings.confirmation(confirmationId, appId: app.id, deviceId: device.id) else {
            // An unknown confirmation id is a guess too: it costs the device and the address.
            return try await attempts.attempt(appId: app.id, [.device(device.id), .clientAddress(clientAddress)]) {
                () async throws -> (Answer, AttemptGuard.Outcome) in
                throw APIError(.confirmationInvalid, "no such confirmation for this device; log in again")
            }
        }
        let candidates = confirmation.candidates.map(\.userId)
        let subjects: [AttemptGuard.Subject] = [.device(device.id)] + candidates.map { .bindingUser($0) } + [.clientAddress(clientAddress)]
        return try await attempts.attempt(appId: app.id, subjects) {
            guard confirmation.usable else {
                throw APIError(.confirmationInvalid, "the confirmation was already used, voided or has expired; log in again")
            }
            var ticket: BindingTicketCheck?
            var ticketUser: UUID?
            if device.isKey && app.deviceBindingPolicy != .employeeNumber {
                let check = BindingTicketCheck(ticket: bindingTicket, policy: app.deviceBindingPolicy)
                do {
                    let held = try await bindings.ticket(key: try check.key(), appId: app.id)
                    try check.accept(held.map { ($0.issuer, $0.userHasKey) })
                    ticketUser = held?.user
                } catch let error as APIError where error.code == .bindingTicketInvalid {
                    try await bindings.void(confirmationId)
                    throw APIError(.bindingTicketInvalid, error.message + "; the confirmation is spent, log in again")
                }
                ticket = check
            }
            let typed = employeeNumber.trimmingCharacters(in: .whitespaces)
            let claimed = typed.isEmpty || typed.utf8.count > 64 ? nil : try await users.user(appId: app.id, employeeNumber: typed)
            draft.userId = claimed
            // Only the users the face may be are charged (above): charging a claimed number outside them would throttle
            // existing numbers and not unknown ones, telling them apart.
            guard let claimed, let match = confirmation.candidates.first(where: { $0.userId == claimed }), ticketUser.map({ $0 == claimed }) ?? true else {
                let left = try await bindings.recordMismatch(confirmationId)
                throw APIError(.employeeNumberMismatch, left <= 0
                               ? "the employee number does not match the face; the confirmation is now void, log in again"
                               : "the employee number does not match the face; \(left) tries left")
            }
            draft.score = match.distance
            try await bindings.bind(confirmation: confirmationId, appId: app.id, device: device, user: claimed, ticket: ticket)
            return (try success(app: app, user: claimed, device: device, transaction: draft.id, door: .faceLoginConfirm), .success)
        }
    }
}
