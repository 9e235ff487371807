import AuthGateway
import CTIDVerifier
import Crypto
import FaceGateCore
import FaceGateTestSupport
import JWT
import Foundation
import KioskOrchestrator
import MatcherWorker
import PostgresClient
import ServiceKit
import Synchronization
import Testing

/// What `make test` provides: a PostgreSQL superuser URL, a broker, the dlib models and real photos.
enum TestEnvironment {
    static func value(_ name: String) throws -> String {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            throw TestSetupError("\(name) is not set: run the tests with `make test`, which starts PostgreSQL and the broker")
        }
        return value
    }

    static func image(_ name: String) throws -> Data {
        let path = try value("FACEGATE_TEST_IMAGES") + "/" + name
        guard let data = FileManager.default.contents(atPath: path) else { throw TestSetupError("missing test photo \(path)") }
        return data
    }
}

/// A whole FaceGate in this process: a fresh database, a private topic prefix, a matcher-worker and an
/// auth-gateway on ephemeral ports, with the real broker, PostgreSQL and dlib model.
final class TestStack: @unchecked Sendable {  // fields are set once in start() before any test reads them
    let database: TestDatabase
    let environment: [String: String]
    let adminKey: String
    let signingSeed: [UInt8]
    /// Each service's message-signing seed and the public list every service gets.
    let serviceKeys: (seeds: [String: String], publicKeys: String)
    var gateway: AuthGateway!
    var matcher: MatcherWorker?
    var ctid: CTIDVerifier?
    var kiosk: KioskOrchestrator?
    /// How long `call` waits for an answer: longer than the gateway's request timeout where a test raises that.
    var clientTimeout: TimeInterval = 30
    /// Kiosks registered by `kiosk(_:named:)`, by app and name.
    let namedKiosks = Mutex<[String: Kiosk]>([:])
    private var runs: [(service: String, task: Task<Void, Never>)] = []

    init(database: TestDatabase, extra: [String: String] = [:]) throws {
        self.database = database
        adminKey = "fgk_test_" + Base64URL.encode(SecureRandom.bytes(18))
        signingSeed = SecureRandom.bytes(32)
        let serviceKeys = ServiceKeys.generate(for: ServiceKeys.platformServices)
        let kioskKey = Ed25519PrivateKey()
        self.serviceKeys = serviceKeys
        let ctid = X25519PrivateKey()
        var environment = [
            "FACEGATE_DATABASE_URL": database.url,
            "FACEGATE_KAFKA_BROKERS": try TestEnvironment.value("FACEGATE_TEST_KAFKA_BROKERS"),
            "FACEGATE_MODEL_DIR": try TestEnvironment.value("FACEGATE_MODEL_DIR"),
            "FACEGATE_TOPIC_PREFIX": "t\(UUID().uuidString.prefix(8).lowercased()).",
            "FACEGATE_ADMIN_PORT": "0",
            "FACEGATE_HTTP_PORT": "0",
            "FACEGATE_LOG_LEVEL": "warning",
            // Every refused credential a row of its own: tests find the refusals they caused (TrustPolicyTests tries the summaries).
            "FACEGATE_REFUSAL_SUMMARY_SECONDS": "0",
            "FACEGATE_ADMIN_KEY": adminKey,
            "FACEGATE_SIGNING_KEY": Data(signingSeed).base64EncodedString(),
            "FACEGATE_SEALING_KEY": Data(SecureRandom.bytes(32)).base64EncodedString(),
            "FACEGATE_CTID_PUBLIC_KEY": Data(ctid.publicKey.rawRepresentation).base64EncodedString(),
            "FACEGATE_CTID_PRIVATE_KEY": Data(ctid.rawRepresentation).base64EncodedString(),
            "MATCHER_ENGINES": "1",
            "MATCHER_RECONCILE_SECONDS": "2",
            // scripts/test.sh sets the run's wait (the broker's CPU against a hop's latency); 10 as in `make run` else.
            "FACEGATE_KAFKA_FETCH_WAIT_MS": ProcessInfo.processInfo.environment["FACEGATE_KAFKA_FETCH_WAIT_MS"] ?? "10",
            "FACEGATE_KAFKA_IDEMPOTENCE": "false",
            // As `make run`: idle job consumers stop fetching until the doorbell rings.
            "FACEGATE_KAFKA_JOB_PAUSE_MS": ProcessInfo.processInfo.environment["FACEGATE_KAFKA_JOB_PAUSE_MS"] ?? "2000",
            "FACEGATE_SERVICE_PUBLIC_KEYS": serviceKeys.publicKeys,
            "FACEGATE_KIOSK_SIGNING_KEY": Data(kioskKey.seed).base64EncodedString(),
            "FACEGATE_AUDIT_KEY": Data(SecureRandom.bytes(32)).base64EncodedString(),
            "FACEGATE_KIOSK_PUBLIC_KEYS": Data(kioskKey.publicKey.rawRepresentation).base64EncodedString(),
        ]
        environment.merge(extra) { _, new in new }
        self.environment = environment
    }

