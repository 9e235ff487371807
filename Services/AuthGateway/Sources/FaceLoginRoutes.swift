import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import JWT
import PostgresClient

/// Face login for client apps (Bearer access token; the device proven by its DPoP key, or named by
/// `X-Device-Id` on apps left in header mode): 1:1 on a bound key, else 1:N identification; a new device
/// is bound after a confirmation; success is a short-lived single-use identity token.
extension GatewayContext {
    func registerFaceLoginRoutes(on router: APIRoutes) {
        router.add("POST", "/v1/face-login", authenticated: { [self] in _ = try await requireClient($0) }) { [self] request in
            try await faceLogin(request)
        }
        router.add("POST", "/v1/face-login/confirm", maxBodyBytes: 4096) { [self] request in try await confirmFaceLogin(request) }
    }

    var attempts: AttemptGuard {
        AttemptGuard(database: database,
                     rule: .init(throttleAfter: configuration.throttleAfter, throttleSeconds: configuration.throttleSeconds,
                                 lockAfter: configuration.lockAfter),
                     addressRule: .init(throttleAfter: configuration.addressThrottleAfter, throttleSeconds: configuration.throttleSeconds,
                                        lockAfter: 0))
    }

    struct LoginSuccess: Encodable {
        var status = "SUCCESS"
        var identityToken: String
        var expiresIn: Int
        var transactionId: String
        var userId: String
    }

    func faceLogin(_ request: HTTPRequest) async throws -> HTTPResponse {
        let app = try await requireClient(request)
        return try await recorded(request, kind: "face.login", appId: app.id) { draft in
            let device = try await clientDevice(request, app: app)
            draft.note(device)
            try await apps.admit(app, module: .faceLogin)
            return try await attempts.attempt(appId: app.id, [.device(device.id), .clientAddress(clientAddress(request))]) {
                try await identifyForLogin(request, app: app, device: device, draft: &draft)
            }
        }
    }

    /// The face login itself, its attempt already charged.
    /// - A bound device key is first verified 1:1 against the users it is bound to (far fewer false
    ///   accepts than a search of the whole app); only then does the search run.
    /// - A match with a user bound to this device is a success.
    /// - A device key bound to nobody always gets `CONFIRM_REQUIRED`, whatever the face matched: the answer
    ///   says nothing about who is enrolled; the confirmation then checks the claimed user against the users
    ///   the face was within the threshold of.
    /// - A match on a header-identified device, or on a key bound to others, asks to confirm that user.
    /// Asking to confirm is neither success nor failure (the device's count is cleared only once the person is confirmed).
    private func identifyForLogin(_ request: HTTPRequest, app: AppRecord, device: ClientDevice,
                                  draft: inout TransactionDraft) async throws -> (HTTPResponse, AttemptGuard.Outcome) {
        let bound = try await boundUsers(device, app: app.id)
        let job: FaceJob
        if app.liveness.faceLogin == .active {
            job = try await livenessLoginJob(request, app: app, device: device.id)
            draft.detail["liveness"] = "active"
        } else {
            let image = Data(try image(request))
            if device.isKey {
                for user in bound {
                    let result = try await faceJob(FaceJob(kind: .verify, appId: app.id, image: image, userId: user, threshold: app.matchThreshold))
                    guard result.outcome == .match || result.outcome == .noMatchFace else { throw refusal(result) }
                    if result.outcome == .match {
                        draft.userId = user
                        draft.score = result.candidates.first?.distance
                        draft.detail["search"] = "1:1"
                        reenrollForMigration(app: app, user: user, image: image, distance: draft.score)
                        return (try loginSuccess(app: app, user: user, device: device, transaction: draft.id), .success)
                    }
                }
            }
            job = FaceJob(kind: .identify, appId: app.id, image: image, threshold: app.matchThreshold)
        }
        let result = try await faceJob(job)
        draft.score = result.candidates.first?.distance
        let matched = result.outcome == .match ? result.candidates.first?.userId : nil
        draft.userId = matched
        let withinThreshold = result.candidates.filter { $0.distance <= app.matchThreshold }
        switch result.outcome {
        case .match, .noMatchFace, .ambiguousMatch:
            if let matched, bound.contains(matched) {
                if let image = job.image { reenrollForMigration(app: app, user: matched, image: image, distance: draft.score) }
                return (try loginSuccess(app: app, user: matched, device: device, transaction: draft.id), .success)
            }
            if device.isKey && bound.isEmpty {
                draft.detail["search"] = "unbound key"
                return (try await confirmationRequired(app: app, device: device, candidates: withinThreshold, draft: &draft), .neutral)
            }
            guard matched != nil, let candidate = result.candidates.first else { throw refusal(result) }
            return (try await confirmationRequired(app: app, device: device, candidates: [candidate], draft: &draft), .neutral)
        case .spoofDetected:
            draft.detail["spoofReasons"] = result.liveness?.reasons.joined(separator: "; ")
            throw APIError(.spoofDetected, "the liveness check failed; get a new challenge and try again")
        default:
            throw refusal(result)
        }
    }

