import FaceGateCore
import FaceGateTestSupport
import Foundation
import PostgresClient
import ServiceKit

/// Whole kiosk flows over HTTP against release-mode processes (gateway, one matcher engine, the
/// orchestrator with one OCR engine): per step latency of an onboarding (challenge, session, selfie with
/// liveness, ID front, ID back with OCR + face match + approval), of a returning customer's selfie and
/// of a kiosk login. The customer is deleted after each onboarding so the next run is unknown again.
func runKioskFlowBenchmark(arguments: [String]) async throws {
    let runs = Int(arguments.first ?? "") ?? 8
    let binaries = ProcessInfo.processInfo.environment["FACEGATE_RELEASE_DIR"] ?? ".build/release"
    let adminKey = "fgk_bench_" + UUID().uuidString.lowercased()
    let pool = PostgresPool(configuration: try PostgresConfiguration(url: try Bench.environment("FACEGATE_DATABASE_URL")))
    try await ServiceRuntime.migrate(pool)
    await pool.close()
    let env = [
        "FACEGATE_TOPIC_PREFIX": "bench\(UUID().uuidString.prefix(6).lowercased()).", "FACEGATE_ADMIN_KEY": adminKey,
        "FACEGATE_LOG_LEVEL": "warning", "FACEGATE_HTTP_PORT": "18080", "MATCHER_ENGINES": "1", "KIOSK_OCR_ENGINES": "1",
    ]
    let base = "http://127.0.0.1:18080"
    var processes: [ServiceProcess] = []
    defer { processes.forEach { $0.stop() } }
    for (index, name) in ["auth-gateway", "matcher-worker", "kiosk-orchestrator"].enumerated() {
        let port = 19100 + index
        processes.append(try ServiceProcess(binaries + "/" + name, name: name, environment: env.merging(["FACEGATE_ADMIN_PORT": String(port)]) { $1 }))
        try await HTTP.waitUntilOK("http://127.0.0.1:\(port)/readyz", timeout: .seconds(120))
    }

    let admin = ["Authorization": "Bearer \(adminKey)", "Content-Type": "application/json"]
    let (_, appData) = try await HTTP.call("POST", base + "/v1/apps", headers: admin,
                                           body: Data(#"{"name":"kiosk bench","deviceBinding":"header","modules":{"kiosk":"formal"}}"#.utf8))
    let app = HTTP.json(appData)
    guard let appId = app["appId"] as? String, let secret = app["appSecret"] as? String else { throw BenchError("no app: \(app)") }
    let basic = "Basic " + Data("\(appId):\(secret)".utf8).base64EncodedString()
    let (_, tokenData) = try await HTTP.call("POST", base + "/v1/access-tokens", headers: ["Authorization": basic])
    let client = ["Authorization": "Bearer \(HTTP.json(tokenData)["accessToken"] as? String ?? "")", "X-Device-Id": "bench-kiosk"]

    let card = IDCard.td1(documentNumber: "L898902C3", surname: "OBAMA", givenNames: "BARACK", nationality: "USA", birthDate: "1961-08-04",
                          sex: "M", expiryDate: "2034-01-20", portrait: try IDCard.testPhoto("obama2.jpg"))
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kiosk-bench-\(UUID().uuidString.prefix(6))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    try card.renderFront(to: directory.appendingPathComponent("front.jpg"))
    try card.renderBack(to: directory.appendingPathComponent("back.jpg"))
    let front = try Data(contentsOf: directory.appendingPathComponent("front.jpg"))
    let back = try Data(contentsOf: directory.appendingPathComponent("back.jpg"))
    let selfiePhoto = try IDCard.testPhoto("obama.jpg")
    let engine = try SyntheticFrames.defaultEngine()

    func multipart(_ frames: [Data], challengeId: String) -> (Data, String) {
        let boundary = "bench" + UUID().uuidString
        var body = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"challengeId\"\r\n\r\n\(challengeId)\r\n".utf8)
        for (index, frame) in frames.enumerated() {
            body += Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"frame\"; filename=\"f\(index).jpg\"\r\nContent-Type: image/jpeg\r\n\r\n".utf8)
            body += frame + Data("\r\n".utf8)
        }
        return (body + Data("--\(boundary)--\r\n".utf8), "multipart/form-data; boundary=\(boundary)")
    }
    /// A fresh challenge and a burst doing its actions (made before the clock starts).
    func challengeAndBurst() async throws -> (String, Data, String) {
        let (_, data) = try await HTTP.call("GET", base + "/v1/liveness/challenges", headers: client)
        let challenge = HTTP.json(data)
        let actions = (challenge["actions"] as? [String] ?? []).compactMap(LivenessAction.init(rawValue:))
        let frames = try SyntheticFrames.burst(photo: selfiePhoto, actions: actions, engine: engine, seed: .random(in: 1...1_000_000))
        let (body, type) = multipart(frames, challengeId: challenge["challengeId"] as? String ?? "")
        return (challenge["challengeId"] as? String ?? "", body, type)
    }
    func timed(_ method: String, _ path: String, headers: [String: String], body: Data?) async throws -> (Double, [String: Any]) {
        let started = ContinuousClock.now
        let (status, data) = try await HTTP.call(method, base + path, headers: headers, body: body)
        let ms = (ContinuousClock.now - started).milliseconds
        guard (200..<300).contains(status) else { throw BenchError("\(path): \(status) \(String(decoding: data, as: UTF8.self))") }
        return (ms, HTTP.json(data))
    }

    var steps: [String: [Double]] = [:]
    var completed = 0
    for _ in 0..<runs {
        let (created, session) = try await timed("POST", "/v1/kiosk/sessions", headers: client, body: nil)
        steps["create session", default: []].append(created)
        guard let id = session["interviewId"] as? String, let token = session["interviewToken"] as? String else { throw BenchError("no session") }
        let step = client.merging(["X-Interview-Token": token]) { $1 }
        let (_, body, type) = try await challengeAndBurst()
        let (selfieMs, _) = try await timed("POST", "/v1/kiosk/sessions/\(id)/selfie", headers: step.merging(["Content-Type": type]) { $1 }, body: body)
        steps["selfie (liveness + 1:N)", default: []].append(selfieMs)
        let (frontMs, _) = try await timed("POST", "/v1/kiosk/sessions/\(id)/id-front", headers: step.merging(["Content-Type": "image/jpeg"]) { $1 }, body: front)
        steps["id front (portrait template)", default: []].append(frontMs)
        let (backMs, result) = try await timed("POST", "/v1/kiosk/sessions/\(id)/id-back", headers: step.merging(["Content-Type": "image/jpeg"]) { $1 }, body: back)
        steps["id back (OCR, face match, approval)", default: []].append(backMs)
        guard let customer = (result["result"] as? [String: Any])?["customerUUID"] as? String else {
            throw BenchError("onboarding did not complete: \(result)")
        }
        completed += 1
        steps["onboarding, all steps", default: []].append(created + selfieMs + frontMs + backMs)

        // The returning customer, then a kiosk login; then the customer is erased for the next run.
        let (_, visit) = try await timed("POST", "/v1/kiosk/sessions", headers: client, body: nil)
        let visitStep = client.merging(["X-Interview-Token": visit["interviewToken"] as? String ?? ""]) { $1 }
        let (_, again, againType) = try await challengeAndBurst()
        let (knownMs, _) = try await timed("POST", "/v1/kiosk/sessions/\(visit["interviewId"] as? String ?? "")/selfie",
                                           headers: visitStep.merging(["Content-Type": againType]) { $1 }, body: again)
        steps["returning customer selfie", default: []].append(knownMs)
        let (_, login, loginType) = try await challengeAndBurst()
        let (loginMs, _) = try await timed("POST", "/v1/kiosk/login", headers: client.merging(["Content-Type": loginType]) { $1 }, body: login)
        steps["kiosk login", default: []].append(loginMs)
        _ = try await HTTP.call("DELETE", base + "/v1/apps/\(appId)/users/\(customer)", headers: admin)
        try await Task.sleep(for: .milliseconds(500))
    }

    var table = "| step | p50 ms | p90 ms | max ms |\n| --- | ---: | ---: | ---: |\n"
    for name in ["create session", "selfie (liveness + 1:N)", "id front (portrait template)", "id back (OCR, face match, approval)",
                 "onboarding, all steps", "returning customer selfie", "kiosk login"] {
        let sorted = (steps[name] ?? []).sorted()
        guard !sorted.isEmpty else { continue }
        table += String(format: "| %@ | %.0f | %.0f | %.0f |\n", name, Bench.percentile(sorted, 50), Bench.percentile(sorted, 90), sorted.last!)
    }
    let body = """
        \(runs) onboardings of the same face (erased after each), \(completed) completed; release build; gateway, one matcher
        engine, the orchestrator with one OCR engine, broker and PostgreSQL on this machine. Selfie bursts are made before each
        call (not timed). Load average at the end: \(Bench.loadAverage()).

        \(table)
        """
    print(body)
    try Bench.record("Kiosk flow latency per step", body)
}
