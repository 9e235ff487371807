import Crypto
import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation
import JWT

/// Device biometric credentials (module `deviceAuth`), without HTTP: a P-256 key held by the device and unlocked by its
/// biometric signs a single-use server challenge; a good signature yields an identity token with method
/// `device_biometric`. Registration needs proof of the user: a fresh face-login identity token of this app and device
/// (client) or an operator. Lockout per credential follows the face-login rule. The routes authenticate, prove the
/// device and record the transaction.
///
/// Every refusal of a client call names what can stand in for it (`fallback(app:user:)`).
struct DeviceCredentials: Sendable {
    let admission: any ModuleAdmission
    let attempts: AttemptGuard
    let credentials: any DeviceCredentialStore
    let spentTokenIds: any SpentTokenIds
    let users: any UserDirectory
    let tokens: IdentityTokenIssuer
    /// The gateway's token keys: registration takes only a face-login identity token the gateway issued.
    let keys: JWTKeySet
    let issuer: String
    /// Called when a credential is flagged (a counter that did not advance).
    let onFlagged: @Sendable (_ credential: UUID) -> Void

    static let challengeSeconds = 60

    typealias NewCredential = NewDeviceCredential

    struct Challenge: Sendable, Equatable {
        var challenge: String
        var expiresIn: Int
        /// The identity the assertion must sign (the key thumbprint on a `dpop` app).
        var deviceId: String
    }

    struct Assertion: Sendable {
        var credentialId: String
        var challenge: String
        var counter: Int64
        var signature: String
    }

    // MARK: - Registration

    /// Client registration: the identity token proves the user was just verified by face login on this device for this
    /// app; its id is spent so it cannot register a second key or be exchanged later. `credential` is read after the
    /// module is admitted.
    func register(app: AppRecord, device: String, identityToken: String, credential read: () throws -> NewCredential,
                  draft: inout TransactionDraft) async throws -> UUID {
        try await admission.admit(app, module: .deviceAuth)
        let credential = try read()
        let claims: IdentityTokenClaims
        do {
            claims = try JWT.verify(identityToken, as: IdentityTokenClaims.self, keys: keys, type: TokenType.identity, issuer: issuer,
                                    audience: app.id.wire)
        } catch JWTError.expired {
            throw APIError(.identityTokenExpired, "the identity token has expired; log in with your face again")
        } catch {
            throw APIError(.identityTokenInvalid, "the identity token is not valid for this app")
        }
        guard let userId = UUID(uuidString: claims.sub) else { throw APIError(.identityTokenInvalid, "the identity token is not valid for this app") }
        draft.userId = userId
        guard claims.method == "face" else { throw APIError(.identityTokenInvalid, "registration needs an identity token from face login") }
        guard claims.deviceId == device else { throw APIError(.identityTokenInvalid, "the identity token was issued to another device") }
        guard try await spentTokenIds.spend(claims.jti, appId: app.id, expiresAt: claims.exp) else {
            throw APIError(.identityTokenUsed, "the identity token was already used")
        }
        let credentialId = try await store(credential, app: app.id, user: userId, device: device)
        draft.detail = ["credentialId": credentialId.wire, "policy": credential.policy.rawValue, "registeredBy": "faceLogin"]
        return credentialId
    }

