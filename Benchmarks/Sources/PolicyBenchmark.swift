import Crypto
import Foundation
import JWT

/// What the trust policy costs a login: the same logins over HTTP against this release and against the release before the
/// policy (`FACEGATE_BASELINE_RELEASE_DIR`, its own database `FACEGATE_BASELINE_DATABASE_URL`, built and migrated by
/// scripts/bench.sh from `FACEGATE_BASELINE_COMMIT`), one request to each in turn, p50 each. The logins:
/// - face login on a bound DPoP key (1:1): the policy adds `amr` to the token;
/// - kiosk login of one photo (kiosk liveness off): before, any client naming a device; now a registered kiosk's DPoP proof
///   (signature, `jti` spent in PostgreSQL) and its registry row;
/// - a client's 1:1 verify of its own user: now also the device's bound users are read.
func runPolicyBenchmark(arguments: [String]) async throws {
    let rounds = Int(arguments.first ?? "") ?? 48
    let images = try Bench.environment("FACEGATE_TEST_IMAGES")
    let baseline = try Bench.environment("FACEGATE_BASELINE_RELEASE_DIR")
    let baselineDatabase = try Bench.environment("FACEGATE_BASELINE_DATABASE_URL")
    let baselineCommit = ProcessInfo.processInfo.environment["FACEGATE_BASELINE_COMMIT"] ?? "the baseline"
    let photo = try Data(contentsOf: URL(fileURLWithPath: images + "/obama2.jpg"))
    // No kiosk's rate gets in the way of the measurement.
    let quiet = ["FACEGATE_KIOSK_LOGIN_RATE": "100000", "FACEGATE_KIOSK_LOGIN_BURST": "100000"]
    let after = try await BenchStack.start(extra: quiet)
    defer { after.stop() }
    let before = try await BenchStack.start(binaries: baseline, databaseURL: baselineDatabase, port: 18180, adminPort: 19200, extra: quiet)
    defer { before.stop() }

    /// One stack's three logins, ready to send.
    struct Logins {
        var faceLogin: () async throws -> Double
        var kioskLogin: () async throws -> Double
        var verify: () async throws -> Double
    }

    func timed(_ stack: BenchStack, _ method: String, _ path: String, headers: [String: String], body: Data,
               accepted: @escaping ([String: Any]) -> Bool) async throws -> Double {
        let started = ContinuousClock.now
        let (status, answer) = try await HTTP.call(method, stack.base + path, headers: headers, body: body)
        let elapsed = (ContinuousClock.now - started).milliseconds
        guard status == 200, accepted(HTTP.json(answer)) else { throw BenchError("\(path) on \(stack.base): \(status) \(String(decoding: answer, as: UTF8.self))") }
        return elapsed
    }

    func logins(_ stack: BenchStack, registersKiosks: Bool) async throws -> Logins {
        // Face login on a bound key.
        let keyed = try await stack.app(binding: "dpop", gallery: images)
        let phone = P256PrivateKey()
        func signed(_ path: String, token: String, body: Data, type: String) throws -> [String: String] {
            ["Authorization": "Bearer \(token)", "Content-Type": type,
             "DPoP": try DPoP.proof(key: phone, method: "POST", url: stack.base + path, accessToken: token, body: Array(body))]
        }
        let (_, first) = try await HTTP.call("POST", stack.base + "/v1/face-login", headers: try signed("/v1/face-login", token: keyed.token, body: photo, type: "image/jpeg"),
                                             body: photo)
        guard let confirmation = HTTP.json(first)["confirmationId"] as? String else { throw BenchError("no confirmation: \(HTTP.json(first))") }
        let confirm = Data(#"{"confirmationId":"\#(confirmation)","employeeNumber":"B1"}"#.utf8)
        _ = try await timed(stack, "POST", "/v1/face-login/confirm", headers: try signed("/v1/face-login/confirm", token: keyed.token, body: confirm, type: "application/json"),
                            body: confirm) { $0["status"] as? String == "SUCCESS" }

        // Kiosk login: a header-mode app with kiosk liveness off, one photo as the selfie.
        let kioskApp = try await stack.app(binding: "header", gallery: images, kiosk: true)
        let kioskKey = P256PrivateKey()
        if registersKiosks {
            let (status, answer) = try await HTTP.call("POST", stack.base + "/v1/apps/\(kioskApp.id)/kiosks",
                                                       headers: ["Authorization": "Bearer \(stack.adminKey)", "Content-Type": "application/json"],
                                                       body: Data(#"{"name":"bench kiosk","jkt":"\#(DPoP.thumbprint(of: kioskKey.publicKey))"}"#.utf8))
            guard status == 201 else { throw BenchError("kiosk not registered: \(String(decoding: answer, as: UTF8.self))") }
        }
        let boundary = "bench-boundary"
        var frames = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"frame\"; filename=\"f.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n".utf8)
        frames += photo + Data("\r\n--\(boundary)--\r\n".utf8)
        let framesType = "multipart/form-data; boundary=\(boundary)"

        // Verify: a header-mode phone bound to B1 by a confirmed login.
        let plain = try await stack.app(binding: "header", gallery: images)
        let header = ["Authorization": "Bearer \(plain.token)", "X-Device-Id": "bench-verifier"]
        let (_, pending) = try await HTTP.call("POST", stack.base + "/v1/face-login", headers: header.merging(["Content-Type": "image/jpeg"]) { $1 }, body: photo)
        guard let bindId = HTTP.json(pending)["confirmationId"] as? String else { throw BenchError("no confirmation: \(HTTP.json(pending))") }
        let bind = Data(#"{"confirmationId":"\#(bindId)","employeeNumber":"B1"}"#.utf8)
        _ = try await timed(stack, "POST", "/v1/face-login/confirm", headers: header.merging(["Content-Type": "application/json"]) { $1 }, body: bind) {
            $0["status"] as? String == "SUCCESS"
        }

        return Logins(
            faceLogin: {
                try await timed(stack, "POST", "/v1/face-login", headers: try signed("/v1/face-login", token: keyed.token, body: photo, type: "image/jpeg"),
                                body: photo) { $0["status"] as? String == "SUCCESS" }
            },
            kioskLogin: {
                var headers = ["Authorization": "Bearer \(kioskApp.token)", "Content-Type": framesType, "X-Device-Id": "bench-kiosk"]
                if registersKiosks {
                    headers["DPoP"] = try DPoP.proof(key: kioskKey, method: "POST", url: stack.base + "/v1/kiosk/login", accessToken: kioskApp.token,
                                                     body: Array(frames))
                }
                return try await timed(stack, "POST", "/v1/kiosk/login", headers: headers, body: frames) { $0["success"] as? Bool == true }
            },
            verify: {
                try await timed(stack, "POST", "/v1/face-verify?employeeNumber=B1", headers: header.merging(["Content-Type": "image/jpeg"]) { $1 },
                                body: photo) { $0["match"] as? Bool == true }
            })
    }

    let old = try await logins(before, registersKiosks: false)
    let new = try await logins(after, registersKiosks: true)
    var samples: [String: (before: [Double], after: [Double])] = [:]
    let kinds: [(String, KeyPath<Logins, () async throws -> Double>)] = [
        ("face login, bound DPoP key (1:1)", \.faceLogin), ("kiosk login, one photo", \.kioskLogin), ("client 1:1 verify of its own user", \.verify),
    ]
    for round in 0..<(rounds + 4) {
        for (name, login) in kinds {
            // Alternated, the order switching each round; the first four rounds warm both stacks up.
            let pair = round % 2 == 0 ? [(true, old), (false, new)] : [(false, new), (true, old)]
            for (isBefore, stack) in pair {
                let milliseconds = try await stack[keyPath: login]()
                guard round >= 4 else { continue }
                if isBefore { samples[name, default: ([], [])].before.append(milliseconds) } else { samples[name, default: ([], [])].after.append(milliseconds) }
            }
        }
    }
    var rows: [String] = []
    for (name, _) in kinds {
        let (b, a) = samples[name]!
        let p50Before = Bench.percentile(b.sorted(), 50), p50After = Bench.percentile(a.sorted(), 50)
        rows.append(String(format: "| %@ | %d | %.1f | %.1f | %+.1f | %.2f× |", name, b.count, p50Before, p50After, p50After - p50Before, p50After / p50Before))
    }
    try Bench.record("Trust policy: its cost per login (`facegate-bench policy`)", """
    The same logins over HTTP, one client, against this release and against \(baselineCommit) (the release before the trust
    policy), each a gateway and one matcher in release builds on the same broker and PostgreSQL (databases of their own),
    requests to the two in turn (the order switching each round, after four rounds of warm-up). Kiosk logins: before, any
    client naming a device; now a registered kiosk's DPoP proof over the photo (checked, its `jti` spent in PostgreSQL)
    and its registry row. Verify: now also the device's bound users are read. Face login on a bound key: the policy adds
    `amr` to the token. The photo is obama2.jpg (\(photo.count / 1024) KB), the gallery the test photos' people.

    | login | requests each | p50 before ms | p50 after ms | difference ms | after / before |
    | --- | --- | --- | --- | --- | --- |
    \(rows.joined(separator: "\n"))
    """)
}