    /// The environment of one service: the stack's, with the service's own database login and message key.
    func environment(for service: String) -> [String: String] {
        var environment = self.environment
        environment["FACEGATE_DATABASE_URL"] = database.url(for: service)
        environment["FACEGATE_SERVICE_KEY"] = serviceKeys.seeds[service]
        return environment
    }

    /// Starts the services (the matcher unless `withMatcher` is false) and waits until they serve.
    static func start(_ services: Services) async throws -> TestStack {
        let stack = try TestStack(database: try await TestDatabase.create(), extra: services.extra)
        func env(_ service: String) -> Environment { Environment(stack.environment(for: service)) }
        if services.withMatcher {
            let matcher = try MatcherWorker(configuration: try MatcherConfiguration(environment: env("matcher-worker")))
            stack.matcher = matcher
            stack.runs.append(("matcher-worker", Task { _ = try? await matcher.group.run(handleSignals: false) }))
        }
        if services.withCTID {
            let verifier = try CTIDVerifier(configuration: try CTIDConfiguration(environment: env("ctid-verifier")))
            stack.ctid = verifier
            stack.runs.append(("ctid-verifier", Task { _ = try? await verifier.group.run(handleSignals: false) }))
        }
        if services.withKiosk {
            let orchestrator = try KioskOrchestrator(configuration: try KioskConfiguration(environment: env("kiosk-orchestrator")))
            stack.kiosk = orchestrator
            stack.runs.append(("kiosk-orchestrator", Task { _ = try? await orchestrator.group.run(handleSignals: false) }))
        }
        let gateway = try AuthGateway(configuration: try GatewayConfiguration(environment: env("auth-gateway")))
        stack.gateway = gateway
        stack.runs.append(("auth-gateway", Task { _ = try? await gateway.group.run(handleSignals: false) }))
        try await stack.waitUntilReady()
        if let matcher = stack.matcher { try await matcher.jobs.waitUntilAssigned(timeout: .seconds(60)) }
        if let ctid = stack.ctid { try await ctid.jobs.waitUntilAssigned(timeout: .seconds(60)) }
        if let kiosk = stack.kiosk { try await kiosk.commands.waitUntilAssigned(timeout: .seconds(60)) }
        return stack
    }

    /// Stops the kiosk-orchestrator and starts a new one in its place (a restart: nothing it held in memory is left).
    func restartKioskOrchestrator() async throws {
        guard let old = kiosk else { throw TestSetupError("this stack runs no kiosk-orchestrator") }
        old.group.requestStop(reason: "restart")
        if let index = runs.firstIndex(where: { $0.service == "kiosk-orchestrator" }) {
            await runs[index].task.value
            runs.remove(at: index)
        }
        let orchestrator = try KioskOrchestrator(configuration: try KioskConfiguration(environment: Environment(environment(for: "kiosk-orchestrator"))))
        kiosk = orchestrator
        runs.append(("kiosk-orchestrator", Task { _ = try? await orchestrator.group.run(handleSignals: false) }))
        try await orchestrator.commands.waitUntilAssigned(timeout: .seconds(60))
    }

    func waitUntilReady() async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let gatewayReady = await gateway.runtime.readiness.evaluate().ready && gateway.httpPort > 0
            let matcherReady = await matcher?.runtime.readiness.evaluate().ready ?? true
            let ctidReady = await ctid?.runtime.readiness.evaluate().ready ?? true
            let kioskReady = await kiosk?.runtime.readiness.evaluate().ready ?? true
            if gatewayReady && matcherReady && ctidReady && kioskReady { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw TestSetupError("the stack did not become ready within 60 s")
    }

    func stop() async {
        // A refusal whose code its route does not declare is one the OpenAPI document does not tell clients about.
        for line in gateway?.runtime.metrics.render().split(separator: "\n") ?? [] where line.hasPrefix("facegate_http_undeclared_refusals_total{") {
            Issue.record("a refusal its route does not declare: \(line)")
        }
        gateway?.group.requestStop(reason: "test finished")
        matcher?.group.requestStop(reason: "test finished")
        ctid?.group.requestStop(reason: "test finished")
        kiosk?.group.requestStop(reason: "test finished")
        // A service that does not stop is a failure of its shutdown, reported by name; the test then ends without it.
        for run in runs where await !finishes(within: .seconds(60), { await run.task.value }) {
            Issue.record("\(run.service) did not stop within 60 s of being asked to")
        }
        await database.drop()
    }

