import Crypto
import FaceGateClient
import FaceGateCore
import Foundation
import JWT
import Synchronization
import Testing

/// The Swift client library against a running stack: every call below goes through `FaceGateClient`'s
/// public API over real HTTP; the app server's side (access tokens, identity exchange) uses plain HTTP.
@Suite(.serialized) struct ClientEndToEndTests {
    /// Counts how often the app's access-token hook was asked.
    final class RefreshCounter: Sendable {
        private let count = Mutex(0)
        func increment() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    static func configuration(_ stack: TestStack, _ app: TestStack.App, device: String, accessToken: String? = nil,
                              counter: RefreshCounter? = RefreshCounter(), timeout: Duration = .seconds(30)) -> FaceGateConfiguration {
        let refresh: (@Sendable () async throws -> String)? = counter.map { counter in
            { @Sendable in
                counter.increment()
                return try await stack.accessToken(app)
            }
        }
        var configuration = FaceGateConfiguration(baseURL: URL(string: stack.baseURL)!, appId: app.id, deviceId: device, accessToken: accessToken,
                                                  refreshAccessToken: refresh, requestTimeout: timeout)
        configuration.deviceKey = DeviceKey(file: URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("facegate-test-keys/\(app.id)-\(device).der"))
        return configuration
    }

    /// Collects what a `FaceLogin` tells its delegate.
    final class FaceLoginRecorder: FaceLoginDelegate {
        enum Callback: Equatable {
            case succeeded(FaceGateIdentity)
            case needsConfirmation(FaceLoginConfirmation)
            case failed(FaceGateError)
            case transportFailed(FaceGateError)
        }
        private let log = Mutex<[Callback]>([])
        var callbacks: [Callback] { log.withLock { $0 } }
        func faceLogin(_ faceLogin: FaceLogin, didSucceed identity: FaceGateIdentity) { log.withLock { $0.append(.succeeded(identity)) } }
        func faceLoginNeedsConfirmation(_ faceLogin: FaceLogin, confirmation: FaceLoginConfirmation) {
            log.withLock { $0.append(.needsConfirmation(confirmation)) }
        }
        func faceLogin(_ faceLogin: FaceLogin, didFail error: FaceGateError) { log.withLock { $0.append(.failed(error)) } }
        func faceLogin(_ faceLogin: FaceLogin, didFailWithTransportError error: FaceGateError) {
            log.withLock { $0.append(.transportFailed(error)) }
        }
    }

    /// The delegate API, called from synchronous code as an app's button handler would.
    static func startValidation(_ login: FaceLogin, image: Data) -> FaceGateCall { login.validate(image: image) }
    static func startConfirmation(_ login: FaceLogin, employeeNumber: String) -> FaceGateCall { login.confirm(employeeNumber: employeeNumber) }

    static func expectError(_ expected: String, _ body: () async throws(FaceGateError) -> Void,
                            sourceLocation: SourceLocation = #_sourceLocation) async -> FaceGateError? {
        do {
            try await body()
            Issue.record("expected \(expected), the call succeeded", sourceLocation: sourceLocation)
            return nil
        } catch {
            #expect(error.code == expected, "\(error)", sourceLocation: sourceLocation)
            return error
        }
    }

    func exchange(_ stack: TestStack, _ app: TestStack.App, _ identityToken: String) async throws -> TestStack.Reply {
        try await stack.call("POST", "/v1/identity/exchange", basic: (app.id, app.secret), json: ["identityToken": identityToken])
    }

