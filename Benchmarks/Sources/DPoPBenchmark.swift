import Crypto
import Foundation
import JWT
import PostgresClient
import ServiceKit

/// Device-bound face login: what a DPoP proof costs to make and to check (in process, one core), and face
/// login over HTTP on a bound key (proof + 1:1 verify) beside a header-mode login (1:N search), p50/p99 at
/// concurrency 1 and 8, with the same gallery, photo and release-mode processes.
func runDPoPBenchmark(arguments: [String]) async throws {
    let requests = Int(arguments.first ?? "") ?? 64
    let images = try Bench.environment("FACEGATE_TEST_IMAGES")
    let probe = try Data(contentsOf: URL(fileURLWithPath: images + "/obama2.jpg"))
    let url = "http://127.0.0.1:18080/v1/face-login"

    // In process: proof creation and verification over the photo's bytes, in batches, median per operation.
    let key = P256PrivateKey()
    let body = Array(probe)
    let token = String(repeating: "t", count: 400)
    func medianMicroseconds(_ operation: () throws -> Void) rethrows -> Double {
        var batches: [Double] = []
        for _ in 0..<20 {
            let started = ContinuousClock.now
            for _ in 0..<100 { try operation() }
            batches.append((ContinuousClock.now - started).seconds * 1e6 / 100)
        }
        return Bench.percentile(batches.sorted(), 50)
    }
    let proof = try DPoP.proof(key: key, method: "POST", url: url, accessToken: token, body: body)
    let makeMicros = try medianMicroseconds { _ = try DPoP.proof(key: key, method: "POST", url: url, accessToken: token, body: body) }
    let verifyMicros = try medianMicroseconds {
        _ = try DPoP.verify(proof, method: "POST", urls: [url], accessToken: token, body: body)
    }
    let digestMicros = medianMicroseconds { _ = DPoP.digest(body) }

    // Over HTTP: a gateway and one matcher, two apps with the same gallery.
    let stack = try await BenchStack.start()
    defer { stack.stop() }
    let header = try await stack.app(binding: "header", gallery: images)
    let keyed = try await stack.app(binding: "dpop", gallery: images)
    // The same, each phone also bound to the other user (B2, after B1): its own user is compared second.
    let twice = try await stack.app(binding: "dpop", gallery: images)
    let phones = BenchPhones(base: stack.base)
    let other = try Data(contentsOf: URL(fileURLWithPath: images + "/biden.jpg"))
    for phone in phones.indices {
        for app in [header, keyed, twice] { try await phones.bind(app, phone: phone, photo: probe, number: "B1") }
        try await phones.bind(twice, phone: phone, photo: other, number: "B2")
    }
    func load(_ app: BenchStack.App, concurrency: Int) async throws -> BenchPhones.Run {
        try await phones.load(app, concurrency: concurrency, requests: requests, photo: probe)
    }
    var rows: [String] = []
    for concurrency in [1, 8] {
        // Alternated, so both see the same machine.
        for app in [header, keyed, twice] { _ = try await load(app, concurrency: concurrency) }
        let plain = try await load(header, concurrency: concurrency)
        let bound = try await load(keyed, concurrency: concurrency)
        let second = try await load(twice, concurrency: concurrency)
        for (name, run) in [("header device, 1:N search", plain), ("DPoP key bound to its user, 1:1", bound),
                             ("DPoP key bound to 2 users, its user 1:1 second", second)] {
            rows.append(String(format: "| %@ | %d | %d | %@ | %.0f | %.0f |", name, concurrency, requests, run.failureText,
                               Bench.percentile(run.latencies, 50), Bench.percentile(run.latencies, 99)))
        }
    }

    try Bench.record("Device-bound face login (DPoP)", """
    A DPoP proof (ES256 over P-256, `dgst` over the \(body.count / 1024) KB photo, `ath` over a 400-byte token), one core, median of 20
    batches of 100: make \(String(format: "%.0f", makeMicros)) µs, verify \(String(format: "%.0f", verifyMicros)) µs (of which SHA-256 of the
    photo \(String(format: "%.0f", digestMicros)) µs). The gateway adds one PostgreSQL insert per proof (its `jti`).

    Face login of obama2.jpg over HTTP, release build, gateway + one matcher (one face engine) + broker + PostgreSQL on the same
    2-core machine; each app's gallery holds the \(header.gallerySize) test photos' people (obama.jpg for the user logging in). Each
    client sends from its own phone, bound to the user in every app. Header mode sends `X-Device-Id` and is searched 1:N; the DPoP
    apps get a fresh proof per request (made by the load generator, inside the measured time) and compare the photo 1:1 with the
    key's users in the job that embeds it: in the third app each phone is also bound to the other user, compared first, so a
    login checks two users (it embedded the photo once per user compared before the one-embedding job). Runs alternate.

    | login | clients | requests | failures | p50 ms | p99 ms |
    | --- | --- | --- | --- | --- | --- |
    \(rows.joined(separator: "\n"))
    """)
}