    var baseURL: String { "http://127.0.0.1:\(gateway.httpPort)" }

    // MARK: - HTTP

    struct Reply {
        var status: Int
        var headers: [String: String]
        var body: Data
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        var errorMessage: String? { (json["error"] as? [String: Any])?["message"] as? String }
        func string(_ key: String) -> String? { json[key] as? String }
    }

    /// `kiosk`: the call is signed with the kiosk's DPoP key (over its method, URL, access token and body).
    func call(_ method: String, _ path: String, bearer: String? = nil, basic: (String, String)? = nil, json: [String: Any]? = nil,
              body: Data? = nil, contentType: String? = nil, headers: [String: String] = [:], kiosk: Kiosk? = nil) async throws -> Reply {
        var fields: [(String, String)] = []
        if let bearer { fields.append(("Authorization", "Bearer \(bearer)")) }
        if let (user, password) = basic { fields.append(("Authorization", "Basic " + Data("\(user):\(password)".utf8).base64EncodedString())) }
        var payload = body
        if let json {
            payload = try JSONSerialization.data(withJSONObject: json)
            fields.append(("Content-Type", "application/json"))
        } else if body != nil, let contentType {
            fields.append(("Content-Type", contentType))
        }
        if let kiosk {
            let url = baseURL + (path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path)
            fields.append(("DPoP", try DPoP.proof(key: kiosk.key, method: method, url: url, accessToken: bearer, body: Array(payload ?? Data()))))
        }
        // `headers` replace fields of the same name, as URLRequest.setValue did.
        fields.removeAll { field in headers.keys.contains { $0.lowercased() == field.0.lowercased() } }
        fields += headers.map { ($0.key, $0.value) }
        let answer = try await LoopbackHTTP.send(port: gateway.httpPort, method: method, path: path, headers: fields, body: payload,
                                                 timeout: clientTimeout)
        return Reply(status: answer.status, headers: answer.headers, body: answer.body)
    }

    // MARK: - Scenario helpers

    struct App {
        var id: String
        var secret: String
    }

