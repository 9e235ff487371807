import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import JWT
import PostgresClient

/// Face login for client apps (Bearer access token + `X-Device-Id`): 1:N identification, device binding
/// on first use confirmed by the employee number, then a short-lived single-use identity token.
extension GatewayContext {
    func registerFaceLoginRoutes(on router: APIRoutes) {
        router.add("POST", "/v1/face-login") { [self] request in try await faceLogin(request) }
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
        let device = try deviceId(request)
        return try await recorded(request, kind: "face.login", appId: app.id, deviceId: device) { draft in
            try await apps.admit(app, module: .faceLogin)
            return try await attempts.attempt(appId: app.id, [.device(device), .clientAddress(clientAddress(request))]) {
                try await identifyForLogin(request, app: app, device: device, draft: &draft)
            }
        }
    }

    /// The face login itself, its attempt already charged: a match on a bound device is a success; a
    /// match on a new device asks for the confirmation and is neither success nor failure (the device's
    /// count is only cleared once the person is confirmed).
    private func identifyForLogin(_ request: HTTPRequest, app: AppRecord, device: String,
                                  draft: inout TransactionDraft) async throws -> (HTTPResponse, AttemptGuard.Outcome) {
        let job: FaceJob
        if app.liveness.faceLogin == .active {
            job = try await livenessLoginJob(request, app: app, device: device)
            draft.detail["liveness"] = "active"
        } else {
            job = FaceJob(kind: .identify, appId: app.id, image: Data(try image(request)), threshold: app.matchThreshold)
        }
        let result = try await faceJob(job)
        draft.score = result.candidates.first?.distance
        switch result.outcome {
        case .match:
            break
        case .spoofDetected:
            draft.detail["spoofReasons"] = result.liveness?.reasons.joined(separator: "; ")
            throw APIError(.spoofDetected, "the liveness check failed; get a new challenge and try again")
        default:
            let code = result.outcome.errorCode ?? .internalError
            throw APIError(code, result.message ?? Self.defaultMessage(code))
        }
        let userId = result.candidates[0].userId
        draft.userId = userId
        let bound = try await database.query("""
            SELECT 1 FROM devices WHERE app_id = \(app.id) AND device_id = \(device) AND user_id = \(userId)
            """)
        if bound.first == nil {
            let confirmationId = UUID()
            _ = try await database.query("""
                INSERT INTO login_confirmations (id, app_id, device_id, user_id, transaction_id, score, expires_at)
                VALUES (\(confirmationId), \(app.id), \(device), \(userId), \(draft.id), \(draft.score.map { Double($0) }),
                        now() + make_interval(secs => \(Int(configuration.confirmationTTL))))
                """)
            draft.outcome = ErrorCode.confirmRequired.rawValue
            struct ConfirmRequired: Encodable {
                var status = "CONFIRM_REQUIRED"
                var confirmationId: String
                var transactionId: String
                var expiresIn: Int
            }
            let reply = ConfirmRequired(confirmationId: confirmationId.wire, transactionId: draft.id.wire, expiresIn: Int(configuration.confirmationTTL))
            return (.json(reply), .neutral)
        }
        let token = try issueIdentityToken(app: app.id, user: userId, device: device, method: "face", transaction: draft.id)
        return (.json(LoginSuccess(identityToken: token, expiresIn: Int(configuration.identityTokenTTL), transactionId: draft.id.wire, userId: userId.wire)),
                .success)
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

    struct ConfirmBody: Decodable { var confirmationId: UUID; var employeeNumber: String }

    /// Binds the device to the user the face matched, once the person types the right employee number.
    /// Every try is charged to the device, to the claimed user's binding attempts (whatever device sends
    /// them) and to the client address before the number is compared; five wrong numbers also void the
    /// confirmation. It is single use and expires.
    func confirmFaceLogin(_ request: HTTPRequest) async throws -> HTTPResponse {
        let app = try await requireClient(request)
        let device = try deviceId(request)
        let body = try request.decodeJSON(ConfirmBody.self)
        return try await recorded(request, kind: "face.login.confirm", appId: app.id, deviceId: device) { draft in
            try await apps.admit(app, module: .faceLogin)
            let rows = try await database.query("""
                SELECT c.user_id, c.attempts, c.score, u.employee_number,
                       (c.used_at IS NULL AND c.voided_at IS NULL AND c.expires_at > now()) AS usable
                FROM login_confirmations c JOIN users u ON u.id = c.user_id
                WHERE c.id = \(body.confirmationId) AND c.app_id = \(app.id) AND c.device_id = \(device)
                """)
            guard let row = rows.first else {
                // An unknown confirmation id is a guess too: it costs the device and the address.
                return try await attempts.attempt(appId: app.id, [.device(device), .clientAddress(clientAddress(request))]) {
                    () async throws -> (HTTPResponse, AttemptGuard.Outcome) in
                    throw APIError(.confirmationInvalid, "no such confirmation for this device; log in again")
                }
            }
            let userId: UUID = try row.decode("user_id")
            draft.userId = userId
            draft.score = try row.decode("score", as: Float?.self)
            let subjects: [AttemptGuard.Subject] = [.device(device), .bindingUser(userId), .clientAddress(clientAddress(request))]
            return try await attempts.attempt(appId: app.id, subjects) {
                guard try row.decode("usable", as: Bool.self) else {
                    throw APIError(.confirmationInvalid, "the confirmation was already used, voided or has expired; log in again")
                }
                let expected = try row.decode("employee_number", as: String.self)
                let typed = body.employeeNumber.trimmingCharacters(in: .whitespaces)
                guard constantTimeEquals(SHA256.hash(Array(expected.utf8)), SHA256.hash(Array(typed.utf8))) else {
                    let voided = try await database.query("""
                        UPDATE login_confirmations SET attempts = attempts + 1,
                               voided_at = CASE WHEN attempts + 1 >= 5 THEN now() ELSE voided_at END
                        WHERE id = \(body.confirmationId) RETURNING voided_at IS NOT NULL AS voided, attempts
                        """)
                    let left = 5 - (try voided.first?.decode("attempts", as: Int.self) ?? 5)
                    throw APIError(.employeeNumberMismatch, left <= 0
                                   ? "wrong employee number; the confirmation is now void, log in again"
                                   : "wrong employee number; \(left) tries left")
                }
                let claimed = try await database.withTransaction { connection in
                    let used = try await connection.query("""
                        UPDATE login_confirmations SET used_at = now()
                        WHERE id = \(body.confirmationId) AND used_at IS NULL AND voided_at IS NULL AND expires_at > now()
                        """)
                    guard used.affectedRows == 1 else { return false }
                    _ = try await connection.query("""
                        INSERT INTO devices (app_id, device_id, user_id) VALUES (\(app.id), \(device), \(userId)) ON CONFLICT DO NOTHING
                        """)
                    return true
                }
                guard claimed else { throw APIError(.confirmationInvalid, "the confirmation was already used") }
                let token = try issueIdentityToken(app: app.id, user: userId, device: device, method: "face", transaction: draft.id)
                return (.json(LoginSuccess(identityToken: token, expiresIn: Int(configuration.identityTokenTTL), transactionId: draft.id.wire,
                                           userId: userId.wire)), .success)
            }
        }
    }

    func issueIdentityToken(app: UUID, user: UUID, device: String, method: String, transaction: UUID) throws -> String {
        let claims = IdentityTokenClaims(issuer: configuration.issuer, appId: app, userId: user, deviceId: device, method: method,
                                         transactionId: transaction, issuedAt: Date(), ttl: configuration.identityTokenTTL)
        return try JWT.sign(claims, type: TokenType.identity, key: signingKey)
    }
}