    @Test func faceLoginConfirmRefreshAndDeviceCredentialsThroughTheClient() async throws {
        try await TestStack.with() { stack in
            // The seed flow on an app that knows devices by their keys: the client signs every call.
            let app = try await stack.createApp(extra: ["deviceBinding": "dpop"])
            let obama = try await stack.createUser(app, employeeNumber: "E1001", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: obama, photo: "obama.jpg").status == 201)
            let counter = RefreshCounter()
            // No access token yet: the hook is asked before the first call.
            let configuration = Self.configuration(stack, app, device: "client-phone", counter: counter)
            let login = FaceLogin(configuration: configuration)

            // A new device: confirmation, a wrong number, then the right one.
            let first = try await login.validate(image: try TestEnvironment.image("obama2.jpg"))
            #expect(counter.value == 1)
            guard case .confirmationRequired(let confirmation) = first else {
                Issue.record("expected a confirmation, got \(first)")
                return
            }
            #expect(login.pendingConfirmation == confirmation)
            #expect(UUID(uuidString: confirmation.transactionId) != nil)
            let mismatch = await Self.expectError("EMPLOYEE_NUMBER_MISMATCH") { () async throws(FaceGateError) in
                _ = try await login.confirm(employeeNumber: "E9999")
            }
            if case .employeeNumberMismatch(let server)? = mismatch {
                #expect(server.httpStatus == 422)
                #expect(server.message.contains("tries left"))
            } else {
                Issue.record("not the employeeNumberMismatch case: \(String(describing: mismatch))")
            }
            let confirmed = try await login.confirm(employeeNumber: "E1001")
            #expect(confirmed.userId == obama)
            #expect(confirmed.expiresIn == 300)
            #expect(login.pendingConfirmation == nil)
            let exchanged = try await exchange(stack, app, confirmed.identityToken)
            #expect(exchanged.status == 200)
            #expect(exchanged.string("employeeNumber") == "E1001")
            #expect(exchanged.string("deviceId") == (try configuration.deviceKey?.thumbprint()))
            #expect(exchanged.string("method") == "face")
            _ = await Self.expectError("USAGE") { () async throws(FaceGateError) in _ = try await login.confirm(employeeNumber: "E1001") }

            // The bound device logs in straight away; the app server exchanges the identity token once.
            let second = try await login.validate(image: try TestEnvironment.image("obama3.jpg"))
            guard case .success(let identity) = second else {
                Issue.record("expected success, got \(second)")
                return
            }
            #expect(identity.userId == obama)
            #expect(try await exchange(stack, app, identity.identityToken).string("userId") == obama)
            #expect(counter.value == 1)

            // An invalid and an expired access token: the hook gives a new one and the call is retried once.
            login.setAccessToken("garbage")
            guard case .success = try await login.validate(image: try TestEnvironment.image("32bit.png")) else {
                Issue.record("the PNG did not log in after a refresh")
                return
            }
            #expect(counter.value == 2)
            let jwks = try await stack.call("GET", "/.well-known/jwks.json")
            let kid = try #require(((jwks.json["keys"] as? [[String: Any]])?.first?["kid"]) as? String)
            let signer = JWTSigningKey(kid: kid, privateKey: try Ed25519PrivateKey(seed: stack.signingSeed))
            let expired = try JWT.sign(AccessTokenClaims(issuer: "facegate", appId: UUID(uuidString: app.id)!,
                                                         issuedAt: Date().addingTimeInterval(-7300), ttl: 7200),
                                       type: TokenType.access, key: signer)
            login.setAccessToken(expired)
            guard case .success = try await login.validate(image: try TestEnvironment.image("obama2.jpg")) else {
                Issue.record("no login after the expired token was refreshed")
                return
            }
            #expect(counter.value == 3)
            // Without a hook the refusal reaches the app, with its code.
            let noHook = FaceLogin(configuration: Self.configuration(stack, app, device: "client-phone", accessToken: expired, counter: nil))
            _ = await Self.expectError("ACCESS_TOKEN_EXPIRED") { () async throws(FaceGateError) in
                _ = try await noHook.validate(image: try! TestEnvironment.image("obama2.jpg"))
            }
            noHook.setAccessToken("garbage")
            _ = await Self.expectError("ACCESS_TOKEN_INVALID") { () async throws(FaceGateError) in
                _ = try await noHook.validate(image: try! TestEnvironment.image("obama2.jpg"))
            }

            // Someone not enrolled; something that is not a photo.
            let noMatch = await Self.expectError("NO_MATCH_FACE") { () async throws(FaceGateError) in
                _ = try await login.validate(image: try! TestEnvironment.image("biden.jpg"))
            }
            #expect(noMatch?.transactionId.flatMap(UUID.init(uuidString:)) != nil)
            _ = await Self.expectError("IMAGE_FORMAT_ERROR") { () async throws(FaceGateError) in
                _ = try await login.validate(image: Data("hello, not a photo".utf8))
            }

            // The same through the delegate.
            let recorder = FaceLoginRecorder()
            let kioskConfiguration = Self.configuration(stack, app, device: "kiosk-7")
            let delegated = FaceLogin(configuration: kioskConfiguration, delegate: recorder)
            await Self.startValidation(delegated, image: try TestEnvironment.image("obama2.jpg")).finish()
            guard case .needsConfirmation(let pending)? = recorder.callbacks.last else {
                Issue.record("delegate heard \(recorder.callbacks)")
                return
            }
            #expect(delegated.pendingConfirmation == pending)
            await Self.startConfirmation(delegated, employeeNumber: "E1001").finish()
            guard case .succeeded(let delegatedIdentity)? = recorder.callbacks.last else {
                Issue.record("delegate heard \(recorder.callbacks)")
                return
            }
            #expect(try await exchange(stack, app, delegatedIdentity.identityToken).string("deviceId") == (try kioskConfiguration.deviceKey?.thumbprint()))
            await Self.startValidation(delegated, image: try TestEnvironment.image("biden.jpg")).finish()
            guard case .failed(.noMatchFace(let server))? = recorder.callbacks.last else {
                Issue.record("delegate heard \(recorder.callbacks)")
                return
            }
            #expect(server.transactionId != nil)
            #expect(recorder.callbacks.count == 3)

            // Device credential: registered with a fresh face-login identity token of this device, then
            // challenge and assertion signed by the software P-256 key.
            guard case .success(let forRegistration) = try await login.validate(image: try TestEnvironment.image("obama2.jpg")) else {
                Issue.record("no identity token for registration")
                return
            }
            let devices = DeviceCredentialClient(configuration: Self.configuration(stack, app, device: "client-phone"))
            let key = SoftwareP256Signer()
            let credentialId = try await devices.register(identityToken: forRegistration.identityToken, signer: key, policy: .biometryAny)
            #expect(UUID(uuidString: credentialId) != nil)
            _ = await Self.expectError("IDENTITY_TOKEN_USED") { () async throws(FaceGateError) in
                _ = try await devices.register(identityToken: forRegistration.identityToken, signer: key)
            }
            let challenge = try await devices.challenge(credentialId: credentialId)
            #expect(challenge.expiresIn > 0)
            let asserted = try await devices.assert(credentialId: credentialId, challenge: challenge, signer: key)
            #expect(asserted.userId == obama)
            let byDevice = try await exchange(stack, app, asserted.identityToken)
            #expect(byDevice.string("method") == "device_biometric")
            #expect(byDevice.string("deviceId") == (try configuration.deviceKey?.thumbprint()))
            #expect(try await devices.authenticate(credentialId: credentialId, signer: key).userId == obama)
            // Another key cannot assert this credential.
            let forged = await Self.expectError("AUTHENTICATION_FAILED") { () async throws(FaceGateError) in
                _ = try await devices.authenticate(credentialId: credentialId, signer: SoftwareP256Signer())
            }
            #expect(forged?.transactionId != nil)
            try await devices.revoke(credentialId: credentialId)
            _ = await Self.expectError("CREDENTIAL_NOT_ENROLLED") { () async throws(FaceGateError) in
                _ = try await devices.challenge(credentialId: credentialId)
            }

            // The module switched off.
            let patched = try await stack.call("PATCH", "/v1/apps/\(app.id)", bearer: stack.adminKey, json: ["modules": ["faceLogin": "disabled"]])
            #expect(patched.status == 200)
            let disabled = await Self.expectError("MODULE_DISABLED") { () async throws(FaceGateError) in
                _ = try await login.validate(image: try! TestEnvironment.image("obama2.jpg"))
            }
            #expect(disabled?.server?.httpStatus == 403)
            await Self.startValidation(delegated, image: try TestEnvironment.image("obama2.jpg")).finish()
            guard case .failed(.moduleDisabled)? = recorder.callbacks.last else {
                Issue.record("delegate heard \(recorder.callbacks)")
                return
            }
        }
    }