    /// `extra` overrides; apps here identify devices by `X-Device-Id` unless `extra` names another
    /// `deviceBinding` (DPoPTests and the client tests use keys).
    func createApp(formal: Bool = true, extra: [String: Any] = [:]) async throws -> App {
        var body: [String: Any] = ["name": "app \(UUID().uuidString.prefix(6))", "deviceBinding": "header", "deviceBindingPolicy": "employeeNumber"]
        if formal { body["modules"] = ["faceLogin": "formal", "ctid": "formal", "kiosk": "formal", "deviceAuth": "formal"] }
        body.merge(extra) { _, new in new }
        let reply = try await call("POST", "/v1/apps", bearer: adminKey, json: body)
        guard reply.status == 201, let id = reply.string("appId"), let secret = reply.string("appSecret") else {
            throw TestSetupError("app not created: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        }
        return App(id: id, secret: secret)
    }

    /// A kiosk registered to an app: its DPoP key, and the id the operator's registration gave it.
    struct Kiosk: Sendable {
        var id: String
        var key: P256PrivateKey
        var jkt: String { DPoP.thumbprint(of: key.publicKey) }
    }

    /// Registers a new kiosk key to `app` (the operator's `POST /v1/apps/{appId}/kiosks`).
    func registerKiosk(_ app: App, name: String = "Lobby", allowedAddresses: [String]? = nil) async throws -> Kiosk {
        let key = P256PrivateKey()
        return Kiosk(id: try await registerKiosk(app, name: name, jkt: DPoP.thumbprint(of: key.publicKey), allowedAddresses: allowedAddresses), key: key)
    }

    /// Registers the key with thumbprint `jkt`; answers the kiosk id.
    func registerKiosk(_ app: App, name: String, jkt: String, allowedAddresses: [String]? = nil) async throws -> String {
        var body: [String: Any] = ["name": name, "jkt": jkt]
        if let allowedAddresses { body["allowedAddresses"] = allowedAddresses }
        let reply = try await call("POST", "/v1/apps/\(app.id)/kiosks", bearer: adminKey, json: body)
        guard reply.status == 201, let id = reply.string("kioskId") else {
            throw TestSetupError("kiosk not registered: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        }
        return id
    }

    /// The kiosk of `app` that tests call `name`, registered on first use.
    func kiosk(_ app: App, named name: String) async throws -> Kiosk {
        if let known = namedKiosks.withLock({ $0[app.id + "/" + name] }) { return known }
        let kiosk = try await registerKiosk(app, name: name)
        namedKiosks.withLock { $0[app.id + "/" + name] = kiosk }
        return kiosk
    }

    func createUser(_ app: App, employeeNumber: String, name: String) async throws -> String {
        let reply = try await call("POST", "/v1/apps/\(app.id)/users", bearer: adminKey, json: ["employeeNumber": employeeNumber, "name": name])
        guard reply.status == 201, let id = reply.string("userId") else { throw TestSetupError("user not created: \(reply.status)") }
        return id
    }

    func enroll(_ app: App, user: String, photo: String) async throws -> Reply {
        try await call("POST", "/v1/apps/\(app.id)/users/\(user)/faces", bearer: adminKey, body: try TestEnvironment.image(photo),
                       contentType: photo.hasSuffix(".png") ? "image/png" : "image/jpeg")
    }

    func accessToken(_ app: App) async throws -> String {
        let reply = try await call("POST", "/v1/access-tokens", basic: (app.id, app.secret))
        guard reply.status == 200, let token = reply.string("accessToken") else { throw TestSetupError("no access token: \(reply.status)") }
        return token
    }

    func faceLogin(_ token: String, device: String, photo: String) async throws -> Reply {
        try await faceLogin(token, device: device, image: try TestEnvironment.image(photo), contentType: photo.hasSuffix(".png") ? "image/png" : "image/jpeg")
    }

    func faceLogin(_ token: String, device: String, image: Data, contentType: String = "image/jpeg") async throws -> Reply {
        try await call("POST", "/v1/face-login", bearer: token, body: image, contentType: contentType, headers: ["X-Device-Id": device])
    }
}

extension TestStack {
    /// Which services a stack runs, and the environment it adds.
    struct Services: Equatable, Sendable {
        var withMatcher = true
        var withCTID = false
        var withKiosk = false
        var extra: [String: String] = [:]
    }

    /// The suite's stack while a `.sharedStack` suite runs.
    @TaskLocal static var shared: SharedStack?

    /// Runs `body` against the suite's shared stack when the suite has one with these services, else against a fresh
    /// stack that is always stopped afterwards. `fresh`: a stack of its own in any case, for a test that counts rows
    /// across apps or changes what the whole stack sees.
    static func with(withMatcher: Bool = true, withCTID: Bool = false, withKiosk: Bool = false, extra: [String: String] = [:],
                     fresh: Bool = false, _ body: (TestStack) async throws -> Void) async throws {
        let services = Services(withMatcher: withMatcher, withCTID: withCTID, withKiosk: withKiosk, extra: extra)
        if !fresh, let shared, shared.services == services { return try await body(try await shared.stack()) }
        try await with(services, body)
    }

    static func with(_ services: Services, _ body: (TestStack) async throws -> Void) async throws {
        let stack = try await start(services)
        do {
            try await body(stack)
        } catch {
            await stack.stop()
            throw error
        }
        await stack.stop()
    }
}

/// A suite's one stack, started by the first of its tests that asks for it (so a suite run one test at a time, or
/// whose tests ask for other services, starts none it does not use) and stopped when the suite ends.
final class SharedStack: Sendable {
    let services: TestStack.Services
    private let started = Mutex<Task<TestStack, any Error>?>(nil)

    init(services: TestStack.Services) { self.services = services }

    func stack() async throws -> TestStack {
        let services = self.services
        return try await started.withLock { task in
            if task == nil { task = Task { try await TestStack.start(services) } }
            return task!
        }.value
    }

    func stop() async {
        guard let task = started.withLock({ $0 }), let stack = try? await task.value else { return }
        await stack.stop()
    }
}

/// One stack for a whole suite: its tests' `TestStack.with` calls that ask for the same services run on it, each in apps
/// of its own (so the suite must not assert on what other tests leave in the database). Put `.serialized` beside it.
struct SharedStackTrait: SuiteTrait, TestScoping {
    var services: TestStack.Services

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let shared = SharedStack(services: services)
        do {
            try await TestStack.$shared.withValue(shared) { try await function() }
        } catch {
            await shared.stop()
            throw error
        }
        await shared.stop()
    }
}

extension Trait where Self == SharedStackTrait {
    static func sharedStack(withMatcher: Bool = true, withCTID: Bool = false, withKiosk: Bool = false, extra: [String: String] = [:]) -> Self {
        SharedStackTrait(services: TestStack.Services(withMatcher: withMatcher, withCTID: withCTID, withKiosk: withKiosk, extra: extra))
    }
}

extension MatcherWorker {
    /// Faces this matcher embedded so far (`facegate_matcher_embeddings_total`, which has no sample before the first).
    var embeddings: Double {
        runtime.metrics.render().split(separator: "\n").first { $0.hasPrefix("facegate_matcher_embeddings_total ") }
            .flatMap { Double($0.split(separator: " ")[1]) } ?? 0
    }
}
