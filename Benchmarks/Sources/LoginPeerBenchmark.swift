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

    /// Seconds spent so far in each hop a login crosses, from the gateway's and the matcher's metrics.
    struct Hops {
        var logins = 0.0, gateway = 0.0, jobRoundTrip = 0.0, database = 0.0, matcherJob = 0.0, pipeline = 0.0

        /// Per login, in ms, since `start`.
        func perLogin(since start: Hops) -> Hops {
            let logins = self.logins - start.logins, scale = 1000 / max(1, logins)
            return Hops(logins: logins, gateway: (gateway - start.gateway) * scale, jobRoundTrip: (jobRoundTrip - start.jobRoundTrip) * scale,
                        database: (database - start.database) * scale, matcherJob: (matcherJob - start.matcherJob) * scale,
                        pipeline: (pipeline - start.pipeline) * scale)
        }
    }
    func hops() async throws -> Hops {
        func value(_ name: String, _ process: Int) async throws -> Double { try await stack.metric(name, process: process) ?? 0 }
        return Hops(logins: try await value("facegate_http_request_seconds_count{route=\"/v1/face-login\"}", 0),
                    gateway: try await value("facegate_http_request_seconds_sum{route=\"/v1/face-login\"}", 0),
                    jobRoundTrip: try await value("facegate_face_job_round_trip_seconds_sum", 0),
                    database: try await value("facegate_db_round_trip_seconds_total", 0),
                    matcherJob: try await value("facegate_job_seconds_sum", 1),
                    pipeline: try await value("facegate_matcher_stage_seconds_sum", 1))
    }
    /// p50 and mean of `requests` logins one after another, and the mean milliseconds per login of each hop in them.
    func logins() async throws -> (p50: Double, mean: Double, hops: Hops) {
        let before = try await hops()
        var latencies: [Double] = []
        for _ in 0..<requests {
            let started = ContinuousClock.now
            let (status, answer) = try await HTTP.call("POST", url, headers: client, body: probe)
            guard status == 200, HTTP.json(answer)["status"] as? String == "SUCCESS" else {
                throw BenchError("login failed: \(status) \(String(decoding: answer, as: UTF8.self))")
            }
            latencies.append((ContinuousClock.now - started).milliseconds)
        }
        return (Bench.percentile(latencies.sorted(), 50), latencies.reduce(0, +) / Double(latencies.count),
                try await hops().perLogin(since: before))
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
    var rows: [String] = [], hopRows: [String] = []
    var ratios: [Double] = [], engineRatios: [Double] = []
    let loadBefore = Bench.loadAverage()
    for round in 1...rounds {
        let http = try await logins()
        let python = try peer.time(variant: "matched", repetitions: requests, path: photoPath)
        let oneThread = try inProcess(threads: 1)
        let everyCore = try inProcess(threads: nil)
        ratios.append(http.p50 / python.totalMs)
        engineRatios.append(oneThread / python.totalMs)
        let hop = http.hops
        rows.append(String(format: "| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f |", round, http.p50, hop.pipeline,
                           http.p50 - hop.pipeline, python.totalMs, oneThread, everyCore, http.p50 / python.totalMs, oneThread / python.totalMs))
        hopRows.append(String(format: "| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |", round, http.mean, http.mean - hop.gateway,
                              hop.gateway - hop.jobRoundTrip - hop.database, hop.database, hop.jobRoundTrip - hop.matcherJob,
                              hop.matcherJob - hop.pipeline, hop.pipeline, http.mean - hop.pipeline))
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

    Where a login's time goes, per hop (means over each round's logins, ms, from the services' metrics): *client ↔ gateway*
    is the benchmark's HTTP call minus the gateway's own request time (`facegate_http_request_seconds`: loopback TCP, the
    HTTP client and server before and after the route runs); *gateway* is its request time minus its PostgreSQL round trips
    (`facegate_db_round_trip_seconds_total`) and the job's round trip (`facegate_face_job_round_trip_seconds`): token checks,
    JSON, sealing the job and opening the reply, signing the identity token; *broker both ways* is that round trip minus the
    matcher's handling of the job (`facegate_job_seconds`): the job's hop through the broker, the reply's fetch and the
    consumers' waits; *matcher outside the pipeline* is that handling minus its pipeline stages (opening the job, sealing the
    reply and waiting for the broker to acknowledge it, which overlaps the reply's way to the gateway).

    | round | login mean | client ↔ gateway | gateway | PostgreSQL | broker both ways | matcher outside the pipeline | pipeline | outside the pipeline |
    | --- | --- | --- | --- | --- | --- | --- | --- | --- |
    \(hopRows.joined(separator: "\n"))
    """)
}