    /// The wire error of a matcher outcome that is not a match.
    func refusal(_ result: FaceJobResult) -> APIError {
        let code = result.outcome.errorCode ?? .internalError
        return APIError(code, result.message ?? Self.defaultMessage(code))
    }

    private func loginSuccess(app: AppRecord, user: UUID, device: ClientDevice, transaction: UUID) throws -> HTTPResponse {
        let token = try identityTokens.issue(app: app.id, user: user, device: device.id, method: "face", transaction: transaction,
                                             keyThumbprint: device.thumbprint)
        return .json(LoginSuccess(identityToken: token, expiresIn: Int(configuration.identityTokenTTL), transactionId: transaction.wire, userId: user.wire))
    }

    /// One confirmation, single use, for this device, naming the users the face may be.
    private func confirmationRequired(app: AppRecord, device: ClientDevice, candidates: [FaceCandidate],
                                      draft: inout TransactionDraft) async throws -> HTTPResponse {
        struct Candidate: Encodable { var userId: String; var distance: Float }
        let confirmationId = UUID()
        _ = try await database.query("""
            INSERT INTO login_confirmations (id, app_id, device_id, user_id, candidates, transaction_id, score, expires_at)
            VALUES (\(confirmationId), \(app.id), \(device.id), \(draft.userId), \(candidates.map { Candidate(userId: $0.userId.wire, distance: $0.distance) }.jsonText)::jsonb,
                    \(draft.id), \(draft.score.map { Double($0) }), now() + make_interval(secs => \(Int(configuration.confirmationTTL))))
            """)
        draft.outcome = ErrorCode.confirmRequired.rawValue
        struct ConfirmRequired: Encodable {
            var status = "CONFIRM_REQUIRED"
            var confirmationId: String
            var transactionId: String
            var expiresIn: Int
        }
        return .json(ConfirmRequired(confirmationId: confirmationId.wire, transactionId: draft.id.wire, expiresIn: Int(configuration.confirmationTTL)))
    }

    /// With the app's face-login liveness `active`: a burst answering a liveness challenge instead of one
    /// image, checked and identified by one matcher job. A spent, foreign or unknown challenge counts as a
    /// failed attempt, like a burst that fails the check.
    func livenessLoginJob(_ request: HTTPRequest, app: AppRecord, device: String) async throws -> FaceJob {
        let isMultipart = (request.headers["Content-Type"] ?? "").lowercased().hasPrefix("multipart/form-data")
        guard isMultipart, (try? request.multipartParts())?.contains(where: { $0.name == "frame" }) == true else {
            throw APIError(.invalidRequest, "this app requires active liveness for face login: instead of one image, send multipart/form-data "
                           + "with a challengeId from GET /v1/liveness/challenges and 2–12 frame fields doing its actions")
        }
        let (challengeId, frames) = try livenessFrames(from: request)
        let actions = try await consumeLivenessChallenge(challengeId, appId: app.id, deviceId: device, frames: frames)
        return FaceJob(kind: .liveness, appId: app.id, threshold: app.matchThreshold, frames: frames, actions: actions, identify: true)
    }

    struct ConfirmBody: Decodable {
        var confirmationId: UUID
        var employeeNumber: String
        var bindingTicket: String?
    }

