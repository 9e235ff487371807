import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import JWT

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
                    guard try await spentTokenIds.spend(claims.jti, appId: client.id, expiresAt: claims.exp) else {
                        throw APIError(.identityTokenUsed, "the identity token was already used")
                    }
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

    /// One live credential per (user, device): a new registration replaces the previous one.
    private func storeCredential(_ credential: NewCredential, app: UUID, user: UUID, device: String) async throws -> UUID {
        guard let id = try await deviceCredentials.register(credential, appId: app, user: user, device: device) else {
            throw APIError(.notFound, "the user no longer exists in this app")
        }
        return id
    }

    // MARK: - Challenge and assertion

    struct ChallengeBody: Decodable { var credentialId: String }

    /// The live credential `text` names, registered to this app and device; anything else is not enrolled.
    private func liveCredential(_ text: String, app: UUID, device: String) async throws -> StoredCredential {
        guard let id = UUID(uuidString: text), let credential = try await deviceCredentials.live(id, appId: app, device: device) else {
            throw APIError(.credentialNotEnrolled, "no such device credential on this device")
        }
        return credential
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
                    try await deviceCredentials.issueChallenge(challenge, appId: client.id, credential: credential.id, ttlSeconds: Self.challengeSeconds)
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
                        guard try await deviceCredentials.spendChallenge(body.challenge, appId: client.id, credential: credential.id) else {
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
    private func advanceCounter(_ credential: StoredCredential, to counter: Int64) async throws {
        switch try await deviceCredentials.advanceCounter(credential.id, to: counter) {
        case .advanced: return
        case .revoked: throw APIError(.credentialNotEnrolled, "no such device credential on this device")
        case .flagged: break
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
        return (try? await users.hasFace(user, appId: app.id)) ?? true
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

    func listDeviceCredentials(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let userId = try request.uuidParameter("userId")
        _ = try await user(userId, app: app.id)
        struct Page: Encodable { var items: [CredentialView] }
        return .json(Page(items: try await deviceCredentials.list(appId: app.id, user: userId)))
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
        guard let owner = try await deviceCredentials.revoke(credentialId, appId: app, device: device) else {
            throw APIError(.credentialNotEnrolled, "no such live device credential")
        }
        draft.userId = owner.userId
        draft.deviceId = owner.deviceId
        draft.detail = ["credentialId": credentialId.wire]
    }

    /// Clears a credential's failed-attempt counters and lock (a flagged credential stays refused).
    func resetDeviceCredential(_ request: HTTPRequest, app: AppRecord) async throws -> HTTPResponse {
        let credentialId = try request.uuidParameter("credentialId")
        return try await recorded(request, kind: "device.credential.reset", appId: app.id) { draft in
            guard let owner = try await deviceCredentials.owner(of: credentialId, appId: app.id) else {
                throw APIError(.credentialNotEnrolled, "no such device credential")
            }
            draft.userId = owner.userId
            draft.deviceId = owner.deviceId
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
