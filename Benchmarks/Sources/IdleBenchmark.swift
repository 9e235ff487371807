import Foundation

/// `facegate-bench idle [SECONDS]`
///
/// What the whole stack costs while nobody calls it, with the job consumers' idle partitions paused until the job
/// doorbell rings (`FACEGATE_KAFKA_JOB_PAUSE_MS` 2000, as `make run`) and fetched always (0), runs alternating: the four
/// services, the broker and PostgreSQL, as % of one core over SECONDS (20) of idleness after some logins; and what it
/// costs a login: the p50 of logins back to back, and of the first login after 3 s of idleness (when the partitions
/// are paused). The requesters' reply partitions are paused while idle in both (`FACEGATE_KAFKA_REPLY_PAUSE_MS` 2000).
func runIdleBenchmark(arguments: [String]) async throws {
    let seconds = Double(arguments.first ?? "") ?? 20
    let images = try Bench.environment("FACEGATE_TEST_IMAGES")
    let probe = try Data(contentsOf: URL(fileURLWithPath: images + "/obama2.jpg"))
    let shared = ProcessCPU.testStackServers()

    var rows: [String] = []
    var columns: [String] = []
    for round in 1...2 {
        for pause in [2000, 0] {
            let stack = try await BenchStack.start(extra: ["FACEGATE_KAFKA_JOB_PAUSE_MS": String(pause), "FACEGATE_KAFKA_REPLY_PAUSE_MS": "2000"],
                                                   workers: true)
            defer { stack.stop() }
            let app = try await stack.app(binding: "header", gallery: images)
            let phones = BenchPhones(base: stack.base)
            try await phones.bind(app, phone: 0, photo: probe, number: "B1")
            let busy = try await phones.load(app, concurrency: 1, requests: 12, photo: probe)
            try await Task.sleep(for: .seconds(5))
            let measured = stack.processes.map { process in (name: process.name.components(separatedBy: "-")[0], cpu: { ProcessCPU.milliseconds(process.pid) }) }
                + shared
            let before = measured.map { $0.cpu() }
            try await Task.sleep(for: .seconds(seconds))
            let percent = zip(measured, before).map { ($0.cpu() - $1) / (seconds * 1000) * 100 }
            var afterIdle: [Double] = []
            for _ in 0..<6 {
                try await Task.sleep(for: .seconds(3))
                afterIdle += try await phones.load(app, concurrency: 1, requests: 1, photo: probe).latencies
            }
            columns = measured.map(\.name)
            rows.append("| \(pause == 0 ? "always fetched (0)" : "paused after \(pause) ms idle") | \(round) | "
                + percent.map { String(format: "%.1f", $0) }.joined(separator: " | ")
                + String(format: " | %.1f | %.0f | %.0f |", percent.reduce(0, +), Bench.percentile(busy.latencies, 50),
                         Bench.percentile(afterIdle.sorted(), 50)))
            print(rows.last!)
        }
    }
    let environment = ProcessInfo.processInfo.environment
    let wait = environment["FACEGATE_KAFKA_FETCH_WAIT_MS"] ?? "500"
    try Bench.record("Idle cost of the whole stack (`facegate-bench idle`)", """
    The four services (release build, one matcher engine), the local broker (tansu, `FACEGATE_KAFKA_FETCH_WAIT_MS` \
    \(wait), `FACEGATE_KAFKA_REPLY_FETCH_WAIT_MS` \(environment["FACEGATE_KAFKA_REPLY_FETCH_WAIT_MS"] ?? wait)) and PostgreSQL, idle for \
    \(Int(seconds)) s after 12 face logins, as % of one core (user + system time from /proc); then logins of obama2.jpg \
    (header mode, 1:N over a 2-user gallery): p50 of the 12 back to back before, and of 6 each after 3 s of idleness. The \
    job consumers (matcher, ctid-verifier, kiosk-orchestrator) stop fetching after `FACEGATE_KAFKA_JOB_PAUSE_MS` without \
    a job until the job doorbell (a PostgreSQL NOTIFY from the requester) names their partition, or fetch always (0); the \
    requesters' reply partitions are paused after 2000 ms without a request in both. Settings alternate, each on a \
    fresh stack.

    | job partitions | round | \(columns.joined(separator: " | ")) | all, % of a core | login p50 ms, back to back | first login after 3 s idle, p50 ms |
    | --- | --- | \(columns.map { _ in "---" }.joined(separator: " | ")) | --- | --- | --- |
    \(rows.joined(separator: "\n"))
    """)
}