    /// Binds the device to the user the person claims with their employee number, when the face was within
    /// the threshold of that user (and, on a `dpop` app whose policy asks for one, with a binding ticket for
    /// that user). Every try is charged to the device, to the binding attempts of the users the face may be
    /// and of the claimed user (whatever device sends them) and to the client address before anything is compared; a wrong number and a face
    /// that is not the claimed user's get the same answer; five of them void the confirmation. It is single
    /// use and expires.
    func confirmFaceLogin(_ request: HTTPRequest) async throws -> HTTPResponse {
        let app = try await requireClient(request)
        let body = try request.decodeJSON(ConfirmBody.self)
        return try await recorded(request, kind: "face.login.confirm", appId: app.id) { draft in
            let device = try await clientDevice(request, app: app)
            draft.note(device)
            try await apps.admit(app, module: .faceLogin)
            let rows = try await database.query("""
                SELECT candidates::text AS candidates,
                       (used_at IS NULL AND voided_at IS NULL AND expires_at > now()) AS usable
                FROM login_confirmations WHERE id = \(body.confirmationId) AND app_id = \(app.id) AND device_id = \(device.id)
                """)
            guard let row = rows.first else {
                // An unknown confirmation id is a guess too: it costs the device and the address.
                return try await attempts.attempt(appId: app.id, [.device(device.id), .clientAddress(clientAddress(request))]) {
                    () async throws -> (HTTPResponse, AttemptGuard.Outcome) in
                    throw APIError(.confirmationInvalid, "no such confirmation for this device; log in again")
                }
            }
            struct Candidate: Decodable { var userId: UUID; var distance: Float }
            let candidates = try FaceGateJSON.decode([Candidate].self, from: Array(try row.decode("candidates", as: String.self).utf8))
            let typed = body.employeeNumber.trimmingCharacters(in: .whitespaces)
            let claimed: UUID? = typed.isEmpty || typed.utf8.count > 64 ? nil : try await database.query("""
                SELECT id FROM users WHERE app_id = \(app.id) AND employee_number = \(typed)
                """).first?.decode("id")
            draft.userId = claimed
            // Charged to every user the face may be and to the one claimed: guessing numbers for a victim's
            // photo counts against the victim, whichever numbers, devices and addresses are tried.
            var users = candidates.map(\.userId)
            if let claimed, !users.contains(claimed) { users.append(claimed) }
            let subjects: [AttemptGuard.Subject] = [.device(device.id)] + users.map { .bindingUser($0) } + [.clientAddress(clientAddress(request))]
            return try await attempts.attempt(appId: app.id, subjects) {
                guard try row.decode("usable", as: Bool.self) else {
                    throw APIError(.confirmationInvalid, "the confirmation was already used, voided or has expired; log in again")
                }
                guard let claimed, let match = candidates.first(where: { $0.userId == claimed }) else {
                    let voided = try await database.query("""
                        UPDATE login_confirmations SET attempts = attempts + 1,
                               voided_at = CASE WHEN attempts + 1 >= 5 THEN now() ELSE voided_at END
                        WHERE id = \(body.confirmationId) RETURNING attempts
                        """)
                    let left = 5 - (try voided.first?.decode("attempts", as: Int.self) ?? 5)
                    throw APIError(.employeeNumberMismatch, left <= 0
                                   ? "the employee number does not match the face; the confirmation is now void, log in again"
                                   : "the employee number does not match the face; \(left) tries left")
                }
                draft.score = match.distance
                let needsTicket = device.isKey && app.deviceBindingPolicy != .employeeNumber
                try await database.withTransaction { connection in
                    let used = try await connection.query("""
                        UPDATE login_confirmations SET used_at = now()
                        WHERE id = \(body.confirmationId) AND used_at IS NULL AND voided_at IS NULL AND expires_at > now()
                        """)
                    guard used.affectedRows == 1 else { throw APIError(.confirmationInvalid, "the confirmation was already used") }
                    if needsTicket { try await Self.spendBindingTicket(body.bindingTicket, app: app, user: claimed, on: connection) }
                    _ = try await connection.query("""
                        INSERT INTO devices (app_id, device_id, user_id, key_bound) VALUES (\(app.id), \(device.id), \(claimed), \(device.isKey))
                        ON CONFLICT DO NOTHING
                        """)
                }
                return (try loginSuccess(app: app, user: claimed, device: device, transaction: draft.id), .success)
            }
        }
    }

    /// Face, device-biometric and kiosk logins' identity tokens, signed with the gateway's key.
    var identityTokens: IdentityTokenIssuer {
        IdentityTokenIssuer(issuer: configuration.issuer, key: signingKey, ttl: configuration.identityTokenTTL)
    }
}
