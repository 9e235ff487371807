import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import JWT
import KafkaClient
import PostgresClient
import ServiceKit
import Synchronization

/// The auth-gateway process: the public HTTP API, the admin endpoints, a Kafka requester with its own
/// reply partition. Stateless: run as many as you like behind a load balancer.
public final class AuthGateway: Sendable {
    public let runtime: ServiceRuntime
    public let group: ServiceGroup
    public let admin: AdminServer
    let http: PublicHTTPService
    let context: GatewayContext

    public init(configuration: GatewayConfiguration) throws {
        let runtime = try ServiceRuntime(configuration: configuration.common)
        self.runtime = runtime
        let producer = try runtime.makeProducer()
        let requester = RequesterService(runtime: runtime, producer: producer, service: "auth-gateway",
                                         timeout: configuration.requestTimeout)
        let signingKey = try JWTSigningKey(seed: configuration.signingKey)
        var published = [(kid: signingKey.kid, key: signingKey.publicKey)]
        for seed in configuration.previousSigningKeys {
            let key = try Ed25519PrivateKey(seed: seed).publicKey
            published.append((kid: JWTSigningKey.keyId(key), key: key))
        }
        let kiosk = try configuration.kioskPublicKeys.map { raw in
            let key = try Ed25519PublicKey(rawRepresentation: raw)
            return (kid: KioskTokenKey.kidPrefix + JWTSigningKey.keyId(key), key: key)
        }
        context = try GatewayContext(configuration: configuration, runtime: runtime, producer: producer, requester: requester,
                                     signingKey: signingKey, keySet: JWTKeySet(published), kioskKeySet: JWTKeySet(kiosk),
                                     jwks: JWTKeySet(published + kiosk).jwksJSON())
        let router = Router()
        routeTable = RouteTable()
        context.registerRoutes(on: router, table: routeTable)
        http = PublicHTTPService(configuration: configuration, router: router, runtime: runtime)
        admin = runtime.adminServer()
        if configuration.publicURL == nil, !configuration.listensOnLoopbackOnly {
            runtime.logger.error("FACEGATE_PUBLIC_URL is not set: device proofs (DPoP apps, kiosks) are refused until it is", [:])
        }
        runtime.readiness.add("kafka-replies") { requester.isReady }
        let context = self.context
        let sweeper = PeriodicService(name: "expired-records", every: configuration.sweepInterval, logger: runtime.logger) {
            try await context.sweepExpiredRecords()
        }
        let refusalSummaries = PeriodicService(name: "refusal-summaries", every: .seconds(max(1, configuration.refusalSummarySeconds / 4)),
                                               logger: runtime.logger) {
            await context.recordRefusalSummaries()
        }
        var services: [any Service] = [admin, requester, http, ProducerService(producer: producer), sweeper, TopicsService(runtime: runtime)]
        if configuration.refusalSummarySeconds > 0 { services.append(refusalSummaries) }
        if configuration.auditCheckpointInterval > .zero {
            let published = Mutex<[UUID: Int64]>([:])
            services.append(PeriodicService(name: "audit-checkpoints", every: configuration.auditCheckpointInterval, logger: runtime.logger) {
                var current = published.withLock { $0 }
                try await context.publishCheckpoints(after: &current)
                published.withLock { $0 = current }
            })
        }
        group = ServiceGroup(services: services, logger: runtime.logger,
                             shutdownTimeout: .seconds(configuration.common.shutdownSeconds), failures: runtime.failures)
    }

    /// Every route the public API serves, for checking the OpenAPI document against.
    public var routes: [(method: String, pattern: String)] { http.routes }

    /// What each route declared it answers, and its door in the trust policy: for the route-table test.
    let routeTable: RouteTable
    public var routeDeclarations: [RouteDeclaration] { routeTable.all }

    /// Every door of the trust policy, by name.
    public static var trustPolicyDoors: [String] { Door.allCases.map(\.rawValue) }

    /// The public port actually bound (tests bind port 0).
    public var httpPort: Int { http.port }
}