/// A gateway and one matcher from the release build, on the benchmark ports, with a fresh topic prefix.
struct BenchStack {
    struct App {
        var id: String
        var token: String
        var binding: String
        var gallerySize: Int
    }

    let base: String
    let adminKey: String
    let processes: [ServiceProcess]
    /// The gateway's admin port; each other process's follows in `processes`' order.
    let adminPort: Int

    /// The sum of a metric's series (lines starting with `name`) on the admin endpoint of `processes[index]`; nil when the
    /// release does not publish it.
    func metric(_ name: String, process index: Int = 0) async throws -> Double? {
        let (_, metrics) = try await HTTP.call("GET", "http://127.0.0.1:\(adminPort + index)/metrics")
        let values = String(decoding: metrics, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix(name) }
            .map { Double($0.split(separator: " ").last ?? "") ?? 0 }
        return values.isEmpty ? nil : values.reduce(0, +)
    }

    /// `binaries`: another release's services (default `FACEGATE_RELEASE_DIR` or .build/release); `databaseURL`: another
    /// database, already migrated by that release (this one migrates its own); `port`: the public port, the admin ports
    /// following `adminPort`; `extra`: more environment; `workers`: also the ctid-verifier and the kiosk-orchestrator.
    static func start(matcherEngines: Int = 1, binaries: String? = nil, databaseURL: String? = nil, port: Int = 18080, adminPort: Int = 19100,
                      extra: [String: String] = [:], workers: Bool = false) async throws -> BenchStack {
        let binaries = binaries ?? ProcessInfo.processInfo.environment["FACEGATE_RELEASE_DIR"] ?? ".build/release"
        if databaseURL == nil {
            let pool = PostgresPool(configuration: try PostgresConfiguration(url: try Bench.environment("FACEGATE_DATABASE_URL")))
            try await ServiceRuntime.migrate(pool)
            await pool.close()
        }
        let adminKey = "fgk_bench_" + UUID().uuidString.lowercased()
        var env = [
            "FACEGATE_TOPIC_PREFIX": "bench\(UUID().uuidString.prefix(6).lowercased()).", "FACEGATE_ADMIN_KEY": adminKey,
            "FACEGATE_LOG_LEVEL": "warning", "FACEGATE_HTTP_PORT": String(port), "FACEGATE_ADMIN_PORT": String(adminPort), "MATCHER_ENGINES": String(matcherEngines),
        ].merging(extra) { _, new in new }
        if let databaseURL { env["FACEGATE_DATABASE_URL"] = databaseURL }
        let gateway = try ServiceProcess(binaries + "/auth-gateway", name: "gateway-\(port)", environment: env)
        env["FACEGATE_ADMIN_PORT"] = String(adminPort + 1)
        var processes = [gateway, try ServiceProcess(binaries + "/matcher-worker", name: "matcher-\(port)", environment: env)]
        let others: [(binary: String, name: String)] = workers ? [("ctid-verifier", "ctid"), ("kiosk-orchestrator", "kiosk")] : []
        for (offset, worker) in others.enumerated() {
            env["FACEGATE_ADMIN_PORT"] = String(adminPort + 2 + offset)
            processes.append(try ServiceProcess(binaries + "/" + worker.binary, name: "\(worker.name)-\(port)", environment: env))
        }
        let stack = BenchStack(base: "http://127.0.0.1:\(port)", adminKey: adminKey, processes: processes, adminPort: adminPort)
        do {
            try await HTTP.waitUntilOK("http://127.0.0.1:\(adminPort)/readyz", timeout: .seconds(60))
            for offset in 1..<processes.count {
                try await HTTP.waitUntilOK("http://127.0.0.1:\(adminPort + offset)/readyz", timeout: .seconds(120))
            }
        } catch {
            stack.stop()
            throw error
        }
        return stack
    }

    func stop() { processes.forEach { $0.stop() } }

