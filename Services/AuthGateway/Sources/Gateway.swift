import AuditRecords
import CTIDRecords
import Crypto
import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation
import HTTPServer
import JWT
import KafkaClient
import KioskSessionRecords
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

    public init(configuration: GatewayConfiguration) throws {
        let runtime = try ServiceRuntime(configuration: configuration.common)
        self.runtime = runtime
        let producer = try runtime.makeProducer()
        let requester = RequesterService(runtime: runtime, producer: producer, service: "auth-gateway",
                                         timeout: configuration.requestTimeout)
        let composition = try GatewayComposition(configuration: configuration, runtime: runtime, producer: producer, requester: requester)
        let router = Router()
        routeTable = RouteTable()
        composition.boot(router: router, table: routeTable)
        http = PublicHTTPService(configuration: configuration, router: router, runtime: runtime)
        admin = runtime.adminServer()
        if configuration.publicURL == nil, !configuration.listensOnLoopbackOnly {
            runtime.logger.error("FACEGATE_PUBLIC_URL is not set: device proofs (DPoP apps, kiosks) are refused until it is", [:])
        }
        runtime.readiness.add("kafka-replies") { requester.isReady }
        // Started in this order and stopped in reverse: the listener drains before the requester its handlers use, and
        // background work finishes before the producer it publishes with is flushed and closed.
        var services: [any Service] = [admin, ProducerService(producer: producer), runtime.background, TopicsService(runtime: runtime),
                                       requester, http]
        services += composition.backgroundServices
        group = ServiceGroup(services: services, logger: runtime.logger,
                             shutdownTimeout: .seconds(configuration.common.shutdownSeconds))
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

/// The composition root: every store, worker client and use case of the gateway, built once, and the route collections
/// that hold them. Nothing else builds a dependency; a route collection reaches only what its initialiser was given.
struct GatewayComposition {
    let routeCollections: [any RouteCollection]
    let calls: CallLog
    let callers: Callers
    let idempotentRequests: IdempotentRequests
    let clientRate: RateLimiter
    let logger: Logger
    let undeclaredRefusals: Counter
    /// Sweeps, refusal summaries and audit checkpoints.
    let backgroundServices: [any Service]

    init(configuration: GatewayConfiguration, runtime: ServiceRuntime, producer: KafkaProducer, requester: RequesterService) throws {
        let database = runtime.database
        let logger = runtime.logger
        self.logger = logger
        undeclaredRefusals = runtime.metrics.counter("facegate_http_undeclared_refusals_total",
                                                     help: "Refusals with an error code their route does not declare, by route and code")

        // Keys
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
        let keySet = JWTKeySet(published)
        let kioskKeySet = JWTKeySet(kiosk)
        let identityTokens = IdentityTokenIssuer(issuer: configuration.issuer, key: signingKey, ttl: configuration.identityTokenTTL)
        let interviewTokens = try InterviewTokens(signingSeed: configuration.signingKey)

        // Stores
        let transactions = TransactionLog(database: database, publishing: (producer, runtime.topics.auditTransactions, runtime.background), logger: logger,
                                          keys: configuration.auditKeys)
        let apps = PostgresApps(database: database)
        let apiKeys = PostgresApiKeys(database: database)
        let bindings = PostgresDeviceBindings(database: database)
        let users = PostgresUserDirectory(database: database)
        let challenges = PostgresLivenessChallenges(database: database)
        let spentTokenIds = PostgresSpentTokenIds(database: database)
        let roster = PostgresUserRoster(database: database)
        let kioskRegistry = PostgresKioskRegistry(database: database)
        let kioskSessionStore = KioskSessionStore(database: database)
        let ctidSerials = PostgresCTIDSerials(database: database)
        idempotentRequests = IdempotentRequests(records: PostgresIdempotencyRecords(database: database))

        // Workers
        let matcher = MatcherClient(requester: requester, shards: configuration.matcherShards,
                                    roundTrip: runtime.metrics.histogram("facegate_face_job_round_trip_seconds", help: "Gateway → matcher → gateway time"),
                                    logger: logger)
        let gallery = GalleryBroadcaster(producer: producer, topic: runtime.topics.galleryChanges, logger: logger)
        let orchestrator = KioskOrchestratorClient(requester: requester, sessions: kioskSessionStore, logger: logger)

        // Use cases
        let attempts = AttemptGuard(store: PostgresAttemptCounters(database: database),
                                    rule: .init(throttleAfter: configuration.throttleAfter, throttleSeconds: configuration.throttleSeconds,
                                                lockAfter: configuration.lockAfter),
                                    addressRule: .init(throttleAfter: configuration.addressThrottleAfter, throttleSeconds: configuration.throttleSeconds,
                                                       lockAfter: 0, failureWindow: configuration.addressFailureWindow))
        let faceModelMigration = FaceModelMigration(store: PostgresModelMigration(database: database), apps: apps, matcher: matcher)
        let kioskSessions = KioskSessions(admission: apps, commands: orchestrator, sessions: orchestrator, challenges: challenges,
                                          tickets: PostgresKioskEventTickets(database: database), interviewTokens: interviewTokens)
        let kioskRegistration = KioskRegistration(registry: kioskRegistry, openSessions: kioskSessionStore, commands: orchestrator)
        let devices = DeviceProofs(spentTokenIds: spentTokenIds, maxAge: configuration.dpopMaxAge, publicURL: configuration.publicURL,
                                   listensOnLoopbackOnly: configuration.listensOnLoopbackOnly)
        let kiosks = KioskProofs(devices: devices, registration: kioskRegistration, apps: apps)
        let kioskLoginRate = RateLimiter(rate: Double(configuration.kioskLoginRate) / 60, burst: configuration.kioskLoginBurst)
        let kioskLoginsLimited = runtime.metrics.counter("facegate_kiosk_logins_limited_total",
                                                         help: "Kiosk logins refused because the kiosk used up its rate (FACEGATE_KIOSK_LOGIN_RATE)")
        let auditTrail = AuditTrail(records: transactions, keys: keySet, signingKey: signingKey, issuer: configuration.issuer,
                                    acceptUnkeyed: configuration.acceptUnkeyedAuditRows)
        let console = ConsoleFiles(directory: configuration.consoleDirectory ?? ConsoleFiles.sourceTreeDirectory)
        if console.files["index.html"] == nil {
            logger.warning("console files not found; /console/ answers 404", ["console.dir": console.directory])
        }

        routeCollections = [
            OperatorRoutes(apps: apps,
                           appAdministration: AppAdministration(apps: apps, roster: roster, ctidPublicKey: configuration.ctidPublicKey,
                                                                secretGraceSeconds: configuration.secretGraceSeconds),
                           appErasure: AppErasure(apps: apps, keys: apiKeys, gallery: gallery),
                           userAdministration: UserAdministration(roster: roster, attempts: attempts, gallery: gallery),
                           enrollment: Enrollment(roster: roster, matcher: matcher, maxFacesPerUser: configuration.maxFacesPerUser)),
            AppServerRoutes(accessTokens: AccessTokens(issuer: configuration.issuer, key: signingKey, ttl: configuration.accessTokenTTL),
                            identityExchange: IdentityExchange(keys: keySet, kioskKeys: kioskKeySet, issuer: configuration.issuer,
                                                               spent: spentTokenIds, users: users)),
            FaceLoginRoutes(faceLogin: FaceLogin(admission: apps, attempts: attempts, bindings: bindings, users: users, challenges: challenges,
                                                 matcher: matcher, tokens: identityTokens, kioskKeys: kioskRegistry,
                                                 confirmationTTL: Int(configuration.confirmationTTL)) { app, user, image, target in
                                runtime.background.submit {
                                    await Self.reenroll(app: app, user: user, image: image, target: target, migration: faceModelMigration,
                                                        transactions: transactions, logger: logger)
                                }
                            },
                            devices: devices),
            DeviceCredentialRoutes(deviceCredentials: DeviceCredentials(
                                       admission: apps, attempts: attempts, credentials: PostgresDeviceCredentials(database: database),
                                       spentTokenIds: spentTokenIds, users: users, tokens: identityTokens, keys: keySet,
                                       issuer: configuration.issuer) { credential in
                                       logger.warning("device credential counter did not advance; credential flagged", ["credential.id": credential.wire])
                                   },
                                   devices: devices),
            AuditRoutes(auditTrail: auditTrail, apps: apps),
            DiscoveryRoutes(jwks: try JWTKeySet(published + kiosk).jwksJSON(), publicURL: configuration.publicURL),
            CTIDRoutes(ctidVerification: CTIDVerification(admission: apps, attempts: attempts, serials: ctidSerials,
                                                          verifier: CTIDClient(requester: requester, logger: logger),
                                                          serialTTLSeconds: configuration.ctidSerialTTLSeconds)),
            KioskSessionRoutes(kioskSessions: kioskSessions, store: kioskSessionStore, kiosks: kiosks,
                               eventStreams: EventStreamSlots(limit: configuration.eventStreams, perClient: configuration.eventStreamsPerClient)),
            ConsoleRoutes(console: console),
            LivenessRoutes(liveness: ActiveLiveness(challenges: challenges), devices: devices),
            DeviceKeyRoutes(bindingTickets: BindingTickets(bindings: bindings, users: users, ttlSeconds: configuration.bindingTicketTTL), devices: devices),
            KioskLoginRoutes(kioskLogin: KioskLogin(admission: apps, attempts: attempts, users: users, sessions: kioskSessionStore,
                                                    challenges: challenges, matcher: matcher, tokens: identityTokens) { kiosk in
                                 let key = kiosk.wire
                                 if kioskLoginRate.admit(key) { return (true, 0) }
                                 kioskLoginsLimited.increment()
                                 return (false, kioskLoginRate.retryAfter(key))
                             },
                             kiosks: kiosks),
            KioskRegistrationRoutes(kioskRegistration: kioskRegistration),
            KeyRoutes(accessKeys: AccessKeys(keys: apiKeys, apps: apps)),
            FaceVerifyRoutes(faceComparison: FaceComparison(admission: apps, attempts: attempts, users: users, bindings: bindings, matcher: matcher),
                             devices: devices),
            FaceModelMigrationRoutes(faceModelMigration: faceModelMigration),
        ]

        let calls = CallLog(transactions: transactions, trustedProxies: configuration.trustedProxies,
                            refusals: RefusalLedger(period: configuration.refusalSummarySeconds), logger: logger)
        self.calls = calls
        callers = Callers(apps: apps, apiKeys: apiKeys, keySet: keySet, issuer: configuration.issuer,
                          bootstrapAdminKeyHash: configuration.bootstrapAdminKeyHash,
                          serverCallRate: RateLimiter(rate: Double(configuration.serverCallRate), burst: configuration.serverCallBurst),
                          interviewTokens: interviewTokens, kioskSessions: kioskSessions)
        clientRate = RateLimiter(rate: Double(configuration.clientRate), burst: configuration.clientBurst)

        let idempotentRequests = idempotentRequests
        var background: [any Service] = [
            // Deletes what can no longer be used: expired single-use records (`ExpiredRecords`), spent token ids, CTID serials and idempotency records.
            PeriodicService(name: "expired-records", every: configuration.sweepInterval, logger: logger) {
                try await ExpiredRecords(database: database).sweep()
                try await PostgresSpentTokenIds(database: database).sweepExpired()
                try await ctidSerials.sweepExpired()
                try await idempotentRequests.sweep()
            },
        ]
        if configuration.refusalSummarySeconds > 0 {
            background.append(PeriodicService(name: "refusal-summaries", every: .seconds(max(1, configuration.refusalSummarySeconds / 4)),
                                              logger: logger) { await calls.recordRefusalSummaries() })
        }
        if configuration.auditCheckpointInterval > .zero {
            // Publishes the checkpoints of the chains that grew on the audit topic, with the header `facegate-type: audit.checkpoint`.
            let published = Mutex<[UUID: Int64]>([:])
            let topic = runtime.topics.auditTransactions
            background.append(PeriodicService(name: "audit-checkpoints", every: configuration.auditCheckpointInterval, logger: logger) {
                var current = published.withLock { $0 }
                try await auditTrail.publishCheckpoints(after: &current) { signed in
                    _ = try await producer.send(KafkaRecord(topic: topic, key: Array(signed.appId.utf8), value: try FaceGateJSON.encode(signed),
                                                            headers: [KafkaHeader(key: MessageHeader.messageType, value: Array("audit.checkpoint".utf8)),
                                                                      TraceContext.header]))
                }
                published.withLock { $0 = current }
            })
        }
        backgroundServices = background
    }

    /// Registers every route collection's routes.
    func boot(router: Router, table: RouteTable) {
        let routes = APIRoutes(router: router, table: table, idempotency: idempotentRequests, calls: calls, callers: callers,
                               clientRate: clientRate, logger: logger, undeclaredRefusals: undeclaredRefusals)
        for collection in routeCollections { collection.boot(routes) }
    }

    /// Enrolls the probe of a confident login with the model the app moves to (`FaceModelMigration.reenroll`), as
    /// background work: a failure only leaves the user not ready yet.
    static func reenroll(app: AppRecord, user: UUID, image: Data, target: FaceModel, migration: FaceModelMigration,
                         transactions: TransactionLog, logger: Logger) async {
        do {
            guard let record = try await migration.reenroll(app: app, user: user, image: image, target: target) else { return }
            try await transactions.append(record)
        } catch {
            logger.warning("re-enrollment for the model migration failed", ["app.id": app.id.wire, "error": "\(error)"])
        }
    }
}

extension KioskSessionStore: KioskOpenSessions, OnboardingSessions {}

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

    func run(_ context: ServiceContext) async throws {
        try server.start()
        logger.info("public API listening", ["http.port": String(server.port)])
        context.ready()
        await context.shutdownRequested()
        readiness.markDraining()
        await server.shutdown(gracePeriod: .seconds(10))
    }
}
