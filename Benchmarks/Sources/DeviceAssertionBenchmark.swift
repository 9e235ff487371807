import Crypto
import Foundation
import PostgresClient
import ServiceKit

/// Device-credential logins over HTTP against an auth-gateway process: each round trip is
/// `POST /v1/device-credentials/challenges` then a P-256 signature on the client and
/// `POST /v1/device-credentials/assertions` (challenge spent, signature verified, counter advanced, identity
/// token signed, two transactions appended to the hash chain). No matcher is involved.
/// Arguments: `[round trips per run] [client counts, comma-separated]` (defaults 400 and 1,4).
func runDeviceAssertionBenchmark(arguments: [String]) async throws {
    let roundTrips = Int(arguments.first ?? "") ?? 400
    let clientCounts = (arguments.dropFirst().first ?? "1,4").split(separator: ",").compactMap { Int($0) }
    let binaries = ProcessInfo.processInfo.environment["FACEGATE_RELEASE_DIR"] ?? ".build/release"
    let adminKey = "fgk_bench_" + UUID().uuidString.lowercased()
    let pool = PostgresPool(configuration: try PostgresConfiguration(url: try Bench.environment("FACEGATE_DATABASE_URL")))
    try await ServiceRuntime.migrate(pool)
    await pool.close()

    let env = [
        "FACEGATE_TOPIC_PREFIX": "bench\(UUID().uuidString.prefix(6).lowercased()).", "FACEGATE_ADMIN_KEY": adminKey,
        "FACEGATE_LOG_LEVEL": "warning", "FACEGATE_HTTP_PORT": "18090", "FACEGATE_ADMIN_PORT": "19110",
    ]
    let base = "http://127.0.0.1:18090"
    let gateway = try ServiceProcess(binaries + "/auth-gateway", name: "gateway-device", environment: env)
    defer { gateway.stop() }
    try await HTTP.waitUntilOK("http://127.0.0.1:19110/readyz", timeout: .seconds(60))

    let admin = ["Authorization": "Bearer \(adminKey)", "Content-Type": "application/json"]
    let (_, appData) = try await HTTP.call("POST", base + "/v1/apps", headers: admin,
                                           body: Data(#"{"name":"bench-device","deviceBinding":"header","modules":{"deviceAuth":"formal"}}"#.utf8))
    let app = HTTP.json(appData)
    guard let appId = app["appId"] as? String, let secret = app["appSecret"] as? String else { throw BenchError("no app: \(app)") }
    let (_, userData) = try await HTTP.call("POST", base + "/v1/apps/\(appId)/users", headers: admin,
                                            body: Data(#"{"employeeNumber":"DB1","name":"Bench"}"#.utf8))
    guard let userId = HTTP.json(userData)["userId"] as? String else { throw BenchError("no user") }
    let basic = "Basic " + Data("\(appId):\(secret)".utf8).base64EncodedString()
    let (_, tokenData) = try await HTTP.call("POST", base + "/v1/access-tokens", headers: ["Authorization": basic])
    guard let token = HTTP.json(tokenData)["accessToken"] as? String else { throw BenchError("no access token") }

    /// One device per concurrent client: each keeps its own counter, as real devices do.
    struct BenchDevice: Sendable {
        var id: String
        var key: P256PrivateKey
        var credentialId: String
    }
    var devices: [BenchDevice] = []
    for index in 0..<(clientCounts.max() ?? 1) {
        let key = P256PrivateKey()
        let deviceId = "bench-device-\(index)"
        let body = try JSONSerialization.data(withJSONObject: ["deviceId": deviceId, "policy": "biometryCurrentSet",
                                                               "publicKey": Data(key.publicKey.spkiDER).base64EncodedString()])
        let (status, data) = try await HTTP.call("POST", base + "/v1/apps/\(appId)/users/\(userId)/device-credentials", headers: admin, body: body)
        guard status == 201, let credentialId = HTTP.json(data)["credentialId"] as? String else {
            throw BenchError("credential not registered: \(status) \(String(decoding: data, as: UTF8.self))")
        }
        devices.append(BenchDevice(id: deviceId, key: key, credentialId: credentialId))
    }

    /// Counters only go up: each run continues from where the previous one stopped.
    var nextCounter = 0
    let registered = devices
    func load(clients: Int, count: Int) async throws -> (latencies: [Double], seconds: Double, failures: Int) {
        let start = nextCounter
        nextCounter += count + 1
        let started = ContinuousClock.now
        let results = try await withThrowingTaskGroup(of: [(Double, Bool)].self) { group in
            for worker in 0..<clients {
                let device = registered[worker]
                group.addTask {
                    var local: [(Double, Bool)] = []
                    let headers = ["Authorization": "Bearer \(token)", "X-Device-Id": device.id, "Content-Type": "application/json"]
                    for index in stride(from: worker, to: count, by: clients) {
                        let t0 = ContinuousClock.now
                        let (_, challengeData) = try await HTTP.call("POST", base + "/v1/device-credentials/challenges", headers: headers,
                                                                     body: Data(#"{"credentialId":"\#(device.credentialId)"}"#.utf8))
                        guard let challenge = HTTP.json(challengeData)["challenge"] as? String else {
                            local.append(((ContinuousClock.now - t0).milliseconds, false))
                            continue
                        }
                        let counter = start + index + 1
                        let message = "facegate.device-assertion.v1\n\(appId)\n\(device.id)\n\(device.credentialId)\n\(challenge)\n\(counter)"
                        let signature = Data(try device.key.signature(for: Array(message.utf8))).base64EncodedString()
                        let body = try JSONSerialization.data(withJSONObject: ["credentialId": device.credentialId, "challenge": challenge,
                                                                               "counter": counter, "signature": signature])
                        let (status, data) = try await HTTP.call("POST", base + "/v1/device-credentials/assertions", headers: headers, body: body)
                        local.append(((ContinuousClock.now - t0).milliseconds, status == 200 && HTTP.json(data)["status"] as? String == "SUCCESS"))
                    }
                    return local
                }
            }
            return try await group.reduce(into: [(Double, Bool)]()) { $0 += $1 }
        }
        return (results.map(\.0).sorted(), (ContinuousClock.now - started).seconds, results.filter { !$0.1 }.count)
    }

    _ = try await load(clients: clientCounts.max() ?? 1, count: 40)  // warm-up: connections, pools, caches
    var rows: [String] = []
    for clients in clientCounts {
        let run = try await load(clients: clients, count: roundTrips)
        rows.append(String(format: "| %d | %d | %d | %.1f | %.1f | %.1f |", clients, roundTrips, run.failures,
                           Double(roundTrips) / run.seconds, Bench.percentile(run.latencies, 50), Bench.percentile(run.latencies, 99)))
    }
    try Bench.record("Device credential login (challenge + assertion over HTTP)", """
    Round trips of `POST /v1/device-credentials/challenges` + client-side P-256 signature + `POST /v1/device-credentials/assertions`
    against one auth-gateway process (binaries from `\(binaries)`), PostgreSQL and the broker on the same machine; one device
    credential per concurrent client. Each round trip writes two hash-chained transactions and returns an identity token.
    Load average at the end: \(Bench.loadAverage()).

    | clients | round trips | failures | round trips/s | p50 ms | p99 ms |
    | --- | --- | --- | --- | --- | --- |
    \(rows.joined(separator: "\n"))
    """)
}