/// Everything a request handler needs.
final class GatewayContext: Sendable {
    let configuration: GatewayConfiguration
    let runtime: ServiceRuntime
    let database: PostgresPool
    let producer: KafkaProducer
    let requester: RequesterService
    let signingKey: JWTSigningKey
    /// The gateway's own token keys (current and previous): access tokens and face identity tokens.
    let keySet: JWTKeySet
    /// The kiosk-orchestrator's: identity tokens with method "kiosk", nothing else.
    let kioskKeySet: JWTKeySet
    /// Both, published for offline verification.
    let jwks: [UInt8]
    let transactions: TransactionLog
    let apps: any AppStore
    let attemptCounters: any AttemptCounterStore
    let bindings: any DeviceBindingStore
    let users: any UserDirectory
    let livenessChallenges: any LivenessChallengeStore
    let deviceCredentials: any DeviceCredentialStore
    let spentTokenIds: any SpentTokenIds
    let apiKeys: any ApiKeyStore
    let ctidSerials: any CTIDSerialStore
    let kioskEventTickets: any KioskEventTicketStore
    let roster: any UserRoster
    let migration: any ModelMigrationStore
    let logger: Logger
    let faceJobSeconds: Histogram
    let interviewTokens: InterviewTokens
    let idempotentRequests: IdempotentRequests
    let clientRateLimit: RateLimiter
    /// Per kiosk (`FACEGATE_KIOSK_LOGIN_RATE` a minute) and per server credential (`FACEGATE_SERVER_CALL_RATE` a second).
    let kioskLoginRate: RateLimiter
    let serverCallRate: RateLimiter
    let kioskLoginsLimited: Counter
    let kioskRegistry: any KioskRegistry
    let refusals: RefusalLedger
    let eventStreams: EventStreamSlots

    init(configuration: GatewayConfiguration, runtime: ServiceRuntime, producer: KafkaProducer, requester: RequesterService,
         signingKey: JWTSigningKey, keySet: JWTKeySet, kioskKeySet: JWTKeySet, jwks: [UInt8]) throws {
        self.configuration = configuration
        self.runtime = runtime
        self.database = runtime.database
        self.producer = producer
        self.requester = requester
        self.signingKey = signingKey
        self.keySet = keySet
        self.kioskKeySet = kioskKeySet
        self.jwks = jwks
        self.transactions = TransactionLog(database: runtime.database, producer: producer, topic: runtime.topics.auditTransactions, logger: runtime.logger,
                                       keys: configuration.auditKeys)
        self.apps = PostgresApps(database: runtime.database)
        attemptCounters = PostgresAttemptCounters(database: runtime.database)
        bindings = PostgresDeviceBindings(database: runtime.database)
        users = PostgresUserDirectory(database: runtime.database)
        livenessChallenges = PostgresLivenessChallenges(database: runtime.database)
        deviceCredentials = PostgresDeviceCredentials(database: runtime.database)
        spentTokenIds = PostgresSpentTokenIds(database: runtime.database)
        apiKeys = PostgresApiKeys(database: runtime.database)
        ctidSerials = PostgresCTIDSerials(database: runtime.database)
        kioskEventTickets = PostgresKioskEventTickets(database: runtime.database)
        roster = PostgresUserRoster(database: runtime.database)
        migration = PostgresModelMigration(database: runtime.database)
        self.logger = runtime.logger
        faceJobSeconds = runtime.metrics.histogram("facegate_face_job_round_trip_seconds", help: "Gateway → matcher → gateway time")
        interviewTokens = try InterviewTokens(signingSeed: configuration.signingKey)
        idempotentRequests = IdempotentRequests(records: PostgresIdempotencyRecords(database: runtime.database))
        clientRateLimit = RateLimiter(rate: Double(configuration.clientRate), burst: configuration.clientBurst)
        kioskLoginRate = RateLimiter(rate: Double(configuration.kioskLoginRate) / 60, burst: configuration.kioskLoginBurst)
        serverCallRate = RateLimiter(rate: Double(configuration.serverCallRate), burst: configuration.serverCallBurst)
        kioskLoginsLimited = runtime.metrics.counter("facegate_kiosk_logins_limited_total",
                                                     help: "Kiosk logins refused because the kiosk used up its rate (FACEGATE_KIOSK_LOGIN_RATE)")
        kioskRegistry = PostgresKioskRegistry(database: runtime.database)
        refusals = RefusalLedger(period: configuration.refusalSummarySeconds)
        eventStreams = EventStreamSlots(limit: configuration.eventStreams, perClient: configuration.eventStreamsPerClient)
    }

