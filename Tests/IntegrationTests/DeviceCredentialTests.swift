import AppRecords
import Crypto
import FaceGateCore
import FaceGateTestSupport
import Foundation
import JWT
import PostgresClient
import Testing

/// Device biometric credentials against a real gateway and PostgreSQL, with real P-256 keys: the device's
/// side is written here from the wire contract (API.md), not from the gateway's code.
@Suite(.serialized, .sharedStack(withMatcher: false)) struct DeviceCredentialTests {
    /// A device holding a key for one credential.
    struct Device {
        var id: String
        var key: P256PrivateKey
        var credentialId = ""
    }

    static func publicKey(_ key: P256PrivateKey) -> String { Data(key.publicKey.spkiDER).base64EncodedString() }

    func registerByOperator(_ stack: TestStack, _ app: TestStack.App, user: String, device: inout Device) async throws {
        let reply = try await stack.call("POST", "/v1/apps/\(app.id)/users/\(user)/device-credentials", bearer: stack.adminKey,
                                         json: ["deviceId": device.id, "publicKey": Self.publicKey(device.key), "policy": "biometryCurrentSet"])
        guard reply.status == 201, let id = reply.string("credentialId") else {
            throw TestSetupError("credential not registered: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        }
        device.credentialId = id
    }

    func challenge(_ stack: TestStack, token: String, device: Device, credentialId: String? = nil) async throws -> TestStack.Reply {
        try await stack.call("POST", "/v1/device-credentials/challenges", bearer: token, json: ["credentialId": credentialId ?? device.credentialId],
                             headers: ["X-Device-Id": device.id])
    }

    func freshChallenge(_ stack: TestStack, token: String, device: Device) async throws -> String {
        let reply = try await challenge(stack, token: token, device: device)
        guard reply.status == 200, let value = reply.string("challenge") else {
            throw TestSetupError("no challenge: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        }
        return value
    }

    /// Signs `facegate.device-assertion.v1\n{appId}\n{deviceId}\n{credentialId}\n{challenge}\n{counter}` and posts it.
    func assertion(_ stack: TestStack, token: String, app: TestStack.App, device: Device, challenge: String, counter: Int,
                   signer: P256PrivateKey? = nil, signedAppId: String? = nil) async throws -> TestStack.Reply {
        let message = "facegate.device-assertion.v1\n\(signedAppId ?? app.id)\n\(device.id)\n\(device.credentialId)\n\(challenge)\n\(counter)"
        let signature = try (signer ?? device.key).signature(for: Array(message.utf8))
        return try await stack.call("POST", "/v1/device-credentials/assertions", bearer: token,
                                    json: ["credentialId": device.credentialId, "challenge": challenge, "counter": counter,
                                           "signature": Data(signature).base64EncodedString()],
                                    headers: ["X-Device-Id": device.id])
    }

    func message(_ reply: TestStack.Reply) -> String { ((reply.json["error"] as? [String: Any])?["message"] as? String) ?? "" }

    func transactionCounts(_ stack: TestStack, app: TestStack.App) async throws -> [String: Int] {
        let rows = try await stack.database.pool.query("""
            SELECT kind || ' ' || outcome AS key, count(*)::int AS n FROM transactions WHERE app_id = \(UUID(uuidString: app.id)!) GROUP BY 1
            """)
        var counts: [String: Int] = [:]
        for row in rows { counts[try row.decode("key", as: String.self)] = try row.decode("n", as: Int.self) }
        return counts
    }

    @Test func assertionsYieldSingleUseIdentityTokensAndRefuseReplaysAndOldCounters() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "D1", name: "Device Owner")
            var device = Device(id: "phone-a", key: P256PrivateKey())
            try await registerByOperator(stack, app, user: user, device: &device)
            let token = try await stack.accessToken(app)

            let first = try await freshChallenge(stack, token: token, device: device)
            #expect(Base64URL.decode(first)?.count == 32)
            let ok = try await assertion(stack, token: token, app: app, device: device, challenge: first, counter: 1)
            #expect(ok.status == 200)
            #expect(ok.string("status") == "SUCCESS")
            #expect(ok.string("userId") == user)
            #expect(ok.json["expiresIn"] as? Int == 300)
            let identityToken = try #require(ok.string("identityToken"))
            let exchanged = try await stack.call("POST", "/v1/identity/exchange", basic: (app.id, app.secret), json: ["identityToken": identityToken])
            #expect(exchanged.status == 200)
            #expect(exchanged.string("method") == "device_biometric")
            #expect(exchanged.string("deviceId") == "phone-a")
            #expect(exchanged.string("userId") == user)

            // The same challenge and signature again: the challenge is spent.
            let replay = try await assertion(stack, token: token, app: app, device: device, challenge: first, counter: 1)
            #expect(replay.status == 422)
            #expect(replay.errorCode == "AUTHENTICATION_FAILED")
            #expect(replay.json["error"].flatMap { ($0 as? [String: Any])?["transactionId"] as? String } != nil)
            // The user has no face enrolled, so face login cannot stand in.
            #expect(message(replay).hasSuffix("(fallback: none)"))

            // Another key, a signature over another app's id, an expired challenge.
            let wrongKey = try await assertion(stack, token: token, app: app, device: device,
                                               challenge: try await freshChallenge(stack, token: token, device: device), counter: 2, signer: P256PrivateKey())
            #expect(wrongKey.errorCode == "AUTHENTICATION_FAILED")
            let wrongApp = try await assertion(stack, token: token, app: app, device: device,
                                               challenge: try await freshChallenge(stack, token: token, device: device), counter: 2,
                                               signedAppId: UUID().uuidString.lowercased())
            #expect(wrongApp.errorCode == "AUTHENTICATION_FAILED")
            let stale = try await freshChallenge(stack, token: token, device: device)
            _ = try await stack.database.pool.query("UPDATE one_time_challenges SET expires_at = now() - interval '1 second' WHERE id = \(stale)")
            let expired = try await assertion(stack, token: token, app: app, device: device, challenge: stale, counter: 2)
            #expect(expired.errorCode == "AUTHENTICATION_FAILED")
            #expect(message(expired).contains("expired"))

            // A correctly signed but repeated counter flags the credential; afterwards even a good one is refused.
            let held = try await freshChallenge(stack, token: token, device: device)
            let repeated = try await assertion(stack, token: token, app: app, device: device,
                                               challenge: try await freshChallenge(stack, token: token, device: device), counter: 1)
            #expect(repeated.errorCode == "AUTHENTICATION_FAILED")
            let flagged = try await stack.database.pool.query("SELECT flagged_at IS NOT NULL AS flagged FROM device_credentials WHERE id = \(UUID(uuidString: device.credentialId)!)")
            #expect(try flagged.first?.decode("flagged", as: Bool.self) == true)
            let afterFlag = try await assertion(stack, token: token, app: app, device: device, challenge: held, counter: 50)
            #expect(afterFlag.status == 422)
            #expect(afterFlag.errorCode == "AUTHENTICATION_FAILED")
            #expect(try await challenge(stack, token: token, device: device).errorCode == "AUTHENTICATION_FAILED")

            // Registering again recovers, with a new credential id; the flagged one is retired.
            let oldId = device.credentialId
            try await registerByOperator(stack, app, user: user, device: &device)
            #expect(device.credentialId != oldId)
            let recovered = try await assertion(stack, token: token, app: app, device: device,
                                                challenge: try await freshChallenge(stack, token: token, device: device), counter: 0)
            #expect(recovered.status == 200)
            let listed = try await stack.call("GET", "/v1/apps/\(app.id)/users/\(user)/device-credentials", bearer: stack.adminKey)
            let items = listed.json["items"] as? [[String: Any]] ?? []
            #expect(items.count == 2)
            #expect(items.first { $0["credentialId"] as? String == oldId }?["flaggedAt"] != nil)
            #expect(items.first { $0["credentialId"] as? String == oldId }?["revokedAt"] != nil)
            #expect(items.first { $0["credentialId"] as? String == device.credentialId }?["revokedAt"] == nil)

            // One transaction per attempt.
            let counts = try await transactionCounts(stack, app: app)
            #expect(counts["device.register SUCCESS"] == 2)
            #expect(counts["device.assert SUCCESS"] == 2)
            #expect(counts["device.assert AUTHENTICATION_FAILED"] == 6)
            #expect(counts["device.challenge SUCCESS"] == 7)
            #expect(counts["device.challenge AUTHENTICATION_FAILED"] == 1)
        }
    }

    @Test func clientRegistrationSpendsAFaceLoginIdentityTokenOfThisDevice() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "D2", name: "Client Registrant")
            let token = try await stack.accessToken(app)
            let jwks = try await stack.call("GET", "/.well-known/jwks.json")
            let kid = try #require(((jwks.json["keys"] as? [[String: Any]])?.first?["kid"]) as? String)
            let signer = JWTSigningKey(kid: kid, privateKey: try Ed25519PrivateKey(seed: stack.signingSeed))
            func identityToken(device: String, method: String = "face") throws -> String {
                let claims = IdentityTokenClaims(issuer: "facegate", appId: UUID(uuidString: app.id)!, userId: UUID(uuidString: user)!,
                                                 deviceId: device, method: method, transactionId: UUID(), issuedAt: Date(), ttl: 300)
                return try JWT.sign(claims, type: TokenType.identity, key: signer)
            }
            var device = Device(id: "phone-c", key: P256PrivateKey())
            func register(_ identity: String, publicKey: String? = nil, policy: String = "biometryAny", extra: [String: Any] = [:]) async throws -> TestStack.Reply {
                var body: [String: Any] = ["identityToken": identity, "publicKey": publicKey ?? Self.publicKey(device.key), "policy": policy]
                body.merge(extra) { _, new in new }
                return try await stack.call("POST", "/v1/device-credentials", bearer: token, json: body, headers: ["X-Device-Id": device.id])
            }

            let identity = try identityToken(device: device.id)
            // Malformed keys and policies are refused before the token is spent.
            let rsaLike = Data(SecureRandom.bytes(91)).base64EncodedString()
            let ed25519 = Data(Ed25519PrivateKey().publicKey.rawRepresentation).base64EncodedString()
            for bad in [rsaLike, ed25519, "not base64!"] {
                let reply = try await register(identity, publicKey: bad)
                #expect(reply.status == 400)
                #expect(reply.errorCode == "INVALID_REQUEST")
            }
            #expect(try await register(identity, policy: "faceIdMaybe").errorCode == "INVALID_REQUEST")
            #expect(try await register(try identityToken(device: "another-phone")).errorCode == "IDENTITY_TOKEN_INVALID")
            #expect(try await register(try identityToken(device: device.id, method: "device_biometric")).errorCode == "IDENTITY_TOKEN_INVALID")

            let attestation = Data(SecureRandom.bytes(64)).base64EncodedString()
            let created = try await register(identity, extra: ["attestation": attestation])
            #expect(created.status == 201)
            device.credentialId = try #require(created.string("credentialId"))
            let reused = try await register(identity)
            #expect(reused.status == 409)
            #expect(reused.errorCode == "IDENTITY_TOKEN_USED")
            // Spent here, so the app server cannot exchange it either.
            let exchange = try await stack.call("POST", "/v1/identity/exchange", basic: (app.id, app.secret), json: ["identityToken": identity])
            #expect(exchange.errorCode == "IDENTITY_TOKEN_USED")

            let stored = try await stack.database.pool.query("""
                SELECT policy, attestation, public_key FROM device_credentials WHERE id = \(UUID(uuidString: device.credentialId)!)
                """)
            #expect(try stored.first?.decode("policy", as: String.self) == "biometryAny")
            #expect(try stored.first?.decode("attestation", as: [UInt8]?.self) == Array(Data(base64Encoded: attestation)!))
            #expect(try stored.first?.decode("public_key", as: [UInt8].self) == device.key.publicKey.spkiDER)

            // A device that keeps no counter (always 0) may assert repeatedly.
            for _ in 0..<2 {
                let reply = try await assertion(stack, token: token, app: app, device: device,
                                                challenge: try await freshChallenge(stack, token: token, device: device), counter: 0)
                #expect(reply.status == 200)
            }
            let counts = try await transactionCounts(stack, app: app)
            #expect(counts["device.register SUCCESS"] == 1)
            #expect(counts["device.register INVALID_REQUEST"] == 4)
            #expect(counts["device.register IDENTITY_TOKEN_INVALID"] == 2)
            #expect(counts["device.register IDENTITY_TOKEN_USED"] == 1)
        }
    }

    @Test func failuresThrottleThenLockAndRevocationIsImmediate() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "D3", name: "Locked Out")
            var device = Device(id: "phone-l", key: P256PrivateKey())
            try await registerByOperator(stack, app, user: user, device: &device)
            let token = try await stack.accessToken(app)
            let forger = P256PrivateKey()

            var challenges: [String] = []
            for _ in 0..<7 { challenges.append(try await freshChallenge(stack, token: token, device: device)) }
            for index in 0..<5 {
                let reply = try await assertion(stack, token: token, app: app, device: device, challenge: challenges[index], counter: index + 1, signer: forger)
                #expect(reply.errorCode == "AUTHENTICATION_FAILED")
            }
            let throttled = try await assertion(stack, token: token, app: app, device: device, challenge: challenges[5], counter: 9)
            #expect(throttled.status == 429)
            #expect(throttled.errorCode == "RATE_LIMITED")
            #expect(Int(throttled.headers["retry-after"] ?? "") ?? 0 > 0)
            #expect(try await challenge(stack, token: token, device: device).errorCode == "RATE_LIMITED")
            // This user has no face enrolled, so face login is no fallback.
            #expect(message(throttled).hasSuffix("(fallback: none)"))

            // The 50th failure locks the credential until an operator resets it.
            let subject = "credential:" + device.credentialId
            _ = try await stack.database.pool.query("""
                UPDATE attempt_counters SET consecutive_failures = 0, total_failures = 49, last_failure_at = NULL
                WHERE app_id = \(UUID(uuidString: app.id)!) AND subject = \(subject)
                """)
            let fiftieth = try await assertion(stack, token: token, app: app, device: device, challenge: challenges[5], counter: 9, signer: forger)
            #expect(fiftieth.errorCode == "AUTHENTICATION_FAILED")
            let locked = try await assertion(stack, token: token, app: app, device: device, challenge: challenges[6], counter: 9)
            #expect(locked.status == 423)
            #expect(locked.errorCode == "CREDENTIAL_LOCKED")
            let reset = try await stack.call("POST", "/v1/apps/\(app.id)/device-credentials/\(device.credentialId)/reset", bearer: stack.adminKey)
            #expect(reset.status == 204)
            let afterReset = try await assertion(stack, token: token, app: app, device: device, challenge: challenges[6], counter: 9)
            #expect(afterReset.status == 200)

            // Revocation from another device is refused; from its own device it is immediate.
            let pending = try await freshChallenge(stack, token: token, device: device)
            let foreignDevice = try await stack.call("DELETE", "/v1/device-credentials/\(device.credentialId)", bearer: token, headers: ["X-Device-Id": "someone-else"])
            #expect(foreignDevice.status == 404)
            #expect(foreignDevice.errorCode == "CREDENTIAL_NOT_ENROLLED")
            let revoked = try await stack.call("DELETE", "/v1/device-credentials/\(device.credentialId)", bearer: token, headers: ["X-Device-Id": device.id])
            #expect(revoked.status == 204)
            let afterRevoke = try await assertion(stack, token: token, app: app, device: device, challenge: pending, counter: 10)
            #expect(afterRevoke.status == 404)
            #expect(afterRevoke.errorCode == "CREDENTIAL_NOT_ENROLLED")
            #expect(try await challenge(stack, token: token, device: device).errorCode == "CREDENTIAL_NOT_ENROLLED")

            // The operator revokes too.
            var second = Device(id: "tablet-l", key: P256PrivateKey())
            try await registerByOperator(stack, app, user: user, device: &second)
            let operatorRevoke = try await stack.call("DELETE", "/v1/apps/\(app.id)/device-credentials/\(second.credentialId)", bearer: stack.adminKey)
            #expect(operatorRevoke.status == 204)
            #expect(try await challenge(stack, token: token, device: second).errorCode == "CREDENTIAL_NOT_ENROLLED")
            let again = try await stack.call("DELETE", "/v1/apps/\(app.id)/device-credentials/\(second.credentialId)", bearer: stack.adminKey)
            #expect(again.errorCode == "CREDENTIAL_NOT_ENROLLED")

            let counts = try await transactionCounts(stack, app: app)
            #expect(counts["device.assert AUTHENTICATION_FAILED"] == 6)
            #expect(counts["device.assert RATE_LIMITED"] == 1)
            #expect(counts["device.assert CREDENTIAL_LOCKED"] == 1)
            #expect(counts["device.assert CREDENTIAL_NOT_ENROLLED"] == 1)
            #expect(counts["device.revoke SUCCESS"] == 2)
            #expect(counts["device.revoke CREDENTIAL_NOT_ENROLLED"] == 2)
        }
    }

    @Test func credentialsBelongToOneAppAndOneDevice() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let app = try await stack.createApp()
            let other = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "D4", name: "Tenant A")
            var device = Device(id: "phone-t", key: P256PrivateKey())
            try await registerByOperator(stack, app, user: user, device: &device)
            let token = try await stack.accessToken(app)
            let otherToken = try await stack.accessToken(other)

            // Another app's access token, even with the right device id and a signature over its own app id.
            let foreignChallenge = try await challenge(stack, token: otherToken, device: device)
            #expect(foreignChallenge.status == 404)
            #expect(foreignChallenge.errorCode == "CREDENTIAL_NOT_ENROLLED")
            // The other app has face login on, and no user is known: face login is the fallback.
            #expect(message(foreignChallenge).hasSuffix("(fallback: faceLogin)"))
            let good = try await freshChallenge(stack, token: token, device: device)
            let crossApp = try await assertion(stack, token: otherToken, app: other, device: device, challenge: good, counter: 1)
            #expect(crossApp.errorCode == "CREDENTIAL_NOT_ENROLLED")
            // The same app from another device.
            var elsewhere = device
            elsewhere.id = "phone-x"
            #expect(try await challenge(stack, token: token, device: elsewhere).errorCode == "CREDENTIAL_NOT_ENROLLED")
            // The other app's operator paths see nothing of this app's credentials or users.
            let revoke = try await stack.call("DELETE", "/v1/apps/\(other.id)/device-credentials/\(device.credentialId)", bearer: stack.adminKey)
            #expect(revoke.errorCode == "CREDENTIAL_NOT_ENROLLED")
            let list = try await stack.call("GET", "/v1/apps/\(other.id)/users/\(user)/device-credentials", bearer: stack.adminKey)
            #expect(list.status == 404)
            let register = try await stack.call("POST", "/v1/apps/\(other.id)/users/\(user)/device-credentials", bearer: stack.adminKey,
                                                json: ["deviceId": "phone-t", "publicKey": Self.publicKey(P256PrivateKey()), "policy": "biometryAny"])
            #expect(register.status == 404)
            // Without the access token or an operator key, nothing.
            #expect(try await challenge(stack, token: "garbage", device: device).errorCode == "ACCESS_TOKEN_INVALID")
            let anonymous = try await stack.call("GET", "/v1/apps/\(app.id)/users/\(user)/device-credentials", bearer: token)
            #expect(anonymous.status == 401)
            // The good challenge still works for its own app: the cross-app attempt did not spend it.
            #expect(try await assertion(stack, token: token, app: app, device: device, challenge: good, counter: 1).status == 200)

            // Module switched off: refused before the credential is looked up, so face login (still on) is named as the fallback.
            let patched = try await stack.call("PATCH", "/v1/apps/\(app.id)", bearer: stack.adminKey, json: ["modules": ["deviceAuth": "disabled"]])
            #expect(patched.status == 200)
            let disabled = try await challenge(stack, token: token, device: device)
            #expect(disabled.status == 403)
            #expect(disabled.errorCode == "MODULE_DISABLED")
            #expect(message(disabled).hasSuffix("(fallback: faceLogin)"))
            let counts = try await transactionCounts(stack, app: app)
            #expect(counts["device.challenge MODULE_DISABLED"] == 1)
            #expect(try await transactionCounts(stack, app: other)["device.challenge CREDENTIAL_NOT_ENROLLED"] == 1)
        }
    }
}