    /// An app with face login formal (with `kiosk`, kiosk login too, liveness off), user B1 enrolled with obama.jpg and one
    /// user per other single-face test photo.
    func app(binding: String, gallery images: String, kiosk: Bool = false) async throws -> App {
        let admin = ["Authorization": "Bearer \(adminKey)", "Content-Type": "application/json"]
        let modules = kiosk ? #"{"faceLogin":"formal","kiosk":"formal"},"liveness":{"faceLogin":"off","kiosk":"off"}"# : #"{"faceLogin":"formal"}"#
        let (_, appData) = try await HTTP.call("POST", base + "/v1/apps", headers: admin, body: Data(
            #"{"name":"bench-\#(binding)","deviceBinding":"\#(binding)","deviceBindingPolicy":"employeeNumber","modules":\#(modules)}"#.utf8))
        let app = HTTP.json(appData)
        guard let appId = app["appId"] as? String, let secret = app["appSecret"] as? String else { throw BenchError("no app: \(app)") }
        var enrolled = 0
        for (index, photo) in ["obama.jpg", "biden.jpg"].enumerated() {
            let (_, userData) = try await HTTP.call("POST", base + "/v1/apps/\(appId)/users", headers: admin,
                                                    body: Data(#"{"employeeNumber":"B\#(index + 1)","name":"Bench \#(index + 1)"}"#.utf8))
            let userId = HTTP.json(userData)["userId"] as? String ?? ""
            let (status, answer) = try await HTTP.call("POST", base + "/v1/apps/\(appId)/users/\(userId)/faces",
                                                       headers: ["Authorization": "Bearer \(adminKey)", "Content-Type": "image/jpeg"],
                                                       body: try Data(contentsOf: URL(fileURLWithPath: images + "/" + photo)))
            guard status == 201 else { throw BenchError("enroll \(photo): \(String(decoding: answer, as: UTF8.self))") }
            enrolled += 1
        }
        let basic = "Basic " + Data("\(appId):\(secret)".utf8).base64EncodedString()
        let (_, tokenData) = try await HTTP.call("POST", base + "/v1/access-tokens", headers: ["Authorization": basic])
        return App(id: appId, token: HTTP.json(tokenData)["accessToken"] as? String ?? "", binding: binding, gallerySize: enrolled)
    }
}

/// Eight phones (a key and a device id each) sending face logins: each client of a load uses its own phone, as people do
/// (one phone sending several logins at once is throttled as the brute force it looks like: attempts in flight count
/// before they are compared). On a `dpop` app every call carries a fresh proof, made inside the measured time.
struct BenchPhones {
    let base: String
    let phones = (0..<8).map { (id: "bench-phone-\($0)", key: P256PrivateKey()) }

    var indices: Range<Int> { phones.indices }

    func headers(_ app: BenchStack.App, phone: Int, path: String = "/v1/face-login", body: Data, type: String = "image/jpeg") throws -> [String: String] {
        var headers = ["Authorization": "Bearer \(app.token)", "Content-Type": type, "X-Device-Id": phones[phone].id]
        if app.binding == "dpop" {
            headers["DPoP"] = try DPoP.proof(key: phones[phone].key, method: "POST", url: base + path, accessToken: app.token, body: Array(body))
        }
        return headers
    }

    /// Binds the phone to the user `photo` shows, confirming `number` (apps whose policy is `employeeNumber`).
    func bind(_ app: BenchStack.App, phone: Int, photo: Data, number: String) async throws {
        let url = base + "/v1/face-login"
        let (_, first) = try await HTTP.call("POST", url, headers: try headers(app, phone: phone, body: photo), body: photo)
        guard let confirmation = HTTP.json(first)["confirmationId"] as? String else { throw BenchError("no confirmation: \(HTTP.json(first))") }
        let confirm = Data(#"{"confirmationId":"\#(confirmation)","employeeNumber":"\#(number)"}"#.utf8)
        let confirmHeaders = try headers(app, phone: phone, path: "/v1/face-login/confirm", body: confirm, type: "application/json")
        let (status, answer) = try await HTTP.call("POST", url + "/confirm", headers: confirmHeaders, body: confirm)
        guard status == 200 else { throw BenchError("binding failed: \(String(decoding: answer, as: UTF8.self))") }
    }

    /// Latencies (sorted, ms), the wall time, and the answers that were not a login (`status code`, counted).
    struct Run {
        var latencies: [Double]
        var seconds: Double
        var failures: [String: Int]

        var failureText: String {
            failures.isEmpty ? "0" : failures.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }.joined(separator: ", ")
        }
    }

    func load(_ app: BenchStack.App, concurrency: Int, requests: Int, photo: Data) async throws -> Run {
        let url = base + "/v1/face-login"
        let started = ContinuousClock.now
        let results = try await withThrowingTaskGroup(of: [(Double, String?)].self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    var local: [(Double, String?)] = []
                    for _ in stride(from: worker, to: requests, by: concurrency) {
                        let started = ContinuousClock.now
                        let (status, answer) = try await HTTP.call("POST", url, headers: try headers(app, phone: worker % phones.count, body: photo), body: photo)
                        let json = HTTP.json(answer)
                        let failure = status == 200 && json["status"] as? String == "SUCCESS" ? nil
                            : "\(status) \((json["error"] as? [String: Any])?["code"] as? String ?? json["status"] as? String ?? "?")"
                        local.append(((ContinuousClock.now - started).milliseconds, failure))
                    }
                    return local
                }
            }
            return try await group.reduce(into: [(Double, String?)]()) { $0 += $1 }
        }
        return Run(latencies: results.map(\.0).sorted(), seconds: (ContinuousClock.now - started).seconds,
                   failures: results.compactMap(\.1).reduce(into: [:]) { $0[$1, default: 0] += 1 })
    }
}