    @Test func ctidSerialAndVerificationThroughTheEnvelope() async throws {
        try await TestStack.with(withMatcher: false, withCTID: true) { stack in
            let reply = try await stack.call("POST", "/v1/apps", bearer: stack.adminKey, json: [
                "name": "ctid client", "modules": ["faceLogin": "formal", "ctid": "formal", "kiosk": "formal", "deviceAuth": "formal"]])
            let app = TestStack.App(id: try #require(reply.string("appId")), secret: try #require(reply.string("appSecret")))
            let ctidKey = try #require(reply.string("ctidKey"))
            #expect(try await stack.call("POST", "/v1/apps/\(app.id)/ctid-registry", bearer: stack.adminKey, json: [
                "number": CTIDTests.alice, "name": "张三", "validDateStart": "20200101", "validDateEnd": "20400101"]).status == 201)

            let client = try CTIDClient(configuration: Self.configuration(stack, app, device: "ctid-phone"), ctidKeyBase64: ctidKey)
            let serial = try await client.getBizSerialNumber(authMode: .nameNumber)
            #expect(serial.bizSerialNum.count == 32)
            #expect(serial.randNum.count == 6)
            let verified = try await client.validateIdentity(CTIDIdentity(idNumber: CTIDTests.alice, name: "张三"), serial: serial)
            #expect(verified.isVerified)
            #expect(verified.bizSerialNum == serial.bizSerialNum)
            #expect(UUID(uuidString: verified.transactionId) != nil)
            // The serial is single use.
            let reused = try await client.validateIdentity(CTIDIdentity(idNumber: CTIDTests.alice, name: "张三"), serial: serial)
            #expect(!reused.isVerified)

