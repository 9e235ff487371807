import FaceEngine
import Foundation

/// `facegate-bench login-peer [ROUNDS] [REQUESTS] [ENGINES]`: face login of one photo over HTTP through the whole stack (SFace app,
/// header mode, one client; ENGINES defaults to the matcher's own default, one per core) beside the same photo through the
/// same two ONNX models in Python in-process (`peers/sface_pipeline_peer.py`: opencv-python's FaceDetectorYN +
/// FaceRecognizerSF, one thread), and FaceEngine in this process on one thread (equal terms) and alone on every core (as
/// the matcher runs a lone login). Rounds alternate; the ratios are taken per round, then their medians.
func runLoginPeerBenchmark(arguments: [String]) async throws {
    let rounds = Int(arguments.first ?? "") ?? 7
    let requests = Int(arguments.dropFirst().first ?? "") ?? 24
    let engines = Int(arguments.dropFirst(2).first ?? "") ?? ProcessInfo.processInfo.activeProcessorCount
    let environment = ProcessInfo.processInfo.environment
    let images = try Bench.environment("FACEGATE_TEST_IMAGES")
    let models = try Bench.environment("FACEGATE_MODEL_DIR")
    let peerPython = environment["FACEGATE_PEER_PYTHON"] ?? ".run/peer-venv/bin/python"
    let peerScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("peers/sface_pipeline_peer.py").path
    let photoPath = images + "/obama2.jpg"
    let probe = try Data(contentsOf: URL(fileURLWithPath: photoPath))

    let stack = try await BenchStack.start(matcherEngines: engines)
    defer { stack.stop() }
    let app = try await stack.app(binding: "header", gallery: images)
    let url = stack.base + "/v1/face-login"
    let client = ["Authorization": "Bearer \(app.token)", "X-Device-Id": "bench-phone", "Content-Type": "image/jpeg"]
    let (_, first) = try await HTTP.call("POST", url, headers: client, body: probe)
    guard let confirmation = HTTP.json(first)["confirmationId"] as? String else { throw BenchError("no confirmation: \(HTTP.json(first))") }
    let (bound, boundAnswer) = try await HTTP.call("POST", url + "/confirm", headers: client.merging(["Content-Type": "application/json"]) { $1 },
                                                   body: Data(#"{"confirmationId":"\#(confirmation)","employeeNumber":"B1"}"#.utf8))
    guard bound == 200 else { throw BenchError("binding failed: \(String(decoding: boundAnswer, as: UTF8.self))") }

    /// The matcher's own decode + detect + embed + search seconds so far, and its jobs.
    func pipeline() async throws -> (seconds: Double, jobs: Double) {
        let (_, metrics) = try await HTTP.call("GET", "http://127.0.0.1:19101/metrics")
        var seconds = 0.0, jobs = 0.0
        for line in String(decoding: metrics, as: UTF8.self).split(separator: "\n") {
            let value = Double(line.split(separator: " ").last ?? "") ?? 0
            if line.hasPrefix("facegate_matcher_stage_seconds_sum") { seconds += value }
            if line.hasPrefix("facegate_matcher_stage_seconds_count{stage=\"embed\"}") { jobs += value }
        }
        return (seconds, jobs)
    }
    /// p50 of `requests` logins one after another, and the matcher's mean pipeline time per login in them.
    func logins() async throws -> (p50: Double, pipelineMs: Double) {
        let before = try await pipeline()
        var latencies: [Double] = []
        for _ in 0..<requests {
            let started = ContinuousClock.now
            let (status, answer) = try await HTTP.call("POST", url, headers: client, body: probe)
            guard status == 200, HTTP.json(answer)["status"] as? String == "SUCCESS" else {
                throw BenchError("login failed: \(status) \(String(decoding: answer, as: UTF8.self))")
            }
            latencies.append((ContinuousClock.now - started).milliseconds)
        }
        let after = try await pipeline()
        return (Bench.percentile(latencies.sorted(), 50), (after.seconds - before.seconds) / max(1, after.jobs - before.jobs) * 1000)
    }

    // The same pipeline in this process: on one thread (the peer's terms), and alone on every core (the matcher's
    // setting for a lone login).
    var configuration = FaceEngineConfiguration(modelDirectory: models)
    configuration.model = .sface2021dec
    let engine = try FaceEngine(configuration: configuration)
    let bytes = Array(probe)
    func inProcess(threads: Int?) throws -> Double {
        FaceEngine.setLoneAnalysisThreads(threads)
        _ = try engine.analyze(bytes)
        var times: [Double] = []
        for _ in 0..<requests {
            let started = ContinuousClock.now
            _ = try engine.analyze(bytes)
            times.append((ContinuousClock.now - started).milliseconds)
        }
        return Bench.percentile(times.sorted(), 50)
    }
    let peer = try PeerServer(python: peerPython, script: peerScript, arguments: ["serve", models])
    defer { peer.stop() }
    let peerInfo = (try? JSONSerialization.jsonObject(with: Data(peer.readyLine.utf8))) as? [String: Any] ?? [:]
    _ = try await logins()  // warm-up: connections, the matcher's first runs
    var rows: [String] = []
    var ratios: [Double] = [], engineRatios: [Double] = []
    let loadBefore = Bench.loadAverage()
    for round in 1...rounds {
        let http = try await logins()
        let python = try peer.time(variant: "matched", repetitions: requests, path: photoPath)
        let oneThread = try inProcess(threads: 1)
        let everyCore = try inProcess(threads: nil)
        ratios.append(http.p50 / python.totalMs)
        engineRatios.append(oneThread / python.totalMs)
        rows.append(String(format: "| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f |", round, http.p50, http.pipelineMs,
                           http.p50 - http.pipelineMs, python.totalMs, oneThread, everyCore, http.p50 / python.totalMs, oneThread / python.totalMs))
    }
    let median = Bench.percentile(ratios.sorted(), 50), engineMedian = Bench.percentile(engineRatios.sorted(), 50)
    let cores = ProcessInfo.processInfo.activeProcessorCount

    try Bench.record("Face login over HTTP vs the same models in Python in-process (`facegate-bench login-peer`)", """
    obama2.jpg (626×1200, \(probe.count / 1024) KB) logs in as the user enrolled with obama.jpg, on a device bound to that user, in an
    SFace app in header mode (1:N search of a \(app.gallerySize)-user gallery); one client, one request at a time, \(requests) logins per
    round, each answered with an identity token. Release build: gateway + one matcher + broker + PostgreSQL, all on
    this \(cores)-core machine. The matcher runs `MATCHER_ENGINES=\(engines)` and its default thread gate: a login that runs alone uses
    every core, logins at once one each (`FaceEngine.setLoneAnalysisThreads`). "Pipeline" is the matcher's decode + detect + embed + search time per login, from its metrics; "outside"
    is p50 minus that (HTTP, gateway, broker both ways, PostgreSQL: module gate, throttling, device binding, the audit row).

    Peer: the same photo through the same two ONNX files in Python in one process (`peers/sface_pipeline_peer.py matched`:
    cv2.imdecode, FaceDetectorYN on a copy ≤ 1024 px, alignCrop + feature of the largest face; opencv-python
    \(peerInfo["opencv"] as? String ?? "?"), \(peerInfo["threads"] as? Int ?? -1) thread), median of \(requests) runs after one untimed run;
    no search, no HTTP, no token. "FaceEngine in-process" is the same for FaceEngine's SFace pipeline in the benchmark's own
    process, on one thread (the peer's terms) and alone on all \(cores) cores. Rounds alternate HTTP, Python, FaceEngine, HTTP, …

    | round | HTTP login p50 ms | pipeline ms | outside ms | Python in-process ms | FaceEngine in-process ms, 1 thread | FaceEngine in-process ms, \(cores) threads | HTTP / Python | FaceEngine 1 thread / Python |
    | --- | --- | --- | --- | --- | --- | --- | --- | --- |
    \(rows.joined(separator: "\n"))

    Median ratios over \(rounds) rounds: HTTP login / Python **\(String(format: "%.2f", median))×**, FaceEngine on one thread / Python
    **\(String(format: "%.2f", engineMedian))×** (goals ≤ 1.0). Load average before \(loadBefore), after \(Bench.loadAverage()).
    """)
}