    func registerRoutes(on router: Router, table: RouteTable) {
        let router = APIRoutes(router: router, table: table, idempotency: idempotentRequests, refusal: { [self] request, error, app in
            await recordRefusedCredentials(request, error, app: app)
        }, logger: runtime.logger, admit: { [self] request in clientRateLimit.admit(clientAddress(request)) })
        registerOperatorRoutes(on: router)
        registerAppServerRoutes(on: router)
        registerFaceLoginRoutes(on: router)
        registerDeviceCredentialRoutes(on: router)
        registerAuditRoutes(on: router)
        registerDiscoveryRoutes(on: router)
        registerCTIDRoutes(on: router)
        registerKioskSessionRoutes(on: router)
        registerConsoleRoutes(on: router)
        registerLivenessRoutes(on: router)
        registerDeviceKeyRoutes(on: router)
        registerKioskLoginRoutes(on: router)
        registerKioskRegistrationRoutes(on: router)
        registerKeyRoutes(on: router)
        registerFaceVerifyRoutes(on: router)
        registerFaceModelMigrationRoutes(on: router)
    }

    /// A failed authentication (`auth.refused`, the code as outcome, the route): on the chain of the app the credential
    /// named when that app exists (`RequestCaller.concerns`: an app server's app id with a wrong secret, a genuinely signed
    /// access token refused afterwards, e.g. for its app's secret rotation), where the app's auditors read it; else on the platform
    /// chain. No credential or user is named, since none was proven. Only the first of an address's period is a row of its
    /// own (`RefusalLedger`); the rest are counted into a summary row on the platform chain, so no one can flood a trail.
    func recordRefusedCredentials(_ request: HTTPRequest, _ error: APIError, app: UUID?) async -> UUID? {
        let (address, route) = (clientAddress(request), request.method + " " + request.routeTemplate)
        guard refusals.isFirst(address: address, code: error.code.rawValue, route: route) else { return nil }
        let record = TransactionRecord(id: UUID(), appId: app ?? platformAppId, kind: "auth.refused", outcome: error.code.rawValue, userId: nil,
                                       deviceId: nil, clientIp: address, score: nil, latencyMs: 0, detail: ["route": route])
        return await appendRefusal(record) ? record.id : nil
    }

    /// The counted refusals of the periods that are over: one `auth.refused` row per address and period, outcome
    /// `REPEATED`, with how many, which codes and which routes.
    func recordRefusalSummaries(all: Bool = false) async {
        for summary in refusals.summaries(all: all) {
            func tally(_ counts: [String: Int]) -> String { counts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ") }
            _ = await appendRefusal(TransactionRecord(
                id: UUID(), appId: platformAppId, kind: "auth.refused", outcome: "REPEATED", userId: nil, deviceId: nil, clientIp: summary.address,
                score: nil, latencyMs: 0, detail: ["count": String(summary.count), "periodStart": ISO8601DateFormatter().string(from: summary.periodStart),
                                                   "codes": tally(summary.codes), "routes": tally(summary.routes)]))
        }
    }

    private func appendRefusal(_ record: TransactionRecord) async -> Bool {
        do {
            try await transactions.append(record)
            return true
        } catch {
            logger.warning("refused authentication not recorded", ["error": "\(error)"])
            return false
        }
    }

    /// Deletes what can no longer be used: expired single-use records (`ExpiredRecords`) and idempotency records.
    func sweepExpiredRecords() async throws {
        try await ExpiredRecords(database: database).sweep()
        try await idempotentRequests.sweep()
    }

    /// Sends a face job and waits for the matcher's answer (merged across shards), within the request
    /// deadline. Broker down or matcher silent → `SERVICE_UNAVAILABLE`, never a hang.
    func faceJob(_ job: FaceJob, messageId: String? = nil) async throws -> FaceJobResult {
        let started = ContinuousClock.now
        let results: [FaceJobResult]
        do {
            results = try await requester.faceJob(job, messageId: messageId, expectedReplies: configuration.matcherShards)
        } catch {
            logger.warning("face job not answered", ["error": "\(error)", "job.kind": job.kind.rawValue])
            throw APIError(.serviceUnavailable, "face matching is unavailable right now; try again")
        }
        faceJobSeconds.observe(ContinuousClock.now - started, ["kind": job.kind.rawValue])
        return FaceJobResult.merged(results, for: job)
    }
}

/// Registers handlers that may throw `APIError`, turning it into the wire's error envelope.
/// A route marked `idempotent` honours `Idempotency-Key` (creating POSTs). A call refused for its credentials
/// before any transaction was written for it is recorded by `refusal` (the trail shows failed authentications too).
struct APIRoutes {
    let router: Router
    /// Every route's declared answers and door.
    let table: RouteTable
    let idempotency: IdempotentRequests
    /// Records a refused credential; the `UUID` is the app the credential named, when it exists.
    let refusal: @Sendable (HTTPRequest, APIError, UUID?) async -> UUID?
    /// Says why a request ended in 500 (the answer itself names no cause).
    let logger: Logger
    /// False when the request's client has used up its rate (`ClientRateLimit`).
    let admit: @Sendable (HTTPRequest) -> Bool

