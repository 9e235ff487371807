import Foundation

/// Face login throughput on this machine and where its CPU goes: logins/s, p50/p99 and CPU-ms per login of every process
/// on the path (gateway, matcher, broker, PostgreSQL with its backends, the load generator itself) at 1, 4 and 8 clients,
/// header mode (1:N search) and DPoP-bound keys (1:1 with the key's user), runs alternating. With
/// `FACEGATE_BASELINE_RELEASE_DIR` (scripts/bench.sh builds it), the same rows against that release too, in turn.
func runThroughputBenchmark(arguments: [String]) async throws {
    let requests = Int(arguments.first ?? "") ?? 96
    let engines = Int(arguments.dropFirst().first ?? "") ?? 2
    let images = try Bench.environment("FACEGATE_TEST_IMAGES")
    let probe = try Data(contentsOf: URL(fileURLWithPath: images + "/obama2.jpg"))
    let environment = ProcessInfo.processInfo.environment

    // The processes whose CPU a login costs: the stack's own, the broker and PostgreSQL, the load generator.
    let shared = ProcessCPU.testStackServers() + [("load generator", { ProcessCPU.milliseconds(getpid()) })]

    /// One release's stack, its two apps with every phone bound, and the processes to measure.
    struct Release {
        var label: String
        var stack: BenchStack
        var phones: BenchPhones
        var apps: [(name: String, app: BenchStack.App)]
        var measured: [(name: String, cpu: () -> Double)]
    }
    func release(_ label: String, _ stack: BenchStack) async throws -> Release {
        let header = try await stack.app(binding: "header", gallery: images)
        let keyed = try await stack.app(binding: "dpop", gallery: images)
        let phones = BenchPhones(base: stack.base)
        for phone in phones.indices {
            for app in [header, keyed] { try await phones.bind(app, phone: phone, photo: probe, number: "B1") }
        }
        let own = stack.processes.map { process in (name: process.name.components(separatedBy: "-")[0], cpu: { ProcessCPU.milliseconds(process.pid) }) }
        return Release(label: label, stack: stack, phones: phones, apps: [("header device, 1:N search", header), ("DPoP-bound key, 1:1", keyed)],
                       measured: own + shared)
    }
    var releases = [try await release("this", try await BenchStack.start(matcherEngines: engines))]
    defer { releases.forEach { $0.stack.stop() } }
    if let baseline = environment["FACEGATE_BASELINE_RELEASE_DIR"], let database = environment["FACEGATE_BASELINE_DATABASE_URL"] {
        let stack = try await BenchStack.start(matcherEngines: engines, binaries: baseline, databaseURL: database, port: 18180, adminPort: 19200)
        releases.insert(try await release(environment["FACEGATE_BASELINE_COMMIT"] ?? "baseline", stack), at: 0)
    }

    var rows: [String] = []
    for concurrency in [1, 4, 8] {
        for release in releases {
            for (_, app) in release.apps { _ = try await release.phones.load(app, concurrency: concurrency, requests: requests / 2, photo: probe) }
        }
        for index in 0..<2 {
            for release in releases {
                let (name, app) = release.apps[index]
                let before = release.measured.map { $0.cpu() }
                let tripsBefore = try await release.stack.metric("facegate_db_round_trips_total")
                let run = try await release.phones.load(app, concurrency: concurrency, requests: requests, photo: probe)
                let perLogin = zip(release.measured, before).map { ($0.cpu() - $1) / Double(requests) }
                let trips = try await release.stack.metric("facegate_db_round_trips_total").flatMap { after in
                    tripsBefore.map { String(format: "%.1f", (after - $0) / Double(requests)) }
                } ?? "–"
                let cells = perLogin.map { String(format: "%.1f", $0) }.joined(separator: " | ")
                rows.append(String(format: "| %@ | %@ | %d | %@ | %.1f | %.0f | %.0f | %@ | ", release.label, name, concurrency, run.failureText,
                                   Double(requests) / run.seconds, Bench.percentile(run.latencies, 50), Bench.percentile(run.latencies, 99), trips)
                            + cells + String(format: " | %.1f |", perLogin.reduce(0, +)))
            }
        }
    }
    let header = releases[0].apps[0].app
    let columns = releases[0].measured.map(\.name)
    try Bench.record("Face login throughput and CPU per login (`facegate-bench throughput`)", """
    Face logins of obama2.jpg over HTTP, \(requests) per row, release build: gateway, one matcher with \(engines) face engines, broker and
    PostgreSQL on this 2-core machine, with the load generator. Each app's gallery holds the \(header.gallerySize) test photos' people;
    each client logs in from its own phone, bound to the user (header mode: `X-Device-Id`, searched 1:N; DPoP: a fresh proof per
    request, made inside the measured time, compared 1:1 with the key's user). Round trips: the gateway's PostgreSQL round trips
    per login (`facegate_db_round_trips_total`; a statement, or statements sent together). CPU is user + system time from /proc over the
    row's run, divided by its logins; the machine has 2,000 CPU-ms a second, so 30 logins/s leave 66 ms per login for all of it.
    \(releases.count > 1 ? "Each row is run against \(releases[0].label) and against this release in turn, each on its own database and ports (the broker and PostgreSQL shared; the other stack idle meanwhile)." : "")

    | release | login | clients | failures | logins/s | p50 ms | p99 ms | gateway round trips | \(columns.joined(separator: " | ")) | CPU-ms per login, all |
    | --- | --- | --- | --- | --- | --- | --- | --- | \(columns.map { _ in "---" }.joined(separator: " | ")) | --- |
    \(rows.joined(separator: "\n"))
    """)
}

/// CPU time (user + system) of processes, in ms, from /proc/PID/stat.
enum ProcessCPU {
    /// The test stack's broker and PostgreSQL (the server with its backends, those that ended counted by the server's
    /// children's time), found by the pid files `scripts/stack.sh` wrote.
    static func testStackServers() -> [(name: String, cpu: () -> Double)] {
        func pidFile(_ name: String) -> Int32? {
            (try? String(contentsOfFile: ".run/test/\(name).pid", encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
        var servers: [(name: String, cpu: () -> Double)] = []
        if let broker = pidFile("broker") { servers.append(("broker", { milliseconds(broker, children: true) })) }
        if let postgres = pidFile("postgres") { servers.append(("PostgreSQL", { tree(postgres) })) }
        return servers
    }

    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// The fields after the command name: state, ppid, … (utime, stime, cutime, cstime at 11–14).
    private static func fields(_ pid: Int32) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    /// With `children`, the time of its children that ended too.
    static func milliseconds(_ pid: Int32, children: Bool = false) -> Double {
        guard let fields = fields(pid), fields.count > 14 else { return 0 }
        let ticks = (11...(children ? 14 : 12)).map { Double(fields[$0]) ?? 0 }.reduce(0, +)
        return ticks / ticksPerSecond * 1000
    }

    /// A server and every process it started, live or ended (PostgreSQL and its backends).
    static func tree(_ root: Int32) -> Double {
        let live = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap(Int32.init)
            .filter { $0 != root && fields($0)?[1] == Substring(String(root)) }
        return milliseconds(root, children: true) + live.map { milliseconds($0) }.reduce(0, +)
    }
}
