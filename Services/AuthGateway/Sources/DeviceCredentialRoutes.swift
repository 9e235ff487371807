import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import JWT
import PostgresClient

/// Device biometric credentials (module `deviceAuth`): a P-256 key held by the device and unlocked by its
/// biometric signs a single-use server challenge; a good signature yields an identity token with method
/// `device_biometric`. Registration needs proof of the user: a fresh face-login identity token of this app
/// and device (client route) or an operator. Lockout per credential follows the face-login rule.
///
/// Every error of the client routes says in its message whether face login can stand in:
/// `… (fallback: faceLogin)` or `… (fallback: none)` (the error envelope has no room for another field).
extension GatewayContext {
    func registerDeviceCredentialRoutes(on router: APIRoutes) {
        let clients = router.group(deviceCredentialClient)
        clients.add("POST", "/v1/device-credentials", maxBodyBytes: 32 << 10) { [self] request, client in
            try await registerDeviceCredential(request, client: client)
        }
        clients.add("POST", "/v1/device-credentials/challenges", maxBodyBytes: 4096) { [self] request, client in
            try await deviceChallenge(request, client: client)
        }
        clients.add("POST", "/v1/device-credentials/assertions", maxBodyBytes: 8192) { [self] request, client in
            try await deviceAssertion(request, client: client)
        }
        clients.add("DELETE", "/v1/device-credentials/{credentialId}") { [self] request, client in
            try await revokeOwnDeviceCredential(request, client: client)
        }
        let operators = router.group(appOperator)
        operators.add("POST", "/v1/apps/{appId}/users/{userId}/device-credentials", maxBodyBytes: 32 << 10) { [self] request, app in
            try await registerDeviceCredentialAsOperator(request, app: app)
        }
        operators.add("GET", "/v1/apps/{appId}/users/{userId}/device-credentials") { [self] request, app in
            try await listDeviceCredentials(request, app: app)
        }
        operators.add("DELETE", "/v1/apps/{appId}/device-credentials/{credentialId}") { [self] request, app in
            try await revokeDeviceCredential(request, app: app)
        }
        operators.add("POST", "/v1/apps/{appId}/device-credentials/{credentialId}/reset") { [self] request, app in
            try await resetDeviceCredential(request, app: app)
        }
    }

    /// Client apps, as `client`; a refusal names the fallback (none: no app is known yet), as every refusal here does.
    var deviceCredentialClient: Authenticator<AppRecord> {
        Authenticator { [self] request in
            do {
                return try await requireClient(request)
            } catch {
                throw await withFallback(error, app: nil, user: nil)
            }
        }
    }

    // MARK: - Registration

    struct ClientRegistrationBody: Decodable {
        var identityToken: String
        var publicKey: String
        var policy: String
        var attestation: String?
    }

    struct OperatorRegistrationBody: Decodable {
        var deviceId: String
        var publicKey: String
        var policy: String
        var attestation: String?
    }

    struct Registered: Encodable { var credentialId: String }

    /// A key and policy that passed the checks, ready to store.
    struct NewCredential: Sendable {
        var publicKey: P256PublicKey
        var policy: DeviceCredentialPolicy
        var attestation: [UInt8]?

        init(publicKey: String, policy: String, attestation: String?) throws {
            guard let der = Data(base64Encoded: publicKey), let key = try? P256PublicKey(spkiDER: Array(der)) else {
                throw APIError(.invalidRequest, "publicKey must be the base64 SubjectPublicKeyInfo DER of a P-256 key")
            }
            guard let policy = DeviceCredentialPolicy(rawValue: policy) else {
                throw APIError(.invalidRequest, "policy must be one of biometryCurrentSet, biometryAny, devicePasscode")
            }
            var stored: [UInt8]?
            if let attestation {
                guard let bytes = Data(base64Encoded: attestation), bytes.count <= 16 << 10 else {
                    throw APIError(.invalidRequest, "attestation must be base64 of at most 16 KiB")
                }
                stored = Array(bytes)
            }
            self.publicKey = key
            self.policy = policy
            self.attestation = stored
        }
    }