            // Validity dates, then failing numbers: a wrong name, a wrong check digit.
            let dated = try await client.validateIdentity(
                CTIDIdentity(idNumber: CTIDTests.alice, name: "张三", validDateStart: "20200101", validDateEnd: "20400101"),
                authMode: .nameNumberValidity)
            #expect(dated.isVerified)
            let wrongName = try await client.validateIdentity(CTIDIdentity(idNumber: CTIDTests.alice, name: "张四"), authMode: .nameNumber)
            #expect(!wrongName.isVerified)
            #expect(wrongName.authResult == "5XXX" && wrongName.resultCode == "1")
            let wrongCheck = String(CTIDTests.alice.dropLast()) + (CTIDTests.alice.last == "0" ? "1" : "0")
            let badNumber = try await client.validateIdentity(CTIDIdentity(idNumber: wrongCheck, name: "张三"), authMode: .nameNumber)
            #expect(badNumber.resultCode == "3")
            #expect(badNumber.message.contains("check digit"))

            // A mode that needs the national network credential; an envelope under the wrong key.
            _ = await Self.expectError("INVALID_REQUEST") { () async throws(FaceGateError) in
                _ = try await client.getBizSerialNumber(authModeCode: "0x06")
            }
            let wrongKey = try CTIDClient(configuration: Self.configuration(stack, app, device: "ctid-phone"),
                                          ctidKey: Data(SecureRandom.bytes(16)))
            let refused = await Self.expectError("INVALID_ENVELOPE") { () async throws(FaceGateError) in
                _ = try await wrongKey.validateIdentity(CTIDIdentity(idNumber: CTIDTests.alice, name: "张三"), authMode: .nameNumber)
            }
            #expect(refused?.server?.httpStatus == 400)
        }
    }

    @Test func cancellationTimeoutsAndAClosedGateway() async throws {
        var closedURL = ""
        var app = TestStack.App(id: "", secret: "")
        var token = ""
        try await TestStack.with(withMatcher: false, extra: ["FACEGATE_REQUEST_TIMEOUT_SECONDS": "20"]) { stack in
            app = try await stack.createApp()
            token = try await stack.accessToken(app)
            closedURL = stack.baseURL
            let photo = try TestEnvironment.image("obama2.jpg")

            // No matcher: the gateway would wait 20 s. Cancelling the task cancels the HTTP request: the
            // call ends as cancelled (a 503 would mean the request ran on).
            let login = FaceLogin(configuration: Self.configuration(stack, app, device: "cancel-phone", accessToken: token))
            let call = Task { () async -> Result<FaceLoginOutcome, FaceGateError> in
                do throws(FaceGateError) { return .success(try await login.validate(image: photo)) } catch { return .failure(error) }
            }
            try await Task.sleep(for: .milliseconds(500))
            call.cancel()
            let outcome = await call.value
            #expect(outcome == .failure(.cancelled), "\(outcome)")
            // The gateway still records the attempt the client gave up on.
            var recorded: [[String: Any]] = []
            let deadline = ContinuousClock.now + .seconds(40)
            while recorded.isEmpty, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(250))
                let audit = try await stack.call("GET", "/v1/audit/transactions?appId=\(app.id)&deviceId=cancel-phone", bearer: stack.adminKey)
                recorded = audit.json["items"] as? [[String: Any]] ?? []
            }
            #expect(recorded.first?["kind"] as? String == "face.login", "\(recorded)")
            // A task cancelled before its call starts never sends it.
            let early = Task { () async -> Result<FaceLoginOutcome, FaceGateError> in
                withUnsafeCurrentTask { $0?.cancel() }
                do throws(FaceGateError) { return .success(try await login.validate(image: photo)) } catch { return .failure(error) }
            }
            #expect(await early.value == .failure(.cancelled))

            // The client's own timeout, shorter than the server's.
            let impatient = FaceLogin(configuration: Self.configuration(stack, app, device: "cancel-phone", accessToken: token, timeout: .seconds(1)))
            _ = await Self.expectError("TIMED_OUT") { () async throws(FaceGateError) in _ = try await impatient.validate(image: photo) }
        }

        // The stack is gone: its port is closed.
        let configuration = FaceGateConfiguration(baseURL: URL(string: closedURL)!, appId: app.id, deviceId: "offline-phone", accessToken: token)
        let offline = FaceLogin(configuration: configuration)
        let failure = await Self.expectError("TRANSPORT") { () async throws(FaceGateError) in
            _ = try await offline.validate(image: try! TestEnvironment.image("obama2.jpg"))
        }
        #expect(failure?.isRetriable == true)
        let recorder = FaceLoginRecorder()
        offline.delegate = recorder
        await Self.startValidation(offline, image: try TestEnvironment.image("obama2.jpg")).finish()
        guard case .transportFailed(.transport)? = recorder.callbacks.first else {
            Issue.record("delegate heard \(recorder.callbacks)")
            return
        }
        _ = await Self.expectError("TRANSPORT") { () async throws(FaceGateError) in
            _ = try await CTIDClient(configuration: configuration, ctidKey: Data(count: 16)).getBizSerialNumber(authMode: .nameNumber)
        }
    }
}