    /// Only a route that names how its caller is `authenticated` before the body is read takes a body over 64 KB
    /// (photos, documents): the credential is checked from the headers, and a stranger's upload is refused unread.
    /// The handler authenticates again as usual (`RouteGroup` does both).
    static let unauthenticatedBodyBytes = 64 << 10

    /// `answers`: every type the route's answers encode (none for bodiless and non-JSON answers); `doors`: where the trust
    /// policy says what the route demands, for a route that can answer an identity token, a binding ticket or a factor
    /// verdict (a `TrustAnswer`).
    func add(_ method: String, _ pattern: String, answers: [any Encodable.Type], doors: [Door] = [], maxBodyBytes: Int? = nil,
             idempotent: Bool = false, authenticated: (@Sendable (HTTPRequest) async throws -> Void)? = nil, _ handler: @escaping HTTPHandler) {
        table.add(RouteDeclaration(method: method, pattern: pattern, answers: answers, doors: doors))
        let (refusal, logger, idempotency, admit) = (refusal, logger, idempotency, admit)
        let wire: HTTPHandler = { request in
            let caller = RequestCaller()
            do {
                // Row-level security: the request sees no app's rows until its caller is authenticated.
                return try await RequestCaller.$current.withValue(caller) { try await Tenant.request { try await handler(request) } }
            } catch let error as APIError {
                throw error.http(transactionId: error.code.refusesCredentials ? await refusal(request, error, caller.concernedApp) : nil)
            }
        }
        var admission: HTTPAdmission?
        if let authenticated {
            admission = { @Sendable request -> HTTPResponse? in
                await Self.traced(request) {
                    let caller = RequestCaller()
                    do {
                        try await RequestCaller.$current.withValue(caller) { try await authenticated(request) }
                        return nil
                    } catch let error as APIError {
                        let transactionId = error.code.refusesCredentials ? await refusal(request, error, caller.concernedApp) : nil
                        return error.http(transactionId: transactionId).response
                    } catch let error as PostgresError where error.isServerUnavailable {
                        return APIError(.serviceUnavailable, "the service is unavailable right now; try again").http(transactionId: nil).response
                    } catch {
                        logger.error("request failed", ["http.route": pattern, "error": "\(error)"])
                        return HTTPError.internalError.response
                    }
                }
            }
        }
        let bodyLimit = maxBodyBytes ?? (authenticated == nil ? Self.unauthenticatedBodyBytes : nil)
        router.add(method, pattern, maxBodyBytes: bodyLimit, admission: admission) { request in
            try await Self.traced(request) {
                guard admit(request) else {
                    throw APIError(.rateLimited, "too many requests from this client; slow down", retryAfter: 1).http(transactionId: nil)
                }
                do {
                    return try await idempotent ? idempotency.run(request, wire) : wire(request)
                } catch let error as PostgresError where error.isServerUnavailable {
                    // PostgreSQL away (a restart, a failover): the documented 503, which a client may retry.
                    logger.warning("database not reachable", ["http.route": pattern, "error": error.description])
                    throw APIError(.serviceUnavailable, "the service is unavailable right now; try again").http(transactionId: nil)
                } catch let error as HTTPError {
                    throw error
                } catch {
                    logger.error("request failed", ["http.route": pattern, "error": "\(error)"])
                    throw error
                }
            }
        }
    }

    /// Runs a call as the gateway's span of the caller's trace (W3C `traceparent`, or a new trace): every log line and job
    /// of the call carries it, and the answer names it in `traceresponse` (Trace Context level 2), errors included.
    static func traced(_ request: HTTPRequest, _ body: () async throws -> HTTPResponse) async throws -> HTTPResponse {
        let span = (request.headers["traceparent"].flatMap(TraceContext.init(traceparent:)) ?? .random()).child()
        do {
            var response = try await TraceContext.$current.withValue(span) { try await body() }
            response.headers.append(("traceresponse", span.traceparent))
            return response
        } catch var error as HTTPError {
            error.headers.append(("traceresponse", span.traceparent))
            throw error
        }
    }