    /// Client registration: the identity token proves the user was just verified by face login on this
    /// device for this app; its id is consumed so it cannot register a second key or be exchanged later.
    func registerDeviceCredential(_ request: HTTPRequest, client: AppRecord) async throws -> HTTPResponse {
        do {
            let caller = try await clientDevice(request, app: client)
            let device = caller.id
            let body = try request.decodeJSON(ClientRegistrationBody.self)
            return try await recorded(request, kind: "device.register", appId: client.id, deviceId: device) { draft in
                do {
                    try await apps.admit(client, module: .deviceAuth)
                    let credential = try NewCredential(publicKey: body.publicKey, policy: body.policy, attestation: body.attestation)
                    let claims: IdentityTokenClaims
                    do {
                        claims = try JWT.verify(body.identityToken, as: IdentityTokenClaims.self, keys: keySet, type: TokenType.identity,
                                                issuer: configuration.issuer, audience: client.id.wire)
                    } catch JWTError.expired {
                        throw APIError(.identityTokenExpired, "the identity token has expired; log in with your face again")
                    } catch {
                        throw APIError(.identityTokenInvalid, "the identity token is not valid for this app")
                    }
                    guard let userId = UUID(uuidString: claims.sub) else { throw APIError(.identityTokenInvalid, "the identity token is not valid for this app") }
                    draft.userId = userId
                    guard claims.method == "face" else {
                        throw APIError(.identityTokenInvalid, "registration needs an identity token from face login")
                    }
                    guard claims.deviceId == device else {
                        throw APIError(.identityTokenInvalid, "the identity token was issued to another device")
                    }
                    let fresh = try await database.query("""
                        INSERT INTO used_token_ids (jti, app_id, expires_at) VALUES (\(claims.jti), \(client.id), to_timestamp(\(claims.exp)))
                        ON CONFLICT (jti) DO NOTHING
                        """)
                    guard fresh.affectedRows == 1 else { throw APIError(.identityTokenUsed, "the identity token was already used") }
                    let credentialId = try await storeCredential(credential, app: client.id, user: userId, device: device)
                    draft.detail = ["credentialId": credentialId.wire, "policy": credential.policy.rawValue, "registeredBy": "faceLogin"]
                    return .json(Registered(credentialId: credentialId.wire), status: 201)
                } catch {
                    throw await withFallback(error, app: client, user: draft.userId)
                }
            }
        } catch {
            throw await withFallback(error, app: client, user: nil)
        }
    }

