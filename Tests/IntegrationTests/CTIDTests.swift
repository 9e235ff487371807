import Crypto
import FaceGateCore
import FaceGateTestSupport
import Foundation
import PostgresClient
import Testing

/// CTID verification through the whole stack: gateway → ctid.jobs.v1 → ctid-verifier (→ matcher) → back.
@Suite(.serialized, .sharedStack(withMatcher: false, withCTID: true)) struct CTIDTests {
    struct CTIDApp {
        var app: TestStack.App
        var appId: UUID
        var key: [UInt8]
        var token: String
    }

    static func number(_ first17: String) -> String {
        first17 + String(ResidentIDNumber.checkCharacter(for: Array(first17.utf8)))
    }

    static let alice = number("11010119900307123")
    static let bob = number("44030619850612456")
    static let carol = number("31010119770101789")

    static func createCTIDApp(_ stack: TestStack) async throws -> CTIDApp {
        let reply = try await stack.call("POST", "/v1/apps", bearer: stack.adminKey, json: [
            "name": "ctid \(UUID().uuidString.prefix(6))", "modules": ["faceLogin": "formal", "ctid": "formal", "kiosk": "formal", "deviceAuth": "formal"]])
        guard reply.status == 201, let id = reply.string("appId"), let secret = reply.string("appSecret"),
              let keyText = reply.string("ctidKey"), let key = Data(base64Encoded: keyText) else {
            throw TestSetupError("app not created: \(reply.status)")
        }
        let app = TestStack.App(id: id, secret: secret)
        return CTIDApp(app: app, appId: UUID(uuidString: id)!, key: Array(key), token: try await stack.accessToken(app))
    }

    static func register(_ stack: TestStack, _ app: CTIDApp, number: String, name: String, start: String = "20200101", end: String = "20400101",
                         photo: String? = nil) async throws -> TestStack.Reply {
        var body: [String: Any] = ["number": number, "name": name, "validDateStart": start, "validDateEnd": end]
        if let photo { body["photoData"] = try TestEnvironment.image(photo).base64EncodedString() }
        return try await stack.call("POST", "/v1/apps/\(app.app.id)/ctid-registry", bearer: stack.adminKey, json: body)
    }

    static func serial(_ stack: TestStack, _ app: CTIDApp, mode: String) async throws -> (serial: String, rand: String) {
        let reply = try await stack.call("POST", "/v1/ctid/serial-numbers", bearer: app.token, json: ["authMode": mode])
        guard reply.status == 200, let serial = reply.string("bizSerialNum"), let rand = reply.string("randNum") else {
            throw TestSetupError("no serial: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        }
        return (serial, rand)
    }

    static func envelope(_ app: CTIDApp, _ request: CTIDVerificationRequest) throws -> CTIDEnvelope {
        try CTIDEnvelope.seal(try FaceGateJSON.encode(request), appId: app.appId, key: app.key)
    }

    static func post(_ stack: TestStack, _ app: CTIDApp, _ envelope: CTIDEnvelope) async throws -> TestStack.Reply {
        try await stack.call("POST", "/v1/ctid/verifications", bearer: app.token, body: Data(try FaceGateJSON.encode(envelope)),
                             contentType: "application/json", headers: ["X-Device-Id": "ctid-test-\(UUID().uuidString.prefix(8))"])
    }

    /// Opens the answer envelope with the app's key; fails the test if it is not a valid envelope.
    static func answer(_ reply: TestStack.Reply, _ app: CTIDApp) throws -> CTIDVerificationAnswer {
        guard reply.status == 200 else { throw TestSetupError("verification answered \(reply.status): \(String(decoding: reply.body, as: UTF8.self))") }
        let envelope = try FaceGateJSON.decode(CTIDEnvelope.self, from: Array(reply.body))
        return try FaceGateJSON.decode(CTIDVerificationAnswer.self, from: try envelope.open(expectedAppId: app.appId, key: app.key))
    }

    /// A fresh serial for `mode`, then one verification of `request` (serial fields filled in).
    static func verify(_ stack: TestStack, _ app: CTIDApp, mode: String, _ request: CTIDVerificationRequest) async throws -> CTIDVerificationAnswer {
        let (serial, rand) = try await serial(stack, app, mode: mode)
        var request = request
        request.bizSerialNum = serial
        request.randNum = rand
        let result = try answer(try await post(stack, app, try envelope(app, request)), app)
        #expect(result.bizSerialNum == serial)
        #expect(UUID(uuidString: result.transactionId) != nil)
        return result
    }

    static func claim(_ number: String, _ name: String, start: String? = nil, end: String? = nil, photo: Data? = nil) -> CTIDVerificationRequest {
        CTIDVerificationRequest(bizSerialNum: "", randNum: "", idNumber: number, name: name, validDateStart: start, validDateEnd: end, photoData: photo)
    }

    @Test func verifiesNameNumberAndValidityModesAndRefusesBadFields() async throws {
        try await TestStack.with(withMatcher: false, withCTID: true) { stack in
            let app = try await Self.createCTIDApp(stack)
            #expect(try await Self.register(stack, app, number: Self.alice, name: "张三").status == 201)
            #expect(try await Self.register(stack, app, number: Self.bob, name: "李四", start: "20100101", end: "长期").status == 201)
            #expect(try await Self.register(stack, app, number: Self.carol, name: "王五", start: "20000101", end: "20200101").status == 201)

            // 0x40 name + number.
            var result = try await Self.verify(stack, app, mode: "0x40", Self.claim(Self.alice, "张三"))
            #expect(result.authResult == "" && result.resultCode == "0")
            result = try await Self.verify(stack, app, mode: "0x40", Self.claim(Self.alice, "张四"))
            #expect(result.authResult == "5XXX" && result.resultCode == "1")
            // The original SDK's request object, field for field (`number`, `authMode`), as a client written from it sends.
            let (serial, rand) = try await Self.serial(stack, app, mode: "0x40")
            let seed = #"{"bizSerialNum":"\#(serial)","authMode":"0x40","name":"张三","number":"\#(Self.alice)","randNum":"\#(rand)"}"#
            result = try Self.answer(try await Self.post(stack, app, try CTIDEnvelope.seal(Array(seed.utf8), appId: app.appId, key: app.key)), app)
            #expect(result.authResult == "" && result.resultCode == "0", "\(result)")
            var otherMode = Self.claim(Self.alice, "张三")
            otherMode.authMode = "0x42"
            result = try await Self.verify(stack, app, mode: "0x40", otherMode)
            #expect(result.resultCode == "3" && result.message.contains("authMode"), "\(result)")
            // Unknown number (valid check digit, not registered).
            result = try await Self.verify(stack, app, mode: "0x40", Self.claim(Self.number("11010119900307999"), "张三"))
            #expect(result.authResult == "5XXX" && result.resultCode == "1")
            // Wrong check digit.
            let wrongCheck = String(Self.alice.dropLast()) + (Self.alice.last == "0" ? "1" : "0")
            result = try await Self.verify(stack, app, mode: "0x40", Self.claim(wrongCheck, "张三"))
            #expect(result.authResult == "5XXX" && result.resultCode == "3")
            #expect(result.message.contains("check digit"))
            // Impossible birth date (February 30th) with a correct check digit.
            result = try await Self.verify(stack, app, mode: "0x40", Self.claim(Self.number("11010119900230123"), "张三"))
            #expect(result.authResult == "5XXX" && result.resultCode == "3")
            #expect(result.message.contains("birth date"))

            // 0x10 name + number + validity dates.
            result = try await Self.verify(stack, app, mode: "0x10", Self.claim(Self.alice, "张三", start: "20200101", end: "20400101"))
            #expect(result.authResult == "" && result.resultCode == "0")
            result = try await Self.verify(stack, app, mode: "0x10", Self.claim(Self.alice, "张三", start: "20200101", end: "20390101"))
            #expect(result.authResult == "5XXX" && result.resultCode == "1")
            // Long-term document.
            result = try await Self.verify(stack, app, mode: "0x10", Self.claim(Self.bob, "李四", start: "20100101", end: "长期"))
            #expect(result.authResult == "" && result.resultCode == "0")
            // Expired document.
            result = try await Self.verify(stack, app, mode: "0x10", Self.claim(Self.carol, "王五", start: "20000101", end: "20200101"))
            #expect(result.authResult == "5XXX" && result.resultCode == "1")
            // Malformed dates.
            result = try await Self.verify(stack, app, mode: "0x10", Self.claim(Self.alice, "张三", start: "2020-01-01", end: "20400101"))
            #expect(result.authResult == "5XXX" && result.resultCode == "3")

            // Modes that need the CTID network credential are refused when the serial is asked for.
            for mode in ["0x06", "0x16"] {
                let reply = try await stack.call("POST", "/v1/ctid/serial-numbers", bearer: app.token, json: ["authMode": mode])
                #expect(reply.status == 400 && reply.errorCode == "INVALID_REQUEST")
                #expect(String(decoding: reply.body, as: UTF8.self).contains("unsupported auth mode"))
            }

            // Every attempt is a transaction, the number masked, no name.
            let rows = try await stack.database.pool.query("""
                SELECT outcome, detail::text AS detail FROM transactions WHERE app_id = \(app.appId) AND kind = 'ctid.verify'
                """)
            #expect(rows.count == 12)
            for row in rows {
                let detail = try row.decode("detail", as: String.self)
                #expect(!detail.contains(Self.alice) && !detail.contains("张三") && !detail.contains("李四"))
            }
            let details = try rows.map { try $0.decode("detail", as: String.self) }
            #expect(details.contains { $0.contains("1101**********" + String(Self.alice.suffix(4))) })
            #expect(details.allSatisfy { $0.contains(#""actor": "client"#) }, "the verifier's rows name the client as their actor: \(details)")
            // The registry holds neither the plain number nor the plain name.
            let registry = try await stack.database.pool.query("SELECT number_hash, name_sealed FROM ctid_registry WHERE app_id = \(app.appId)")
            #expect(registry.count == 3)
            for row in registry {
                let sealed = try row.decode("name_sealed", as: [UInt8].self)
                #expect(String(decoding: sealed, as: UTF8.self).contains("张三") == false)
                #expect(try row.decode("number_hash", as: [UInt8].self) != Array(Self.alice.utf8))
            }
            // The caller's W3C trace travels with the job and comes back on the verifier's reply.
            let traceId = "0af7651916cd43dd8448eb211c80319c"
            var traced = Self.claim(Self.alice, "张三")
            (traced.bizSerialNum, traced.randNum) = try await Self.serial(stack, app, mode: "0x40")
            let tracedReply = try await stack.call("POST", "/v1/ctid/verifications", bearer: app.token,
                                                   body: Data(try FaceGateJSON.encode(try Self.envelope(app, traced))), contentType: "application/json",
                                                   headers: ["X-Device-Id": "ctid-test-device", "traceparent": "00-\(traceId)-b7ad6b7169203331-01"])
            #expect(try Self.answer(tracedReply, app).resultCode == "0")
            let replies = try await PrivacyScan.readAll(stack.environment["FACEGATE_TOPIC_PREFIX"]! + "replies.auth-gateway.v1")
            #expect(replies.contains { $0.header(MessageHeader.traceparent).map { String(decoding: $0, as: UTF8.self) }?.contains(traceId) == true },
                    "none of \(replies.count) replies carries the caller's trace")
        }
    }

    @Test func checksPortraitsThroughTheMatcher() async throws {
        try await TestStack.with(withCTID: true) { stack in
            let app = try await Self.createCTIDApp(stack)
            #expect(try await Self.register(stack, app, number: Self.alice, name: "奥巴马", photo: "obama.jpg").status == 201)
            #expect(try await Self.register(stack, app, number: Self.bob, name: "李四").status == 201)
            let obama2 = try TestEnvironment.image("obama2.jpg")
            let biden = try TestEnvironment.image("biden.jpg")

            var result = try await Self.verify(stack, app, mode: "0x42", Self.claim(Self.alice, "奥巴马", photo: obama2))
            #expect(result.authResult == "" && result.resultCode == "0")
            result = try await Self.verify(stack, app, mode: "0x42", Self.claim(Self.alice, "奥巴马", photo: biden))
            #expect(result.authResult == "01XX" && result.resultCode == "1")
            result = try await Self.verify(stack, app, mode: "0x42", Self.claim(Self.alice, "拜登", photo: obama2))
            #expect(result.authResult == "5XXX" && result.resultCode == "1")
            // No portrait on file.
            result = try await Self.verify(stack, app, mode: "0x42", Self.claim(Self.bob, "李四", photo: obama2))
            #expect(result.authResult == "0DXX" && result.resultCode == "1")

            result = try await Self.verify(stack, app, mode: "0x12", Self.claim(Self.alice, "奥巴马", start: "20200101", end: "20400101", photo: obama2))
            #expect(result.authResult == "" && result.resultCode == "0")
            result = try await Self.verify(stack, app, mode: "0x12", Self.claim(Self.alice, "奥巴马", start: "20200101", end: "20400101", photo: biden))
            #expect(result.authResult == "01XX" && result.resultCode == "1")

            // A registry photo without a face is refused.
            let noFace = try await stack.call("POST", "/v1/apps/\(app.app.id)/ctid-registry", bearer: stack.adminKey, json: [
                "number": Self.carol, "name": "王五", "validDateStart": "20200101", "validDateEnd": "20400101",
                "photoData": Data(repeating: 0x41, count: 64).base64EncodedString()])
            #expect(noFace.status == 422)
        }
    }

    /// A registered number and an unknown one answer a wrong name alike; tries at one identity are limited whoever sends
    /// them (every call here from a device of its own), the verdict withheld once the identity has failed too often, and
    /// another identity is not held back.
    @Test func registryNumbersCannotBeEnumerated() async throws {
        try await TestStack.with(withMatcher: false, withCTID: true) { stack in
            let app = try await Self.createCTIDApp(stack)
            #expect(try await Self.register(stack, app, number: Self.alice, name: "张三").status == 201)
            let known = try await Self.verify(stack, app, mode: "0x40", Self.claim(Self.alice, "李四"))
            let unknown = try await Self.verify(stack, app, mode: "0x40", Self.claim(Self.carol, "李四"))
            #expect(known.resultCode == "1" && known.resultCode == unknown.resultCode && known.authResult == unknown.authResult
                    && known.message == unknown.message)
            for name in ["王五", "赵六", "孙七", "周八"] {
                #expect(try await Self.verify(stack, app, mode: "0x40", Self.claim(Self.alice, name)).resultCode == "1")
            }
            // The sixth try at alice, even with her right name, gets no verdict.
            let (serial, rand) = try await Self.serial(stack, app, mode: "0x40")
            var request = Self.claim(Self.alice, "张三")
            request.bizSerialNum = serial
            request.randNum = rand
            let withheld = try await Self.post(stack, app, try Self.envelope(app, request))
            #expect(withheld.status == 429 && withheld.errorCode == "RATE_LIMITED" && withheld.headers["retry-after"] != nil)
            #expect(try await Self.verify(stack, app, mode: "0x40", Self.claim(Self.carol, "李四")).resultCode == "1", "another identity is answered")
        }
    }

    @Test func serialNumbersAreSingleUseBoundAndExpiring() async throws {
        try await TestStack.with(withMatcher: false, withCTID: true) { stack in
            let app = try await Self.createCTIDApp(stack)
            let other = try await Self.createCTIDApp(stack)
            #expect(try await Self.register(stack, app, number: Self.alice, name: "张三").status == 201)
            #expect(try await Self.register(stack, other, number: Self.alice, name: "张三").status == 201)

            let issued = try await stack.call("POST", "/v1/ctid/serial-numbers", bearer: app.token, json: ["authMode": "0x40"])
            #expect(issued.status == 200)
            #expect((issued.json["expiresIn"] as? Int) == 600)
            #expect(issued.string("bizSerialNum")!.count == 32)

            // Reused.
            let (serial, rand) = try await Self.serial(stack, app, mode: "0x40")
            var request = Self.claim(Self.alice, "张三")
            request.bizSerialNum = serial
            request.randNum = rand
            var result = try Self.answer(try await Self.post(stack, app, try Self.envelope(app, request)), app)
            #expect(result.resultCode == "0")
            result = try Self.answer(try await Self.post(stack, app, try Self.envelope(app, request)), app)
            #expect(result.resultCode == "2" && result.authResult == "XXXX")

            // Wrong randNum (and the serial is spent by the attempt).
            let (serial2, rand2) = try await Self.serial(stack, app, mode: "0x40")
            request.bizSerialNum = serial2
            request.randNum = rand2 == "000000" ? "111111" : "000000"
            result = try Self.answer(try await Self.post(stack, app, try Self.envelope(app, request)), app)
            #expect(result.resultCode == "2")
            request.randNum = rand2
            result = try Self.answer(try await Self.post(stack, app, try Self.envelope(app, request)), app)
            #expect(result.resultCode == "2")

            // Issued to another app.
            let (foreign, foreignRand) = try await Self.serial(stack, other, mode: "0x40")
            request.bizSerialNum = foreign
            request.randNum = foreignRand
            result = try Self.answer(try await Self.post(stack, app, try Self.envelope(app, request)), app)
            #expect(result.resultCode == "2")
            // ...which the other app can still use.
            result = try Self.answer(try await Self.post(stack, other, try Self.envelope(other, request)), other)
            #expect(result.resultCode == "0")

            // Expired.
            let (expired, expiredRand) = try await Self.serial(stack, app, mode: "0x40")
            _ = try await stack.database.pool.query("UPDATE ctid_serials SET expires_at = now() - interval '1 second' WHERE serial = \(expired)")
            request.bizSerialNum = expired
            request.randNum = expiredRand
            result = try Self.answer(try await Self.post(stack, app, try Self.envelope(app, request)), app)
            #expect(result.resultCode == "2")

            // Bound to its mode: a 0x40 serial does not check validity dates even if they are sent.
            // 20 concurrent submissions of one serial: exactly one is verified. Every try in flight counts against the client
            // address until it is answered, so some of the losers may instead be told to wait (429).
            let (shared, sharedRand) = try await Self.serial(stack, app, mode: "0x40")
            request.bizSerialNum = shared
            request.randNum = sharedRand
            let codes = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<20 {
                    let envelope = try Self.envelope(app, request)
                    group.addTask {
                        let reply = try await Self.post(stack, app, envelope)
                        return reply.status == 429 ? "429" : try Self.answer(reply, app).resultCode
                    }
                }
                var codes: [String] = []
                for try await code in group { codes.append(code) }
                return codes
            }
            #expect(codes.filter { $0 == "0" }.count == 1)
            #expect(codes.allSatisfy { ["0", "2", "429"].contains($0) } && codes.count == 20)
        }
    }

    @Test func everyEnvelopeFaultGetsTheSameAnswer() async throws {
        try await TestStack.with(withMatcher: false, withCTID: true) { stack in
            let app = try await Self.createCTIDApp(stack)
            let other = try await Self.createCTIDApp(stack)
            #expect(try await Self.register(stack, app, number: Self.alice, name: "张三").status == 201)
            let (serial, rand) = try await Self.serial(stack, app, mode: "0x40")
            var request = Self.claim(Self.alice, "张三")
            request.bizSerialNum = serial
            request.randNum = rand
            let good = try Self.envelope(app, request)

            func flipped(_ base64: String, at index: Int) -> String {
                var bytes = Array(Data(base64Encoded: base64)!)
                bytes[index] ^= 0x80
                return Data(bytes).base64EncodedString()
            }
            var bodies: [(String, Data)] = []
            func add(_ label: String, _ envelope: CTIDEnvelope) throws { bodies.append((label, Data(try FaceGateJSON.encode(envelope)))) }
            var e = good; e.data = flipped(good.data, at: 3); try add("ciphertext", e)
            e = good; e.iv = flipped(good.iv, at: 0); try add("iv", e)
            e = good; e.mac = flipped(good.mac, at: 10); try add("mac", e)
            e = good; e.data = Data(Array(Data(base64Encoded: good.data)!).dropLast(16)).base64EncodedString(); try add("truncated", e)
            e = good; e.version = "v2"; try add("version", e)
            e = good; e.appId = other.app.id; try add("appId", e)
            try add("wrong key", try Self.envelope(other, request))
            bodies.append(("not json", Data("{not json".utf8)))
            bodies.append(("empty", Data()))

            var seen: Set<Data> = []
            for (label, body) in bodies {
                let reply = try await stack.call("POST", "/v1/ctid/verifications", bearer: app.token, body: body, contentType: "application/json")
                #expect(reply.status == 400, "\(label)")
                #expect(reply.errorCode == "INVALID_ENVELOPE", "\(label)")
                seen.insert(reply.body)
            }
            #expect(seen.count == 1, "\(seen.map { String(decoding: $0, as: UTF8.self) })")
            // None of the faults spent the serial.
            let result = try Self.answer(try await Self.post(stack, app, good), app)
            #expect(result.resultCode == "0")
            // Each fault was recorded as an attempt.
            let faults = try await stack.database.pool.query("""
                SELECT count(*)::int AS n FROM transactions WHERE app_id = \(app.appId) AND kind = 'ctid.verify' AND outcome = 'INVALID_ENVELOPE'
                """)
            #expect(try faults.first!.decode("n", as: Int.self) == bodies.count)

            // Past the MAC there is no oracle to protect: a plaintext that is not the request object, or lacks a
            // field, gets a sealed answer that names what is wrong.
            let sealedJunk = try CTIDEnvelope.seal(Array("[1,2]".utf8), appId: app.appId, key: app.key)
            let notRequest = try Self.answer(try await Self.post(stack, app, sealedJunk), app)
            #expect(notRequest.resultCode == "3" && notRequest.message.contains("request object"), "\(notRequest)")
            let (fresh, freshRand) = try await Self.serial(stack, app, mode: "0x40")
            let noName = #"{"bizSerialNum":"\#(fresh)","randNum":"\#(freshRand)","authMode":"0x40","number":"\#(Self.alice)"}"#
            let incomplete = try Self.answer(try await Self.post(stack, app, try CTIDEnvelope.seal(Array(noName.utf8), appId: app.appId, key: app.key)), app)
            #expect(incomplete.resultCode == "3" && incomplete.message.contains("name") && incomplete.bizSerialNum == fresh, "\(incomplete)")

            // Registry entries are validated by the verifier.
            let badCheck = try await Self.register(stack, app, number: String(Self.bob.dropLast()) + (Self.bob.last == "0" ? "1" : "0"), name: "李四")
            #expect(badCheck.status == 400 && badCheck.errorCode == "INVALID_REQUEST")
            let badDates = try await Self.register(stack, app, number: Self.bob, name: "李四", start: "20400101", end: "20200101")
            #expect(badDates.status == 400)
        }
    }
}