    static func traced(_ request: HTTPRequest, _ body: () async -> HTTPResponse?) async -> HTTPResponse? {
        let span = (request.headers["traceparent"].flatMap(TraceContext.init(traceparent:)) ?? .random()).child()
        var response = await TraceContext.$current.withValue(span) { await body() }
        response?.headers.append(("traceresponse", span.traceparent))
        return response
    }
}

/// How the routes of a group prove their caller. Checked before the body of an upload route is read (a stranger's
/// upload is refused unread) and for each call, whose handler gets what it proved.
struct Authenticator<Caller: Sendable>: Sendable {
    let authenticate: @Sendable (HTTPRequest) async throws -> Caller
}

/// Routes sharing one way of authenticating their caller (`APIRoutes.group`): no handler authenticates by hand.
struct RouteGroup<Caller: Sendable> {
    let routes: APIRoutes
    let authenticator: Authenticator<Caller>

    /// `upload`: the route takes bodies over 64 KB (photos, documents), its caller checked from the headers first.
    /// `answers` and `doors` as `APIRoutes.add`.
    func add(_ method: String, _ pattern: String, answers: [any Encodable.Type], doors: [Door] = [], maxBodyBytes: Int? = nil,
             idempotent: Bool = false, upload: Bool = false, _ handler: @escaping @Sendable (HTTPRequest, Caller) async throws -> HTTPResponse) {
        let authenticator = self.authenticator
        let check: @Sendable (HTTPRequest) async throws -> Void = { request in _ = try await authenticator.authenticate(request) }
        routes.add(method, pattern, answers: answers, doors: doors, maxBodyBytes: maxBodyBytes, idempotent: idempotent,
                   authenticated: upload ? check : nil) { request in
            let caller = try await authenticator.authenticate(request)
            return try await handler(request, caller)
        }
    }
}

extension APIRoutes {
    func group<Caller>(_ authenticator: Authenticator<Caller>) -> RouteGroup<Caller> {
        RouteGroup(routes: self, authenticator: authenticator)
    }
}

/// The public HTTP listener.
final class PublicHTTPService: Service {
    let name = "http"
    private let server: HTTPServer
    private let logger: Logger
    private let readiness: Readiness
    let routes: [(method: String, pattern: String)]

    init(configuration: GatewayConfiguration, router: Router, runtime: ServiceRuntime) {
        var http = HTTPServerConfiguration(host: configuration.httpHost, port: configuration.httpPort)
        http.maxBodyBytes = configuration.maxBodyBytes
        http.threadCount = configuration.httpThreads
        http.maxConnections = configuration.httpMaxConnections
        http.perIPConnectionLimit = configuration.httpPerIPLimit == 0 ? configuration.httpMaxConnections : configuration.httpPerIPLimit
        let requests = runtime.metrics.counter("facegate_http_requests_total", help: "HTTP requests by route template and status")
        let seconds = runtime.metrics.histogram("facegate_http_request_seconds", help: "HTTP request time by route template")
        let logger = runtime.logger
        server = HTTPServer(configuration: http, router: router) { record in
            requests.increment(["route": record.routeTemplate, "method": record.method, "status": String(record.status)])
            seconds.observe(record.duration, ["route": record.routeTemplate])
            var fields = ["request.id": record.requestId, "http.method": record.method, "http.route": record.routeTemplate,
                          "http.status": String(record.status), "duration_ms": String(format: "%.1f", record.duration.milliseconds)]
            // The call's trace, as its answer named it: joins this line to the call's other lines here and in the workers.
            if let trace = record.traceResponse.flatMap(TraceContext.init(traceparent:)) {
                fields["trace.id"] = trace.traceId
                fields["span.id"] = trace.spanId
            }
            logger.info("request", fields)
        }
        self.logger = runtime.logger
        self.readiness = runtime.readiness
        routes = router.routes
    }

    var port: Int { server.port }

    func start() async throws {
        try server.start()
        logger.info("public API listening", ["http.port": String(server.port)])
    }

    func shutdown() async {
        readiness.markDraining()
        await server.shutdown(gracePeriod: .seconds(10))
    }
}