    /// Operator registration, for devices enrolled at a desk rather than after a face login.
    func registerDeviceCredentialAsOperator(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let userId = try request.uuidParameter("userId")
        let body = try request.decodeJSON(OperatorRegistrationBody.self)
        return try await recorded(request, kind: "device.register", appId: app.id, deviceId: body.deviceId) { draft in
            draft.userId = userId
            guard (1...128).contains(body.deviceId.utf8.count), body.deviceId.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw APIError(.invalidRequest, "deviceId must be 1–128 printable ASCII characters")
            }
            let credential = try NewCredential(publicKey: body.publicKey, policy: body.policy, attestation: body.attestation)
            _ = try await user(userId, app: app.id)
            let credentialId = try await storeCredential(credential, app: app.id, user: userId, device: body.deviceId)
            draft.detail = ["credentialId": credentialId.wire, "policy": credential.policy.rawValue, "registeredBy": "operator"]
            return .json(Registered(credentialId: credentialId.wire), status: 201)
        }
    }

    /// One live credential per (user, device): a new registration replaces the previous one, which is how
    /// a flagged or locked credential is recovered.
    private func storeCredential(_ credential: NewCredential, app: UUID, user: UUID, device: String) async throws -> UUID {
        let credentialId = UUID()
        // The user's row is not locked here (that would need UPDATE on users): the foreign key takes its lock, so
        // a user deleted meanwhile makes the insert fail, or the deletion takes the new credential with it.
        let stored: Bool
        do {
            stored = try await database.withTransaction { connection in
                let owner = try await connection.query("SELECT 1 FROM users WHERE id = \(user) AND app_id = \(app)")
                guard owner.first != nil else { return false }
                _ = try await connection.query("""
                    UPDATE device_credentials SET revoked_at = now()
                    WHERE app_id = \(app) AND user_id = \(user) AND device_id = \(device) AND revoked_at IS NULL
                    """)
                _ = try await connection.query("""
                    INSERT INTO device_credentials (id, app_id, user_id, device_id, public_key, policy, attestation)
                    VALUES (\(credentialId), \(app), \(user), \(device), \(credential.publicKey.spkiDER), \(credential.policy.rawValue), \(credential.attestation))
                    """)
                return true
            }
        } catch let error as PostgresError where error.isForeignKeyViolation {
            stored = false
        }
        guard stored else { throw APIError(.notFound, "the user no longer exists in this app") }
        return credentialId
    }

    // MARK: - Challenge and assertion

    struct ChallengeBody: Decodable { var credentialId: String }

    /// A credential as an assertion sees it.
    struct StoredCredential {
        var id: UUID
        var userId: UUID
        var publicKey: [UInt8]
        var counter: Int64
        var flagged: Bool
    }

    /// The live credential `text` names, registered to this app and device; anything else is not enrolled.
    private func liveCredential(_ text: String, app: UUID, device: String) async throws -> StoredCredential {
        guard let id = UUID(uuidString: text) else { throw APIError(.credentialNotEnrolled, "no such device credential on this device") }
        let rows = try await database.query("""
            SELECT user_id, public_key, counter, flagged_at IS NOT NULL AS flagged FROM device_credentials
            WHERE id = \(id) AND app_id = \(app) AND device_id = \(device) AND revoked_at IS NULL
            """)
        guard let row = rows.first else { throw APIError(.credentialNotEnrolled, "no such device credential on this device") }
        return StoredCredential(id: id, userId: try row.decode("user_id"), publicKey: try row.decode("public_key"),
                                counter: try row.decode("counter"), flagged: try row.decode("flagged"))
    }


    static let challengeSeconds = 60

    func deviceChallenge(_ request: HTTPRequest, client: AppRecord) async throws -> HTTPResponse {
        do {
            let caller = try await clientDevice(request, app: client)
            let device = caller.id
            let body = try request.decodeJSON(ChallengeBody.self)
            return try await recorded(request, kind: "device.challenge", appId: client.id, deviceId: device) { draft in
                do {
                    try await apps.admit(client, module: .deviceAuth)
                    let credential = try await liveCredential(body.credentialId, app: client.id, device: device)
                    draft.userId = credential.userId
                    draft.detail = ["credentialId": credential.id.wire]
                    try refuseFlagged(credential)
                    try await attempts.ensureOpen(appId: client.id, .credential(credential.id))
                    let challenge = Base64URL.encode(SecureRandom.bytes(32))
                    _ = try await database.query("""
                        INSERT INTO one_time_challenges (id, app_id, purpose, subject, expires_at)
                        VALUES (\(challenge), \(client.id), 'device-assertion', \(credential.id.wire), now() + make_interval(secs => \(Self.challengeSeconds)))
                        """)
                    // `deviceId`: the identity the assertion must sign (the key thumbprint on a `dpop` app).
                    struct Issued: Encodable { var challenge: String; var expiresIn: Int; var deviceId: String }
                    return .json(Issued(challenge: challenge, expiresIn: Self.challengeSeconds, deviceId: device))
                } catch {
                    throw await withFallback(error, app: client, user: draft.userId)
                }
            }
        } catch {
            throw await withFallback(error, app: client, user: nil)
        }
    }

    struct AssertionBody: Decodable {
        var credentialId: String
        var challenge: String
        var counter: Int64
        var signature: String
    }

    /// The bytes the device signs: every value the server checks, one per line, under a version label.
    static func assertionMessage(app: UUID, device: String, credential: String, challenge: String, counter: Int64) -> [UInt8] {
        Array("facegate.device-assertion.v1\n\(app.wire)\n\(device)\n\(credential)\n\(challenge)\n\(counter)".utf8)
    }

    /// Order matters: the challenge is spent before the signature is looked at (one guess per challenge);
    /// the counter is judged only for a good signature, so a forger cannot get a credential flagged.
    func deviceAssertion(_ request: HTTPRequest, client: AppRecord) async throws -> HTTPResponse {
        do {
            let caller = try await clientDevice(request, app: client)
            let device = caller.id
            let body = try request.decodeJSON(AssertionBody.self)
            return try await recorded(request, kind: "device.assert", appId: client.id, deviceId: device) { draft in
                do {
                    try await apps.admit(client, module: .deviceAuth)
                    guard body.counter >= 0 else { throw APIError(.invalidRequest, "counter must not be negative") }
                    let credential = try await liveCredential(body.credentialId, app: client.id, device: device)
                    draft.userId = credential.userId
                    draft.detail = ["credentialId": credential.id.wire, "counter": String(body.counter)]
                    try refuseFlagged(credential)
                    return try await attempts.attempt(appId: client.id, [.credential(credential.id), .clientAddress(clientAddress(request))]) {
                        let spent = try await database.query("""
                            UPDATE one_time_challenges SET used_at = now()
                            WHERE id = \(body.challenge) AND app_id = \(client.id) AND purpose = 'device-assertion' AND subject = \(credential.id.wire)
                              AND used_at IS NULL AND expires_at > now()
                            """)
                        guard spent.affectedRows == 1 else {
                            throw APIError(.authenticationFailed, "the challenge is unknown, already used or expired; ask for a new one")
                        }
                        let message = Self.assertionMessage(app: client.id, device: device, credential: credential.id.wire,
                                                            challenge: body.challenge, counter: body.counter)
                        guard let signature = Data(base64Encoded: body.signature), let key = try? P256PublicKey(spkiDER: credential.publicKey),
                              key.isValidSignature(derSignature: Array(signature), for: message) else {
                            throw APIError(.authenticationFailed, "the signature does not verify")
                        }
                        try await advanceCounter(credential, to: body.counter)
                        let token = try identityTokens.issue(app: client.id, user: credential.userId, device: device, method: "device_biometric",
                                                             transaction: draft.id, keyThumbprint: caller.thumbprint)
                        return (.json(LoginSuccess(identityToken: token, expiresIn: Int(configuration.identityTokenTTL),
                                                   transactionId: draft.id.wire, userId: credential.userId.wire)), .success)
                    }
                } catch {
                    throw await withFallback(error, app: client, user: draft.userId)
                }
            }
        } catch {
            throw await withFallback(error, app: client, user: nil)
        }
    }

    /// WebAuthn's rule: once the device counts, each use must count higher; a repeat or a step back means
    /// a copy of the key may exist, so the credential is flagged and refused until registered again.
    /// One conditional UPDATE, so concurrent assertions cannot both pass with the same counter.
    private func advanceCounter(_ credential: StoredCredential, to counter: Int64) async throws {
        let advanced = try await database.query("""
            UPDATE device_credentials SET counter = \(counter), last_used_at = now()
            WHERE id = \(credential.id) AND revoked_at IS NULL AND flagged_at IS NULL
              AND ((counter = 0 AND \(counter) = 0) OR counter < \(counter))
            """)
        guard advanced.affectedRows == 0 else { return }
        let flagged = try await database.query("""
            UPDATE device_credentials SET flagged_at = now() WHERE id = \(credential.id) AND revoked_at IS NULL AND flagged_at IS NULL
            """)
        if flagged.affectedRows == 0 {
            let revoked = try await database.query("SELECT 1 FROM device_credentials WHERE id = \(credential.id) AND revoked_at IS NOT NULL")
            if revoked.first != nil { throw APIError(.credentialNotEnrolled, "no such device credential on this device") }
        }
        logger.warning("device credential counter did not advance; credential flagged", ["credential.id": credential.id.wire])
        throw APIError(.authenticationFailed, "the signature counter did not advance: this credential is now blocked; register the device again")
    }

    private func refuseFlagged(_ credential: StoredCredential) throws {
        if credential.flagged {
            throw APIError(.authenticationFailed, "this credential is blocked (its counter went backwards); register the device again")
        }
    }

    // MARK: - Fallback hint

    /// Face login can stand in when the app has the module on and (if the user is known) a face enrolled.
    private func faceLoginAvailable(app: AppRecord?, user: UUID?) async -> Bool {
        guard let app, app.modules.faceLogin != .disabled else { return false }
        guard let user else { return true }
        let rows = try? await database.query("SELECT 1 FROM face_templates WHERE app_id = \(app.id) AND user_id = \(user) LIMIT 1")
        return rows.map { $0.first != nil } ?? true
    }

    static let fallbackMarker = " (fallback: "

    /// Appends the fallback hint to an API or HTTP error's message, once.
    private func withFallback(_ error: Error, app: AppRecord?, user: UUID?) async -> Error {
        func note() async -> String { Self.fallbackMarker + (await faceLoginAvailable(app: app, user: user) ? "faceLogin)" : "none)") }
        if var error = error as? APIError {
            guard !error.message.contains(Self.fallbackMarker) else { return error }
            error.message += await note()
            return error
        }
        if var error = error as? HTTPError {
            guard !error.message.contains(Self.fallbackMarker) else { return error }
            error.message += await note()
            return error
        }
        return error
    }

    // MARK: - Listing, revocation, reset

    struct CredentialView: Encodable {
        var credentialId: String
        var userId: String
        var deviceId: String
        var policy: String
        var counter: Int64
        var hasAttestation: Bool
        var createdAt: Date
        var lastUsedAt: Date?
        var flaggedAt: Date?
        var revokedAt: Date?
    }

    func listDeviceCredentials(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let userId = try request.uuidParameter("userId")
        _ = try await user(userId, app: app.id)
        let rows = try await database.query("""
            SELECT id, user_id, device_id, policy, counter, attestation IS NOT NULL AS has_attestation, created_at, last_used_at, flagged_at, revoked_at
            FROM device_credentials WHERE app_id = \(app.id) AND user_id = \(userId) ORDER BY created_at, id LIMIT 1000
            """)
        let items = try rows.rows.map { row in
            CredentialView(credentialId: try row.decode("id", as: UUID.self).wire, userId: try row.decode("user_id", as: UUID.self).wire,
                           deviceId: try row.decode("device_id"), policy: try row.decode("policy"), counter: try row.decode("counter"),
                           hasAttestation: try row.decode("has_attestation"), createdAt: try row.decode("created_at"),
                           lastUsedAt: try row.decode("last_used_at"), flaggedAt: try row.decode("flagged_at"), revokedAt: try row.decode("revoked_at"))
        }
        struct Page: Encodable { var items: [CredentialView] }
        return .json(Page(items: items))
    }

    /// Operator revocation: immediate, since every assertion reads `revoked_at`.
    func revokeDeviceCredential(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        return try await recorded(request, kind: "device.revoke", appId: app.id) { draft in
            try await revoke(request.pathParameters["credentialId"], app: app.id, device: nil, draft: &draft)
            draft.detail["revokedBy"] = "operator"
            return .noContent
        }
    }

    /// Client revocation: only from the device the credential belongs to.
    func revokeOwnDeviceCredential(_ request: HTTPRequest, client: AppRecord) async throws -> HTTPResponse {
        do {
            let caller = try await clientDevice(request, app: client)
            let device = caller.id
            return try await recorded(request, kind: "device.revoke", appId: client.id, deviceId: device) { draft in
                do {
                    try await revoke(request.pathParameters["credentialId"], app: client.id, device: device, draft: &draft)
                    draft.detail["revokedBy"] = "device"
                    return .noContent
                } catch {
                    throw await withFallback(error, app: client, user: draft.userId)
                }
            }
        } catch {
            throw await withFallback(error, app: client, user: nil)
        }
    }

    private func revoke(_ text: String?, app: UUID, device: String?, draft: inout TransactionDraft) async throws {
        guard let credentialId = text.flatMap(UUID.init(uuidString:)) else { throw APIError(.credentialNotEnrolled, "no such live device credential") }
        let rows = try await database.query("""
            UPDATE device_credentials SET revoked_at = now()
            WHERE id = \(credentialId) AND app_id = \(app) AND (\(device == nil) OR device_id = \(device)) AND revoked_at IS NULL
            RETURNING user_id, device_id
            """)
        guard let row = rows.first else { throw APIError(.credentialNotEnrolled, "no such live device credential") }
        draft.userId = try row.decode("user_id")
        draft.deviceId = try row.decode("device_id")
        draft.detail = ["credentialId": credentialId.wire]
    }

    /// Clears a credential's failed-attempt counters and lock (a flagged credential stays refused).
    func resetDeviceCredential(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let credentialId = try request.uuidParameter("credentialId")
        return try await recorded(request, kind: "device.credential.reset", appId: app.id) { draft in
            let rows = try await database.query("SELECT user_id, device_id FROM device_credentials WHERE id = \(credentialId) AND app_id = \(app.id)")
            guard let row = rows.first else { throw APIError(.credentialNotEnrolled, "no such device credential") }
            draft.userId = try row.decode("user_id")
            draft.deviceId = try row.decode("device_id")
            draft.detail = ["credentialId": credentialId.wire]
            try await attempts.reset(appId: app.id, .credential(credentialId))
            return .noContent
        }
    }
}

/// When the device may use the key: any enrolled biometric, only the biometrics enrolled at
/// registration, or the device passcode. Recorded for the app's policy; the device enforces it.
enum DeviceCredentialPolicy: String, Sendable {
    case biometryCurrentSet, biometryAny, devicePasscode
}
