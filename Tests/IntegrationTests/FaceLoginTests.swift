import Crypto
import FaceGateCore
import Foundation
import JWT
import KafkaClient
import PostgresClient
import ServiceKit
import Testing

/// Face login end to end: HTTP → gateway → Kafka → matcher-worker (real dlib model, real photos) → reply → token.
@Suite(.serialized, .sharedStack()) struct FaceLoginTests {
    /// The caller's trace reaches every record its call causes: the gallery change the matcher broadcasts for the new
    /// template and the call's audit record, as well as the job and its reply.
    @Test func theRecordsACallCausesCarryItsTrace() async throws {
        try await TestStack.with() { stack in
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "T1", name: "Traced")
            let traceId = "5af7651916cd43dd8448eb211c80319d"
            let enrolled = try await stack.call("POST", "/v1/apps/\(app.id)/users/\(user)/faces", bearer: stack.adminKey,
                                                body: try TestEnvironment.image("obama.jpg"), contentType: "image/jpeg",
                                                headers: ["traceparent": "00-\(traceId)-b7ad6b7169203331-01"])
            #expect(enrolled.status == 201)
            // The answer names the gateway's span of the caller's trace (W3C Trace Context level 2), as the request's log line does.
            let answered = try #require(enrolled.headers["traceresponse"].flatMap(TraceContext.init(traceparent:)))
            #expect(answered.traceId == traceId && answered.spanId != "b7ad6b7169203331")
            // A refusal names it too, and a call without a traceparent gets a trace of its own.
            let refused = try await stack.call("GET", "/v1/apps", bearer: "fgk_not_a_key", headers: ["traceparent": "00-\(traceId)-b7ad6b7169203331-01"])
            #expect(refused.status == 401 && refused.headers["traceresponse"].flatMap(TraceContext.init(traceparent:))?.traceId == traceId)
            #expect(try await stack.call("GET", "/v1/apps", bearer: stack.adminKey).headers["traceresponse"].flatMap(TraceContext.init(traceparent:)) != nil)
            let templateId = try #require(enrolled.string("templateId"))
            let prefix = stack.environment["FACEGATE_TOPIC_PREFIX"]!
            func traced(_ message: KafkaMessage) -> Bool {
                message.header(MessageHeader.traceparent).map { String(decoding: $0, as: UTF8.self).contains(traceId) } ?? false
            }
            // Both are sent after the answer may have left: read until they are there.
            var change = false, audit = false
            let deadline = ContinuousClock.now + .seconds(15)
            while !(change && audit), ContinuousClock.now < deadline {
                change = try await PrivacyScan.readAll(prefix + "gallery.changes.v1").contains {
                    String(decoding: $0.key ?? [], as: UTF8.self) == templateId && traced($0)
                }
                audit = try await PrivacyScan.readAll(prefix + "audit.transactions.v1").contains(where: traced)
                if !(change && audit) { try await Task.sleep(for: .milliseconds(500)) }
            }
            #expect(change, "the matcher's gallery change for \(templateId) does not carry the call's trace")
            #expect(audit, "no audit record carries the call's trace")
        }
    }

    @Test func enrollLoginConfirmExchangeOnARealStack() async throws {
        try await TestStack.with() { stack in
            let app = try await stack.createApp()
            let obama = try await stack.createUser(app, employeeNumber: "E1001", name: "Barack Obama")

            let enrolled = try await stack.enroll(app, user: obama, photo: "obama.jpg")
            #expect(enrolled.status == 201)
            #expect(enrolled.string("templateId") != nil)
            let quality = enrolled.json["quality"] as? [String: Any]
            #expect((quality?["faceWidth"] as? Int ?? 0) > 80)

            let token = try await stack.accessToken(app)

            // A new device: the face matches, the employee number confirms the device.
            let first = try await stack.faceLogin(token, device: "phone-1", photo: "obama2.jpg")
            #expect(first.status == 200)
            #expect(first.string("status") == "CONFIRM_REQUIRED")
            let confirmation = try #require(first.string("confirmationId"))

            let wrong = try await stack.call("POST", "/v1/face-login/confirm", bearer: token,
                                             json: ["confirmationId": confirmation, "employeeNumber": "E9999"], headers: ["X-Device-Id": "phone-1"])
            #expect(wrong.status == 422)
            #expect(wrong.errorCode == "EMPLOYEE_NUMBER_MISMATCH")
            #expect(wrong.headers["content-type"]?.hasPrefix("application/json") == true)

            let otherDevice = try await stack.call("POST", "/v1/face-login/confirm", bearer: token,
                                                   json: ["confirmationId": confirmation, "employeeNumber": "E1001"], headers: ["X-Device-Id": "phone-2"])
            #expect(otherDevice.status == 409)
            #expect(otherDevice.errorCode == "CONFIRMATION_INVALID")

            let confirmed = try await stack.call("POST", "/v1/face-login/confirm", bearer: token,
                                                 json: ["confirmationId": confirmation, "employeeNumber": "E1001"], headers: ["X-Device-Id": "phone-1"])
            #expect(confirmed.status == 200)
            #expect(confirmed.string("status") == "SUCCESS")
            #expect(confirmed.string("userId") == obama)
            let identityToken = try #require(confirmed.string("identityToken"))
            #expect(confirmed.json["expiresIn"] as? Int == 300)

            let reused = try await stack.call("POST", "/v1/face-login/confirm", bearer: token,
                                              json: ["confirmationId": confirmation, "employeeNumber": "E1001"], headers: ["X-Device-Id": "phone-1"])
            #expect(reused.errorCode == "CONFIRMATION_INVALID")

            // The app server turns the identity token into the user, once.
            let exchanged = try await stack.call("POST", "/v1/identity/exchange", basic: (app.id, app.secret), json: ["identityToken": identityToken])
            #expect(exchanged.status == 200)
            #expect(exchanged.string("employeeNumber") == "E1001")
            #expect(exchanged.string("name") == "Barack Obama")
            #expect(exchanged.string("deviceId") == "phone-1")
            #expect(exchanged.string("method") == "face")
            let again = try await stack.call("POST", "/v1/identity/exchange", basic: (app.id, app.secret), json: ["identityToken": identityToken])
            #expect(again.status == 409)
            #expect(again.errorCode == "IDENTITY_TOKEN_USED")

            // The confirmed device logs in straight away, from other photos of the same person too.
            for photo in ["obama3.jpg", "obama_partial_face.jpg", "32bit.png"] {
                let login = try await stack.faceLogin(token, device: "phone-1", photo: photo)
                #expect(login.status == 200, "\(photo): \(login.status) \(String(decoding: login.body, as: UTF8.self))")
                #expect(login.string("status") == "SUCCESS", "\(photo)")
                #expect(login.string("userId") == obama)
        }

        // Someone else is not let in; a non-image is refused before any matching.
        let biden = try await stack.faceLogin(token, device: "phone-1", photo: "biden.jpg")
        #expect(biden.status == 422)
        #expect(biden.errorCode == "NO_MATCH_FACE")
        #expect(biden.json["error"].flatMap { ($0 as? [String: Any])?["transactionId"] as? String } != nil)
        let text = try await stack.faceLogin(token, device: "phone-1", image: Data("hello, not a photo".utf8))
        #expect(text.status == 422)
        #expect(text.errorCode == "IMAGE_FORMAT_ERROR")
        let truncated = try await stack.faceLogin(token, device: "phone-1", image: try TestEnvironment.image("obama2.jpg").prefix(4000))
        #expect(truncated.errorCode == "IMAGE_FORMAT_ERROR")

        // Once biden is enrolled he is found.
        let bidenId = try await stack.createUser(app, employeeNumber: "E1002", name: "Joe Biden")
        #expect(try await stack.enroll(app, user: bidenId, photo: "biden.jpg").status == 201)
        let bidenLogin = try await stack.faceLogin(token, device: "phone-9", photo: "biden.jpg")
        #expect(bidenLogin.string("status") == "CONFIRM_REQUIRED")

        // Enrolling obama's face for biden is refused as a duplicate.
        let duplicate = try await stack.enroll(app, user: bidenId, photo: "obama2.jpg")
        #expect(duplicate.errorCode == "DUPLICATE_FACE")

        // Deleting obama erases his templates from the matcher: his face no longer logs in.
        let deleted = try await stack.call("DELETE", "/v1/apps/\(app.id)/users/\(obama)", bearer: stack.adminKey)
        #expect(deleted.status == 204)
        let afterDelete = try await stack.faceLogin(token, device: "phone-1", photo: "obama2.jpg")
        #expect(afterDelete.errorCode == "NO_MATCH_FACE")
        }
    }

    @Test func tokensAreCheckedStrictly() async throws {
        try await TestStack.with(withMatcher: false) { stack in
            let app = try await stack.createApp()
            let key = JWTSigningKey(kid: "k", privateKey: try Ed25519PrivateKey(seed: stack.signingSeed))

            let expiredClaims = AccessTokenClaims(issuer: "facegate", appId: UUID(uuidString: app.id)!,
                                                  issuedAt: Date().addingTimeInterval(-7300), ttl: 7200)
            // The gateway publishes its own kid; sign with that kid to isolate the expiry check.
            let jwks = try await stack.call("GET", "/.well-known/jwks.json")
            let kid = try #require(((jwks.json["keys"] as? [[String: Any]])?.first?["kid"]) as? String)
            let signer = JWTSigningKey(kid: kid, privateKey: try Ed25519PrivateKey(seed: stack.signingSeed))
            let expired = try JWT.sign(expiredClaims, type: TokenType.access, key: signer)
            let expiredReply = try await stack.faceLogin(expired, device: "d", photo: "obama.jpg")
            #expect(expiredReply.status == 401)
            #expect(expiredReply.errorCode == "ACCESS_TOKEN_EXPIRED")

            let valid = try await stack.accessToken(app)
            var tampered = Array(valid)
            tampered[tampered.count / 2] = tampered[tampered.count / 2] == "A" ? "B" : "A"
            for token in [String(tampered), "garbage", try JWT.sign(expiredClaims, type: TokenType.access, key: key)] {
                let reply = try await stack.faceLogin(token, device: "d", photo: "obama.jpg")
                #expect(reply.status == 401)
                #expect(reply.errorCode == "ACCESS_TOKEN_INVALID")
        }
        // An identity token used as an access token is refused (typ and aud differ).
        let identity = IdentityTokenClaims(issuer: "facegate", appId: UUID(uuidString: app.id)!, userId: UUID(), deviceId: "d",
                                           method: "face", transactionId: UUID(), issuedAt: Date(), ttl: 300)
        let wrongType = try JWT.sign(identity, type: TokenType.identity, key: signer)
        #expect(try await stack.faceLogin(wrongType, device: "d", photo: "obama.jpg").errorCode == "ACCESS_TOKEN_INVALID")

        // Another app's server cannot exchange this app's identity token.
        let other = try await stack.createApp()
        let foreign = try await stack.call("POST", "/v1/identity/exchange", basic: (other.id, other.secret), json: ["identityToken": wrongType])
        #expect(foreign.errorCode == "IDENTITY_TOKEN_INVALID")
        let wrongSecret = try await stack.call("POST", "/v1/access-tokens", basic: (app.id, "fgs_wrong"))
        #expect(wrongSecret.status == 401)
        #expect(wrongSecret.errorCode == "UNAUTHORIZED")

        // Offline verification with the published JWKS works for tokens the gateway issues.
        let keys = (jwks.json["keys"] as? [[String: Any]]) ?? []
        #expect(keys.first?["alg"] as? String == "EdDSA")
        #expect(keys.first?["crv"] as? String == "Ed25519")
        }
    }

    @Test func modulesQuotasAndBruteForceRules() async throws {
        try await TestStack.with() { stack in
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "7", name: "Obama")
            #expect(try await stack.enroll(app, user: user, photo: "obama.jpg").status == 201)
            let token = try await stack.accessToken(app)

            // Five failures, then the sixth attempt is throttled with Retry-After, even with the right face.
            for attempt in 1...5 {
                let reply = try await stack.faceLogin(token, device: "brute", photo: "biden.jpg")
                #expect(reply.errorCode == "NO_MATCH_FACE", "attempt \(attempt)")
        }
        let throttled = try await stack.faceLogin(token, device: "brute", photo: "obama2.jpg")
        #expect(throttled.status == 429)
        #expect(throttled.errorCode == "RATE_LIMITED")
        #expect(Int(throttled.headers["retry-after"] ?? "") ?? 0 > 0)
        // Other devices are not affected; an operator reset clears it.
        #expect(try await stack.faceLogin(token, device: "other", photo: "obama2.jpg").string("status") == "CONFIRM_REQUIRED")
        #expect(try await stack.call("POST", "/v1/apps/\(app.id)/devices/brute/reset", bearer: stack.adminKey).status == 204)
        #expect(try await stack.faceLogin(token, device: "brute", photo: "obama2.jpg").string("status") == "CONFIRM_REQUIRED")

        // Disabled module.
        let disabled = try await stack.call("PATCH", "/v1/apps/\(app.id)", bearer: stack.adminKey, json: ["modules": ["faceLogin": "disabled"]])
        #expect(disabled.status == 200)
        let refused = try await stack.faceLogin(token, device: "other", photo: "obama2.jpg")
        #expect(refused.status == 403)
        #expect(refused.errorCode == "MODULE_DISABLED")

        // Trial within its quota works, beyond it answers MODULE_NOT_FORMAL.
        _ = try await stack.call("PATCH", "/v1/apps/\(app.id)", bearer: stack.adminKey,
                                 json: ["modules": ["faceLogin": "trial"], "quotas": ["dailyCalls": 0, "gallerySize": 10]])
        let trial = try await stack.faceLogin(token, device: "other", photo: "obama2.jpg")
        #expect(trial.status == 403)
        #expect(trial.errorCode == "MODULE_NOT_FORMAL")
        }
    }

    @Test func matcherAbsentMeansServiceUnavailableInTime() async throws {
        try await TestStack.with(withMatcher: false, extra: ["FACEGATE_REQUEST_TIMEOUT_SECONDS": "2"]) { stack in
            let app = try await stack.createApp()
            let token = try await stack.accessToken(app)
            let started = ContinuousClock.now
            let reply = try await stack.faceLogin(token, device: "d", photo: "obama2.jpg")
            let waited = ContinuousClock.now - started
            #expect(reply.status == 503)
            #expect(reply.errorCode == "SERVICE_UNAVAILABLE")
            #expect(waited < .seconds(10), "answered after \(waited)")
        }
    }
}
