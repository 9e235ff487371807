import AppRecords
import AuditRecords
@testable import AuthGateway
import Crypto
import FaceGateCore
import FaceGateTestSupport
import Foundation
import HTTPServer
import IdentityRecords
import JWT
import PostgresClient
import ServiceKit
import Synchronization
import Testing

/// The gateway's request path without a stack: route groups over in-memory stores, behind a real HTTP server on
/// loopback. A caller is proven once per request, whether before the body (an upload) or in the handler.
@Suite struct RequestPathTests {
    /// Counts the app lookups: every proof of a client or an app server reads its app once.
    final class CountingApps: AppStore {
        let apps: InMemoryApps
        let finds = Atomic<Int>(0)
        init(_ apps: InMemoryApps) { self.apps = apps }

        func create(_ id: UUID, name: String, secretHash: [UInt8], ctidKeySealed: [UInt8], faceModel: FaceModel, settings: AppSettings) async throws {
            try await apps.create(id, name: name, secretHash: secretHash, ctidKeySealed: ctidKeySealed, faceModel: faceModel, settings: settings)
        }
        func update(_ id: UUID, settings: AppSettings) async throws { try await apps.update(id, settings: settings) }
        func rotateSecret(_ id: UUID, to secretHash: [UInt8], graceSeconds: Int) async throws {
            try await apps.rotateSecret(id, to: secretHash, graceSeconds: graceSeconds)
        }
        func revokePreviousSecret(_ id: UUID) async throws -> Bool { try await apps.revokePreviousSecret(id) }
        func switchModel(_ id: UUID, from: FaceModel, to model: FaceModel, threshold: Float) async throws -> Bool {
            try await apps.switchModel(id, from: from, to: model, threshold: threshold)
        }
        func all(covered: (UUID) -> Bool) async throws -> [AppRecord] { try await apps.all(covered: covered) }
        func find(_ id: UUID) async throws -> AppRecord? {
            finds.add(1, ordering: .relaxed)
            return try await apps.find(id)
        }
        func delete(_ id: UUID) async throws -> (users: Int, templates: [GalleryChange])? { try await apps.delete(id) }
        func admit(_ app: AppRecord, module: Module) async throws { try await apps.admit(app, module: module) }
    }

    let clock = FakeClock()
    let apps: CountingApps
    let signingKey = try! JWTSigningKey(seed: SecureRandom.bytes(32))
    let appId = UUID()

    init() async throws {
        apps = CountingApps(InMemoryApps(clock: clock))
        try await apps.create(appId, name: "app", secretHash: SHA256.hash(Array("secret".utf8)), ctidKeySealed: [], faceModel: .sface2021dec,
                              settings: AppSettings(modules: .initial, matchThreshold: 1.0, liveness: .initial, deviceBinding: .header,
                                                    deviceBindingPolicy: .appServerTicket, kioskApproval: KioskApprovalPolicy(), quotas: .initial,
                                                    keepEnrollmentPhotos: false))
    }

