import AppRecords
@testable import AuthGateway
import Crypto
import FaceGateCore
import Foundation
import IdentityRecords
import JWT
import Testing

/// `DeviceCredentials` over in-memory stores, with real P-256 keys and signatures and tokens of the real issuer. End to
/// end (HTTP, PostgreSQL, the fallback hint in the envelope): IntegrationTests' DeviceCredentialTests.
@Suite struct DeviceCredentialsUseCaseTests {
    let clock = FakeClock()
    let signingKey = JWTSigningKey(kid: "gateway", privateKey: Ed25519PrivateKey())
    let users = InMemoryUserDirectory()
    let credentials: InMemoryDeviceCredentials
    let counters: InMemoryAttemptCounters
    let spentTokenIds = InMemorySpentTokenIds()
    let flagged = Calls<UUID>()
    let app = AppRecord(id: UUID(), name: "app", secretHash: [], modules: .initial, faceModel: .sface2021dec,
                        matchThreshold: FaceModel.sface2021dec.defaultThreshold, liveness: .initial, deviceBinding: .header,
                        deviceBindingPolicy: .employeeNumber, kioskApproval: KioskApprovalPolicy(), quotas: .initial,
                        keepEnrollmentPhotos: false, createdAt: Date())

    init() {
        credentials = InMemoryDeviceCredentials(clock: clock)
        counters = InMemoryAttemptCounters(clock: clock)
    }

    var flow: DeviceCredentials {
        let flagged = self.flagged
        return DeviceCredentials(admission: AdmitEverything(),
                                 attempts: AttemptGuard(store: counters, rule: .init(throttleAfter: 3, throttleSeconds: 30, lockAfter: 6),
                                                        addressRule: .init(throttleAfter: 100, throttleSeconds: 30, lockAfter: 0)),
                                 credentials: credentials, spentTokenIds: spentTokenIds, users: users,
                                 tokens: IdentityTokenIssuer(issuer: "https://facegate.test", key: signingKey, ttl: 300),
                                 keys: JWTKeySet([(kid: signingKey.kid, key: signingKey.publicKey)]), issuer: "https://facegate.test") {
            flagged.record($0)
        }
    }

    func user(_ number: String) -> UUID {
        let id = users.add(appId: app.id, employeeNumber: number)
        credentials.addUser(id)
        return id
    }

    func faceToken(_ user: UUID, device: String = "phone-1", method: String = "face", ttl: TimeInterval = 300) throws -> String {
        try IdentityTokenIssuer(issuer: "https://facegate.test", key: signingKey, ttl: ttl)
            .issue(app: app.id, user: user, device: device, method: method, transaction: UUID(), amr: ["face"])
    }

    func key(_ key: P256PrivateKey) throws -> DeviceCredentials.NewCredential {
        try DeviceCredentials.NewCredential(publicKey: Data(key.publicKey.spkiDER).base64EncodedString(), policy: "biometryCurrentSet",
                                            attestation: nil)
    }

    /// A fresh challenge for the credential, signed with `signer` at `counter` as the device would.
    func assertion(_ credential: UUID, signer: P256PrivateKey, counter: Int64, device: String = "phone-1") async throws -> DeviceCredentials.Assertion {
        var draft = TransactionDraft(appId: app.id, kind: "device.challenge")
        let issued = try await flow.challenge(app: app, device: device, credentialId: credential.wire, draft: &draft)
        let message = DeviceAssertion.message(appId: app.id.wire, deviceId: issued.deviceId, credentialId: credential.wire,
                                              challenge: issued.challenge, counter: counter)
        return DeviceCredentials.Assertion(credentialId: credential.wire, challenge: issued.challenge, counter: counter,
                                           signature: Data(try signer.signature(for: message)).base64EncodedString())
    }

    func assert(_ assertion: DeviceCredentials.Assertion, device: String = "phone-1") async throws -> (identityToken: String, userId: UUID) {
        var draft = TransactionDraft(appId: app.id, kind: "device.assert")
        return try await flow.assert(app: app, device: device, keyThumbprint: nil, clientAddress: "198.51.100.7", assertion, draft: &draft)
    }

