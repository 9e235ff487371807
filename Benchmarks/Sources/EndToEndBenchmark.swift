import Foundation
import PostgresClient
import ServiceKit

/// Face login over HTTP through the whole path (gateway → broker → matcher-worker → broker → gateway →
/// PostgreSQL) against 1 and 2 matcher replicas, as real release-mode processes; then thousands of
/// requests held in flight by the gateway. Figures: throughput, p50/p99, the share of latency outside
/// the face pipeline (from the matcher's own stage timings), gateway threads and memory.
func runEndToEndBenchmark(arguments: [String]) async throws {
    let requests = Int(arguments.first ?? "") ?? 48
    let binaries = ProcessInfo.processInfo.environment["FACEGATE_RELEASE_DIR"] ?? ".build/release"
    let images = try Bench.environment("FACEGATE_TEST_IMAGES")
    let probe = try Data(contentsOf: URL(fileURLWithPath: images + "/obama2.jpg"))
    let enrollPhoto = try Data(contentsOf: URL(fileURLWithPath: images + "/obama.jpg"))
    let adminKey = "fgk_bench_" + UUID().uuidString.lowercased()
    let prefix = "bench\(UUID().uuidString.prefix(6).lowercased())."
    let pool = PostgresPool(configuration: try PostgresConfiguration(url: try Bench.environment("FACEGATE_DATABASE_URL")))
    try await ServiceRuntime.migrate(pool)
    await pool.close()

    var env = [
        "FACEGATE_TOPIC_PREFIX": prefix, "FACEGATE_ADMIN_KEY": adminKey, "FACEGATE_LOG_LEVEL": "warning",
        "FACEGATE_HTTP_PORT": "18080", "FACEGATE_ADMIN_PORT": "19100", "MATCHER_ENGINES": "1",
    ]
    let base = "http://127.0.0.1:18080"
    let gateway = try ServiceProcess(binaries + "/auth-gateway", name: "gateway", environment: env)
    defer { gateway.stop() }
    try await HTTP.waitUntilOK("http://127.0.0.1:19100/readyz", timeout: .seconds(60))

    var matchers: [ServiceProcess] = []
    func startMatcher() async throws {
        env["FACEGATE_ADMIN_PORT"] = String(19101 + matchers.count)
        let matcher = try ServiceProcess(binaries + "/matcher-worker", name: "matcher\(matchers.count)", environment: env)
        matchers.append(matcher)
        try await HTTP.waitUntilOK("http://127.0.0.1:\(19101 + matchers.count - 1)/readyz", timeout: .seconds(120))
    }
    defer { matchers.forEach { $0.stop() } }
    try await startMatcher()

    // One app, one enrolled user, one confirmed device.
    let admin = ["Authorization": "Bearer \(adminKey)", "Content-Type": "application/json"]
    let (_, appData) = try await HTTP.call("POST", base + "/v1/apps", headers: admin,
                                           body: Data(#"{"name":"bench","deviceBinding":"header","modules":{"faceLogin":"formal"}}"#.utf8))
    let app = HTTP.json(appData)
    guard let appId = app["appId"] as? String, let secret = app["appSecret"] as? String else { throw BenchError("no app: \(app)") }
    let (_, userData) = try await HTTP.call("POST", base + "/v1/apps/\(appId)/users", headers: admin,
                                            body: Data(#"{"employeeNumber":"B1","name":"Bench"}"#.utf8))
    let userId = HTTP.json(userData)["userId"] as? String ?? ""
    let (enrolled, enrollBody) = try await HTTP.call("POST", base + "/v1/apps/\(appId)/users/\(userId)/faces",
                                                     headers: ["Authorization": "Bearer \(adminKey)", "Content-Type": "image/jpeg"], body: enrollPhoto)
    guard enrolled == 201 else { throw BenchError("enroll failed: \(String(decoding: enrollBody, as: UTF8.self))") }
    let basic = "Basic " + Data("\(appId):\(secret)".utf8).base64EncodedString()
    let (_, tokenData) = try await HTTP.call("POST", base + "/v1/access-tokens", headers: ["Authorization": basic])
    let token = HTTP.json(tokenData)["accessToken"] as? String ?? ""
    let client = ["Authorization": "Bearer \(token)", "X-Device-Id": "bench-device", "Content-Type": "image/jpeg"]
    let (_, first) = try await HTTP.call("POST", base + "/v1/face-login", headers: client, body: probe)
    if let confirmation = HTTP.json(first)["confirmationId"] as? String {
        _ = try await HTTP.call("POST", base + "/v1/face-login/confirm", headers: client.merging(["Content-Type": "application/json"]) { _, new in new },
                                body: Data(#"{"confirmationId":"\#(confirmation)","employeeNumber":"B1"}"#.utf8))
    }

    func pipelineSeconds() async throws -> (sum: Double, count: Double) {
        var sum = 0.0, count = 0.0
        for index in matchers.indices {
            let (_, metrics) = try await HTTP.call("GET", "http://127.0.0.1:\(19101 + index)/metrics")
            for line in String(decoding: metrics, as: UTF8.self).split(separator: "\n") {
                if line.hasPrefix("facegate_matcher_stage_seconds_sum") { sum += Double(line.split(separator: " ").last ?? "") ?? 0 }
                if line.hasPrefix("facegate_matcher_stage_seconds_count{stage=\"embed\"}") { count += Double(line.split(separator: " ").last ?? "") ?? 0 }
            }
        }
        return (sum, count)
    }

    func load(concurrency: Int) async throws -> (latencies: [Double], seconds: Double, failures: Int, pipelineMs: Double) {
        let before = try await pipelineSeconds()
        let started = ContinuousClock.now
        let results = try await withThrowingTaskGroup(of: [(Double, Bool)].self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    var local: [(Double, Bool)] = []
                    for _ in stride(from: worker, to: requests, by: concurrency) {
                        let t0 = ContinuousClock.now
                        let (status, body) = try await HTTP.call("POST", base + "/v1/face-login", headers: client, body: probe)
                        local.append(((ContinuousClock.now - t0).milliseconds, status == 200 && HTTP.json(body)["status"] as? String == "SUCCESS"))
                    }
                    return local
                }
            }
            return try await group.reduce(into: [(Double, Bool)]()) { $0 += $1 }
        }
        let elapsed = (ContinuousClock.now - started).seconds
        let after = try await pipelineSeconds()
        let pipeline = (after.sum - before.sum) / max(1, after.count - before.count) * 1000
        return (results.map(\.0).sorted(), elapsed, results.filter { !$0.1 }.count, pipeline)
    }

    _ = try await load(concurrency: 1)  // warm-up
    // Latency with one client at a time: nothing queues, so "outside" is the path's own cost.
    let single = try await load(concurrency: 1)
    let singleMean = single.latencies.reduce(0, +) / Double(single.latencies.count)
    let latencyRow = String(format: "| %.0f | %.0f | %.0f | %.0f | %.1f (%.0f %%) |", Bench.percentile(single.latencies, 50),
                            Bench.percentile(single.latencies, 99), singleMean, single.pipelineMs, singleMean - single.pipelineMs,
                            (singleMean - single.pipelineMs) / singleMean * 100)
    // Throughput with two clients per replica.
    var rows: [String] = []
    var throughput: [Double] = []
    for replicas in [1, 2] {
        if matchers.count < replicas {
            try await startMatcher()
            try await Task.sleep(for: .seconds(12))  // the group rebalances onto the new member
            _ = try await load(concurrency: 2 * replicas)
        }
        let run = try await load(concurrency: 2 * replicas)
        throughput.append(Double(requests) / run.seconds)
        rows.append(String(format: "| %d | %d | %d | %d | %.2f | %.0f | %.0f |", replicas, 2 * replicas, requests, run.failures,
                           Double(requests) / run.seconds, Bench.percentile(run.latencies, 50), Bench.percentile(run.latencies, 99)))
    }

    // Thousands in flight: with no matcher, every face login waits for its deadline in the gateway.
    matchers.forEach { $0.stop() }
    let inflight = try await heldInFlight(base: base, token: token, gateway: gateway)

    try Bench.record("End-to-end face login (HTTP → gateway → broker → matcher → gateway)", """
    Face logins of obama2.jpg against a gallery holding obama.jpg on a confirmed device (each answer is an identity token), \(requests)
    per run. Release build, services as separate processes, matcher replicas with one face engine each, tansu broker and PostgreSQL,
    all on the same 2-core machine. "Pipeline" is the matcher's own decode + detect + embed + search time per job (from its metrics);
    "outside" is the mean end-to-end latency minus that: HTTP, gateway, broker both ways, PostgreSQL (module gate, brute-force
    counters, device binding, the audit row), JSON and base64 of the photo.

    One client at a time (latency):

    | p50 ms | p99 ms | mean ms | pipeline ms | outside ms (share) |
    | --- | --- | --- | --- | --- |
    \(latencyRow)

    Throughput, two clients per matcher replica:

    | matcher replicas | clients | requests | failures | logins/s | p50 ms | p99 ms |
    | --- | --- | --- | --- | --- | --- | --- |
    \(rows.joined(separator: "\n"))

    Throughput with 2 replicas / 1 replica: \(String(format: "%.2f", throughput[1] / throughput[0]))× — both replicas share the
    machine's 2 cores with the gateway, the broker, PostgreSQL and the load generator, so this shows that replicas share the work
    (no job is lost or duplicated), not how a second machine would scale.

    \(inflight)
    """)
}

/// Holds `connections` face-login requests open at once (no matcher running, so each waits for its
/// deadline) and samples the gateway's threads and memory while they wait.
private func heldInFlight(base: String, token: String, gateway: ServiceProcess) async throws -> String {
    let connections = 1000
    let script = FileManager.default.temporaryDirectory.appendingPathComponent("facegate-inflight.lua")
    let body = FileManager.default.temporaryDirectory.appendingPathComponent("facegate-inflight.jpg")
    // A minimal JPEG-looking body: the gateway checks the magic bytes, then waits for the (absent) matcher,
    // so what is measured is the cost of a waiting request, not of buffering photos.
    try Data([0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 0, count: 1020)).write(to: body)
    try """
    local f = io.open("\(body.path)", "rb"); local data = f:read("*all"); f:close()
    wrk.method = "POST"; wrk.body = data
    wrk.headers["Authorization"] = "Bearer \(token)"
    wrk.headers["X-Device-Id"] = "inflight"
    wrk.headers["Content-Type"] = "image/jpeg"
    """.write(to: script, atomically: true, encoding: .utf8)
    let idle = gateway.threadsAndRSS()
    let wrk = Process()
    wrk.executableURL = URL(fileURLWithPath: "/usr/bin/wrk")
    wrk.arguments = ["-t2", "-c\(connections)", "-d14s", "--timeout", "20s", "-s", script.path, base + "/v1/face-login"]
    let pipe = Pipe()
    wrk.standardOutput = pipe
    try wrk.run()
    try await Task.sleep(for: .seconds(6))
    let loaded = gateway.threadsAndRSS()
    // procfs files report no size: read them to the end rather than by their stated length.
    let table = FileHandle(forReadingAtPath: "/proc/\(gateway.pid)/net/tcp").map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) } ?? ""
    let established = table.split(separator: "\n")
        .filter { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first?.hasSuffix(":46A0") == true
                  && $0.split(separator: " ", omittingEmptySubsequences: true)[3] == "01" }.count
    wrk.waitForExit()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let summary = output.split(separator: "\n").filter { $0.contains("requests in") || $0.contains("Non-2xx") || $0.contains("Socket errors") }
        .map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "; ")
    return """
    Requests held in flight: wrk with \(connections) connections posting 1 KB face-login bodies while no matcher runs (each request
    waits in the gateway for its 10 s deadline, then answers 503 SERVICE_UNAVAILABLE). Gateway process idle: \(idle.threads) threads,
    \(idle.rssKB / 1024) MiB RSS; 6 s into the run, with \(established) client connections established on the gateway's port: \(loaded.threads) threads,
    \(loaded.rssKB / 1024) MiB RSS. wrk: \(summary).
    """
}
