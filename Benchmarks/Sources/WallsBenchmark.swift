import Crypto
import FaceGateCore
import Foundation
import KafkaClient
import PostgresClient
import ServiceKit

/// `facegate-bench walls [--url URL] [--photo PATH] [--rounds 2000]`
///
/// What the walls of #18 cost, each against the same work without them, in one run:
/// 1. a face job carrying a photo, produced (signed) and consumed (signature checked): on `face.jobs.v1`, where the
///    value is also sealed to the matcher and opened, against the same envelope on a topic that is only signed;
/// 2. a primary-key SELECT on `users` through the pool: inside an app's row-level-security scope (BEGIN, SET LOCAL,
///    the statement, COMMIT, one pipelined round trip), against the same statement with the app named once for the session.
/// 3. the job's envelope encoded and decoded as a frame against all-JSON with the photo as base64.
/// Medians and 99th percentiles of sequential runs (one core). Appends the figures to Benchmarks/RESULTS.md.
func runWallsBenchmark(arguments: [String]) async throws {
    let options = Bench.options(arguments)
    let rounds = Int(options["rounds"] ?? "") ?? 2000
    let photoPath = options["photo"] ?? ".run/testdata/obama.jpg"
    let photo = try Data(contentsOf: URL(fileURLWithPath: photoPath))

    // 1. Messages.
    let generated = ServiceKeys.generate(for: ServiceKeys.platformServices)
    let topics = Topics()
    func authenticator(_ service: String) throws -> MessageAuthenticator {
        MessageAuthenticator(keys: try ServiceKeys(service: service, seed: Array(Data(base64Encoded: generated.seeds[service]!)!),
                                                   publicKeys: generated.publicKeys),
                             topics: topics, metrics: MetricsRegistry(), replayWindow: .zero)
    }
    let (gateway, matcher) = (try authenticator("auth-gateway"), try authenticator("matcher-worker"))
    let job = MessageEnvelope(type: "face.identify", correlationId: UUID().wire, appId: UUID().wire, deadline: Date().addingTimeInterval(10),
                              replyTo: ReplyTo(topic: topics.replies(service: "auth-gateway"), partition: 0),
                              payload: FaceJob(appId: UUID(), .identify(image: photo, topK: 5)))
    let value = try job.encoded()
    func roundTrip(_ topic: String) throws -> (Double, Int) {
        let started = ContinuousClock.now
        let record = gateway.sign(KafkaRecord(topic: topic, key: Array("k".utf8), value: value))
        let message = KafkaMessage(topic: topic, partition: 0, offset: 0, key: record.key, value: record.value, headers: record.headers)
        guard case .success = matcher.authenticate(message), case .success(let opened) = matcher.open(message), opened == value else {
            throw BenchError("a job did not survive the round trip on \(topic)")
        }
        return ((ContinuousClock.now - started).seconds * 1e6, record.value.count)
    }
    var sealed: [Double] = [], signed: [Double] = []
    var sealedBytes = 0
    for round in 0..<(rounds + 50) {
        let (s, bytes) = try roundTrip(topics.faceJobs)
        let (p, _) = try roundTrip(topics.auditTransactions)
        if round >= 50 { sealed.append(s); signed.append(p) }  // the first 50 warm up
        sealedBytes = bytes
    }
    sealed.sort(); signed.sort()

    // 1b. The envelope itself: encoded and decoded as a frame (the photo as bytes) against all-JSON (the photo as base64).
    var framed: [Double] = [], json: [Double] = []
    var jsonBytes = 0
    for round in 0..<(rounds + 50) {
        var started = ContinuousClock.now
        guard try MessageEnvelope<FaceJob>.decode(try job.encoded()).payload.image?.count == photo.count else { throw BenchError("frame lost the photo") }
        let f = (ContinuousClock.now - started).seconds * 1e6
        started = ContinuousClock.now
        let legacy = try FaceGateJSON.encode(job)
        guard try MessageEnvelope<FaceJob>.decode(legacy).payload.image?.count == photo.count else { throw BenchError("JSON lost the photo") }
        let j = (ContinuousClock.now - started).seconds * 1e6
        if round >= 50 { framed.append(f); json.append(j) }
        jsonBytes = legacy.count
    }
    framed.sort(); json.sort()

    // 2. Row-level security: as the schema owner (a non-superuser, held by the FORCEd policies) on a migrated
    // database. The baseline names the app for the whole session (the policy filters the same way, no transaction);
    // the scoped pool names it per transaction, as the services do.
    let url = try options["url"] ?? Bench.environment("FACEGATE_TEST_DATABASE_URL")
    var admin = try PostgresConfiguration(url: url)
    admin.poolSize = 1
    let adminPool = PostgresPool(configuration: admin)
    let database = "facegate_bench_walls_\(getpid())"
    _ = try await adminPool.query("DROP DATABASE IF EXISTS \(unsafeRaw: database) WITH (FORCE)")
    _ = try await adminPool.query("CREATE DATABASE \(unsafeRaw: database) OWNER facegate_owner")
    var configuration = admin
    configuration.database = database
    configuration.user = "facegate_owner"
    let appId = UUID()
    var session = configuration
    session.sessionSettings = [Tenant.setting: appId.uuidString.lowercased()]
    let (pool, sessionPool) = (PostgresPool(configuration: configuration), PostgresPool(configuration: session))
    var plain: [Double] = [], scoped: [Double] = []
    do {
        try await ServiceRuntime.migrate(pool)
        _ = try await sessionPool.query("""
            INSERT INTO apps (id, name, secret_hash, modules, liveness, quotas) VALUES (\(appId), 'bench', '\\x00', '{}', '{}', '{}')
            """)
        let userIds = (0..<1000).map { _ in UUID() }
        for (number, userId) in userIds.enumerated() {
            _ = try await sessionPool.query("INSERT INTO users (id, app_id, employee_number, name) VALUES (\(userId), \(appId), \(String(number)), 'bench')")
        }
        func select(_ userId: UUID, on pool: PostgresPool) async throws -> Double {
            let started = ContinuousClock.now
            guard try await pool.query("SELECT name FROM users WHERE id = \(userId)").first != nil else { throw BenchError("user not visible") }
            return (ContinuousClock.now - started).seconds * 1e6
        }
        for round in 0..<(rounds + 50) {
            let userId = userIds[round % userIds.count]
            let p = try await select(userId, on: sessionPool)
            let s = try await Tenant.run(app: appId) { try await select(userId, on: pool) }
            if round >= 50 { plain.append(p); scoped.append(s) }
        }
        plain.sort(); scoped.sort()
    } catch {
        await pool.close()
        await sessionPool.close()
        _ = try? await adminPool.query("DROP DATABASE IF EXISTS \(unsafeRaw: database) WITH (FORCE)")
        await adminPool.close()
        throw error
    }
    await pool.close()
    await sessionPool.close()
    _ = try await adminPool.query("DROP DATABASE IF EXISTS \(unsafeRaw: database) WITH (FORCE)")
    await adminPool.close()

    func row(_ name: String, _ sample: [Double], against base: [Double]) -> String {
        let (p50, p99) = (Bench.percentile(sample, 50), Bench.percentile(sample, 99))
        return String(format: "| %@ | %.0f | %.0f | %.2f× |", name, p50, p99, p50 / Bench.percentile(base, 50))
    }
    try Bench.record("Walls: sealed job messages and row-level security", """
        \(rounds) sequential rounds of each, interleaved (A B A B …), after 50 to warm up; load average before \(Bench.loadAverage()).

        | what | p50 µs | p99 µs | vs without the wall (p50) |
        | --- | --- | --- | --- |
        \(row("sign + verify a face job with a \(photo.count / 1024) KB photo (only signed)", signed, against: signed))
        \(row("seal + sign + verify + open it (face.jobs.v1, one matcher key; \(sealedBytes / 1024) KB sealed)", sealed, against: signed))
        \(row("encode + decode that job's envelope as all-JSON, the photo as base64 (\(jsonBytes / 1024) KB; before)", json, against: json))
        \(row("the same as a frame, the photo as bytes beside the JSON (\(value.count / 1024) KB; the services now)", framed, against: json))
        \(row("primary-key SELECT on users, the app named for the session (policy applied, no transaction)", plain, against: plain))
        \(row("the same as the services run it: BEGIN, SET LOCAL, SELECT, COMMIT in one pipelined round trip", scoped, against: plain))
        """)
}