    /// A server with `boot`'s routes; `call` sends one request to it.
    func serve(_ boot: (APIRoutes) -> Void, _ body: (_ call: (String, String, [(String, String)], Data?) async throws -> LoopbackHTTP.Response) async throws -> Void) async throws {
        let logger = Logger(label: "routing-test")
        let nowhere = PostgresPool(configuration: PostgresConfiguration(host: "127.0.0.1", port: 1, user: "nobody", database: "none"))
        let calls = CallLog(transactions: TransactionLog(database: nowhere, publishing: nil, logger: logger, keys: AuditKeys(current: SecureRandom.bytes(32))),
                            trustedProxies: try TrustedProxies(""), refusals: RefusalLedger(period: 0), logger: logger)
        let kiosk = KioskSessionsUseCaseTests()
        let callers = Callers(apps: apps, apiKeys: InMemoryApiKeys(clock: clock), keySet: JWTKeySet([(kid: signingKey.kid, key: signingKey.publicKey)]),
                              issuer: "https://facegate.test", bootstrapAdminKeyHash: nil, serverCallRate: RateLimiter(rate: 100, burst: 100),
                              interviewTokens: kiosk.tokens, kioskSessions: kiosk.steps())
        let router = Router()
        boot(APIRoutes(router: router, table: RouteTable(), idempotency: IdempotentRequests(records: InMemoryIdempotencyRecords(clock: clock)),
                       calls: calls, callers: callers, clientRate: RateLimiter(rate: 1000, burst: 1000), logger: logger,
                       undeclaredRefusals: MetricsRegistry().counter("undeclared", help: "")))
        let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), router: router)
        try server.start()
        do {
            try await body { method, path, headers, data in
                try await LoopbackHTTP.send(port: server.port, method: method, path: path, headers: headers, body: data, timeout: 10)
            }
        } catch {
            await server.shutdown(gracePeriod: .seconds(1))
            throw error
        }
        await server.shutdown(gracePeriod: .seconds(1))
    }

    func accessToken() throws -> String {
        try JWT.sign(AccessTokenClaims(issuer: "https://facegate.test", appId: appId, issuedAt: Date(), ttl: 600, previousSecret: false),
                     type: TokenType.access, key: signingKey)
    }

    /// The handler's view: the app it was given, the rows its statements may see, and the audit actor.
    static func describe(_ context: CallContext<AppRecord>) -> HTTPResponse {
        .text([context.caller.id.wire, PostgresScope.current?[Tenant.setting] ?? "-", context.actor].joined(separator: " "))
    }

    @Test func anUploadProvesItsCallerOnceBeforeTheBodyIsRead() async throws {
        try await serve({ routes in
            routes.group(\.client, tag: .faces).add("POST", "/upload", "upload", "Upload", body: .upload(form: ImageUpload.self), answers: []) { request, context in
                #expect(request.body.count == 300_000)
                return Self.describe(context)
            }
        }) { call in
            let token = try accessToken()
            let answer = try await call("POST", "/upload", [("Authorization", "Bearer " + token), ("Content-Type", "image/jpeg")],
                                        Data(repeating: 1, count: 300_000))
            #expect(answer.status == 200)
            // The admission's proof reached the handler: its app, its row scope and its actor, from one lookup of the app.
            #expect(String(decoding: answer.body, as: UTF8.self) == "\(appId.wire) \(appId.wire) client")
            #expect(apps.finds.load(ordering: .relaxed) == 1)

            // A stranger's upload is refused from the headers; the handler never runs.
            let refused = try await call("POST", "/upload", [("Authorization", "Bearer not-a-token"), ("Content-Type", "image/jpeg")],
                                         Data(repeating: 1, count: 300_000))
            #expect(refused.status == 401)
            #expect(apps.finds.load(ordering: .relaxed) == 1)
        }
    }

    @Test func aBodilessCallIsProvenOnceInItsHandler() async throws {
        try await serve({ routes in
            routes.group(\.client, tag: .faces).add("GET", "/read", "read", "Read", answers: []) { _, context in Self.describe(context) }
            routes.group(\.client, tag: .faces).add("POST", "/upload", "upload", "Upload", body: .upload(form: ImageUpload.self), answers: []) { _, context in Self.describe(context) }
        }) { call in
            let token = try accessToken()
            let read = try await call("GET", "/read", [("Authorization", "Bearer " + token)], nil)
            #expect(String(decoding: read.body, as: UTF8.self) == "\(appId.wire) \(appId.wire) client")
            #expect(apps.finds.load(ordering: .relaxed) == 1)
            // An upload route called without a body has no admission: its handler proves the caller, once.
            let empty = try await call("POST", "/upload", [("Authorization", "Bearer " + token)], nil)
            #expect(String(decoding: empty.body, as: UTF8.self) == "\(appId.wire) \(appId.wire) client")
            #expect(apps.finds.load(ordering: .relaxed) == 2)
            // No credential, no call: an optional caller type (the auditor's app list) cannot pass for proven.
            #expect(try await call("GET", "/read", [], nil).status == 401)
        }
    }

    @Test func anOptionalCallerIsNeverTakenAsProvenWithoutItsProof() async throws {
        try await serve({ routes in
            routes.group(\.auditor, tag: .audit).add("GET", "/audit", "read", "Read", answers: []) { _, context in .text(context.caller == nil ? "all" : "some") }
            routes.group(\.auditor, tag: .audit).add("POST", "/audit", "upload", "Upload", body: .upload(form: ImageUpload.self), answers: []) { _, context in .text(context.caller == nil ? "all" : "some") }
        }) { call in
            let read = try await call("GET", "/audit", [("Authorization", "Bearer nobody")], nil)
            let upload = try await call("POST", "/audit", [("Authorization", "Bearer nobody")], Data(repeating: 1, count: 100))
            let bodiless = try await call("POST", "/audit", [("Authorization", "Bearer nobody")], nil)
            #expect([read.status, upload.status, bodiless.status] == [Int](repeating: 401, count: 3))
        }
    }
}