    /// Operator registration, for devices enrolled at a desk rather than after a face login.
    func registerAsOperator(app: AppRecord, user: UUID, device: String, credential read: () throws -> NewCredential,
                            draft: inout TransactionDraft) async throws -> UUID {
        draft.userId = user
        guard (1...128).contains(device.utf8.count), device.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw APIError(.invalidRequest, "deviceId must be 1–128 printable ASCII characters")
        }
        let credential = try read()
        guard try await users.exists(user, appId: app.id) else { throw APIError(.notFound, "no such user in this app") }
        let credentialId = try await store(credential, app: app.id, user: user, device: device)
        draft.detail = ["credentialId": credentialId.wire, "policy": credential.policy.rawValue, "registeredBy": "operator"]
        return credentialId
    }

    /// One live credential per (user, device): a new registration replaces the previous one.
    private func store(_ credential: NewCredential, app: UUID, user: UUID, device: String) async throws -> UUID {
        guard let id = try await credentials.register(credential, appId: app, user: user, device: device) else {
            throw APIError(.notFound, "the user no longer exists in this app")
        }
        return id
    }

    // MARK: - Challenge and assertion

    func challenge(app: AppRecord, device: String, credentialId: String, draft: inout TransactionDraft) async throws -> Challenge {
        try await admission.admit(app, module: .deviceAuth)
        let credential = try await liveCredential(credentialId, app: app.id, device: device)
        draft.userId = credential.userId
        draft.detail = ["credentialId": credential.id.wire]
        try refuseFlagged(credential)
        try await attempts.ensureOpen(appId: app.id, .credential(credential.id))
        let challenge = Base64URL.encode(SecureRandom.bytes(32))
        try await credentials.issueChallenge(challenge, appId: app.id, credential: credential.id, ttlSeconds: Self.challengeSeconds)
        return Challenge(challenge: challenge, expiresIn: Self.challengeSeconds, deviceId: device)
    }

    /// Order matters: the challenge is spent before the signature is looked at (one guess per challenge); the counter is
    /// judged only for a good signature, so a forger cannot get a credential flagged. The token is bound to
    /// `keyThumbprint` when the device proved a key. Returns the token and its user.
    func assert(app: AppRecord, device: String, keyThumbprint: String?, clientAddress: String, _ assertion: Assertion,
                draft: inout TransactionDraft) async throws -> (identityToken: String, userId: UUID) {
        try await admission.admit(app, module: .deviceAuth)
        guard assertion.counter >= 0 else { throw APIError(.invalidRequest, "counter must not be negative") }
        let credential = try await liveCredential(assertion.credentialId, app: app.id, device: device)
        draft.userId = credential.userId
        draft.detail = ["credentialId": credential.id.wire, "counter": String(assertion.counter)]
        try refuseFlagged(credential)
        let transaction = draft.id
        return try await attempts.attempt(appId: app.id, [.credential(credential.id), .clientAddress(clientAddress)]) {
            guard try await credentials.spendChallenge(assertion.challenge, appId: app.id, credential: credential.id) else {
                throw APIError(.authenticationFailed, "the challenge is unknown, already used or expired; ask for a new one")
            }
            let message = DeviceAssertion.message(appId: app.id.wire, deviceId: device, credentialId: credential.id.wire,
                                                  challenge: assertion.challenge, counter: assertion.counter)
            guard let signature = Data(base64Encoded: assertion.signature), let key = try? P256PublicKey(spkiDER: credential.publicKey),
                  key.isValidSignature(derSignature: Array(signature), for: message) else {
                throw APIError(.authenticationFailed, "the signature does not verify")
            }
            try await advanceCounter(credential, to: assertion.counter)
            let token = try tokens.issue(app: app.id, user: credential.userId, device: device, method: "device_biometric",
                                         transaction: transaction, keyThumbprint: keyThumbprint,
                                         amr: TrustPolicy.amr(.deviceCredentialAssertion))
            return ((token, credential.userId), .success)
        }
    }

    /// The live credential `text` names, registered to this app and device; anything else is not enrolled.
    private func liveCredential(_ text: String, app: UUID, device: String) async throws -> StoredCredential {
        guard let id = UUID(uuidString: text), let credential = try await credentials.live(id, appId: app, device: device) else {
            throw APIError(.credentialNotEnrolled, "no such device credential on this device")
        }
        return credential
    }

    /// WebAuthn's rule: once the device counts, each use must count higher; a repeat or a step back means a copy of the
    /// key may exist, so the credential is flagged and refused until registered again.
    private func advanceCounter(_ credential: StoredCredential, to counter: Int64) async throws {
        switch try await credentials.advanceCounter(credential.id, to: counter) {
        case .advanced: return
        case .revoked: throw APIError(.credentialNotEnrolled, "no such device credential on this device")
        case .flagged: break
        }
        onFlagged(credential.id)
        throw APIError(.authenticationFailed, "the signature counter did not advance: this credential is now blocked; register the device again")
    }

    private func refuseFlagged(_ credential: StoredCredential) throws {
        if credential.flagged {
            throw APIError(.authenticationFailed, "this credential is blocked (its counter went backwards); register the device again")
        }
    }

    // MARK: - Listing, revocation, reset

    func list(app: AppRecord, user: UUID) async throws -> [CredentialView] {
        guard try await users.exists(user, appId: app.id) else { throw APIError(.notFound, "no such user in this app") }
        return try await credentials.list(appId: app.id, user: user)
    }

    /// Revokes a live credential at once (every assertion reads `revoked_at`); from a client, only on its own `device`.
    func revoke(app: AppRecord, credentialId text: String?, device: String?, draft: inout TransactionDraft) async throws {
        guard let credentialId = text.flatMap(UUID.init(uuidString:)),
              let owner = try await credentials.revoke(credentialId, appId: app.id, device: device) else {
            throw APIError(.credentialNotEnrolled, "no such live device credential")
        }
        draft.userId = owner.userId
        draft.deviceId = owner.deviceId
        draft.detail = ["credentialId": credentialId.wire, "revokedBy": device == nil ? "operator" : "device"]
    }

    /// Clears a credential's failed-attempt counters and lock (a flagged credential stays refused).
    func reset(app: AppRecord, credentialId: UUID, draft: inout TransactionDraft) async throws {
        guard let owner = try await credentials.owner(of: credentialId, appId: app.id) else {
            throw APIError(.credentialNotEnrolled, "no such device credential")
        }
        draft.userId = owner.userId
        draft.deviceId = owner.deviceId
        draft.detail = ["credentialId": credentialId.wire]
        try await attempts.reset(appId: app.id, .credential(credentialId))
    }

    // MARK: - Fallback hint

    /// What a client refused here can do instead: face login when the app has it on and (if the user is known) a face
    /// enrolled, else nothing.
    enum Fallback: String, Sendable { case faceLogin, none }

    func fallback(app: AppRecord?, user: UUID?) async -> Fallback {
        guard let app, app.modules.faceLogin != .disabled else { return .none }
        guard let user else { return .faceLogin }
        // A directory that cannot answer right now does not take the hint away.
        let hasFace = (try? await users.hasFace(user, appId: app.id)) ?? true
        return hasFace ? .faceLogin : .none
    }
}