    @Test func aFaceLoginTokenRegistersOnceAndASignedChallengeLogsIn() async throws {
        let obama = user("E1001")
        let device = P256PrivateKey()
        let token = try faceToken(obama)
        var draft = TransactionDraft(appId: app.id, kind: "device.register")
        let credential = try await flow.register(app: app, device: "phone-1", identityToken: token, credential: { try key(device) }, draft: &draft)
        #expect(draft.userId == obama && draft.detail["registeredBy"] == "faceLogin")
        #expect(await errorCode { try await flow.register(app: app, device: "phone-1", identityToken: token, credential: { try key(device) }, draft: &draft) }
                == .identityTokenUsed)

        let (identityToken, user) = try await assert(try await assertion(credential, signer: device, counter: 1))
        #expect(user == obama)
        let claims = try JWT.verify(identityToken, as: IdentityTokenClaims.self, keys: JWTKeySet([(kid: signingKey.kid, key: signingKey.publicKey)]),
                                    type: TokenType.identity, issuer: "https://facegate.test", audience: app.id.wire)
        #expect(claims.method == "device_biometric" && claims.deviceId == "phone-1" && claims.sub == obama.wire)
    }

    @Test func registrationNeedsAFreshFaceLoginTokenOfThisDevice() async throws {
        let obama = user("E1001")
        let device = P256PrivateKey()
        func register(_ token: String, device name: String = "phone-1") async -> ErrorCode? {
            var draft = TransactionDraft(appId: app.id, kind: "device.register")
            return await errorCode { try await flow.register(app: app, device: name, identityToken: token, credential: { try key(device) }, draft: &draft) }
        }
        #expect(await register(try faceToken(obama, method: "device_biometric")) == .identityTokenInvalid)
        #expect(await register(try faceToken(obama, device: "phone-2")) == .identityTokenInvalid)
        #expect(await register(try faceToken(obama, ttl: -120)) == .identityTokenExpired)
        #expect(await register("not.a.token") == .identityTokenInvalid)
        // A bad key is refused before the token is spent.
        let token = try faceToken(obama)
        var draft = TransactionDraft(appId: app.id, kind: "device.register")
        #expect(await errorCode {
            try await flow.register(app: app, device: "phone-1", identityToken: token, credential: {
                try DeviceCredentials.NewCredential(publicKey: "bm90IGEga2V5", policy: "biometryAny", attestation: nil)
            }, draft: &draft)
        } == .invalidRequest)
        #expect(await register(token) == nil)
    }

    @Test func theKnownPoliciesAreTakenAndAnyOtherIsRefusedNamingThem() throws {
        let publicKey = Data(P256PrivateKey().publicKey.spkiDER).base64EncodedString()
        for name in ["biometryCurrentSet", "biometryAny", "devicePasscode"] {
            #expect(try DeviceCredentials.NewCredential(publicKey: publicKey, policy: name, attestation: nil).policy.rawValue == name)
        }
        for name in ["faceIdMaybe", "", "BiometryAny"] {
            #expect {
                try DeviceCredentials.NewCredential(publicKey: publicKey, policy: name, attestation: nil)
            } throws: { error in
                (error as? APIError)?.message == "policy must be one of biometryCurrentSet, biometryAny, devicePasscode"
            }
        }
    }

    @Test func eachChallengeAnswersOnceAndAForgeryNeitherLogsInNorFlags() async throws {
        let obama = user("E1001")
        let device = P256PrivateKey()
        var draft = TransactionDraft(appId: app.id, kind: "device.register")
        let credential = try await flow.registerAsOperator(app: app, user: obama, device: "phone-1", credential: { try key(device) }, draft: &draft)
        #expect(draft.detail["registeredBy"] == "operator")

        let signed = try await assertion(credential, signer: device, counter: 1)
        _ = try await assert(signed)
        #expect(await errorCode { try await assert(signed) } == .authenticationFailed, "the challenge is spent")
        #expect(await errorCode { try await assert(try await assertion(credential, signer: device, counter: 2), device: "phone-2") } == .credentialNotEnrolled)

        let forged = try await assertion(credential, signer: P256PrivateKey(), counter: 1)
        #expect(await errorCode { try await assert(forged) } == .authenticationFailed)
        #expect(flagged.all.isEmpty, "a forger cannot get the credential flagged")
        _ = try await assert(try await assertion(credential, signer: device, counter: 3))
    }

    @Test func aCounterThatDoesNotRiseFlagsTheCredentialUntilItIsRegisteredAgain() async throws {
        let obama = user("E1001")
        let device = P256PrivateKey()
        var draft = TransactionDraft(appId: app.id, kind: "device.register")
        let credential = try await flow.registerAsOperator(app: app, user: obama, device: "phone-1", credential: { try key(device) }, draft: &draft)
        _ = try await assert(try await assertion(credential, signer: device, counter: 7))
        #expect(await errorCode { try await assert(try await assertion(credential, signer: device, counter: 7)) } == .authenticationFailed)
        #expect(flagged.all == [credential])
        var challengeDraft = TransactionDraft(appId: app.id, kind: "device.challenge")
        #expect(await errorCode { try await flow.challenge(app: app, device: "phone-1", credentialId: credential.wire, draft: &challengeDraft) }
                == .authenticationFailed, "a flagged credential gets no challenge")
        let again = try await flow.registerAsOperator(app: app, user: obama, device: "phone-1", credential: { try key(device) }, draft: &draft)
        _ = try await assert(try await assertion(again, signer: device, counter: 1))
    }

    @Test func revocationIsFromTheOwnDeviceOrAnOperatorAndAResetReopensALockedCredential() async throws {
        let obama = user("E1001")
        let device = P256PrivateKey()
        var draft = TransactionDraft(appId: app.id, kind: "device.register")
        let credential = try await flow.registerAsOperator(app: app, user: obama, device: "phone-1", credential: { try key(device) }, draft: &draft)
        // Six forged answers lock the credential; an operator's reset opens it again.
        for _ in 0..<6 {
            _ = await errorCode { try await assert(try await assertion(credential, signer: P256PrivateKey(), counter: 1)) }
            clock.advance(seconds: 31)
        }
        #expect(await errorCode { try await assertion(credential, signer: device, counter: 1) } == .credentialLocked)
        var resetDraft = TransactionDraft(appId: app.id, kind: "device.credential.reset")
        try await flow.reset(app: app, credentialId: credential, draft: &resetDraft)
        _ = try await assert(try await assertion(credential, signer: device, counter: 1))

        var revokeDraft = TransactionDraft(appId: app.id, kind: "device.revoke")
        #expect(await errorCode { try await flow.revoke(app: app, credentialId: credential.wire, device: "phone-2", draft: &revokeDraft) } == .credentialNotEnrolled)
        try await flow.revoke(app: app, credentialId: credential.wire, device: "phone-1", draft: &revokeDraft)
        #expect(revokeDraft.userId == obama && revokeDraft.detail["revokedBy"] == "device")
        #expect(await errorCode { try await assertion(credential, signer: device, counter: 2) } == .credentialNotEnrolled)
        #expect(try await flow.list(app: app, user: obama).first?.revokedAt != nil)
    }

    @Test func theFallbackIsFaceLoginOnlyWhenTheAppHasItAndTheUserAFace() async throws {
        let obama = user("E1001")
        #expect(await flow.fallback(app: app, user: obama) == .faceLogin)
        #expect(await flow.fallback(app: app, user: nil) == .faceLogin)
        #expect(await flow.fallback(app: nil, user: nil) == DeviceCredentials.Fallback.none)
        #expect(await flow.fallback(app: app, user: UUID()) == DeviceCredentials.Fallback.none, "no face enrolled")
        var off = app
        off.modules.faceLogin = .disabled
        #expect(await flow.fallback(app: off, user: obama) == DeviceCredentials.Fallback.none)
    }
}
