import Foundation
import PostgresClient

/// `facegate-bench postgres [--url URL] [--seconds 10] [--tasks 8,32,64] [--scale 10] [--stream-rows 200000]
///                            [--results PATH]`
///
/// Measures, against one server in one run:
/// 1. pool throughput for a primary-key SELECT (pgbench's select-only statement on its accounts
///    table), 8 connections, N concurrent tasks: queries/s, p50, p99;
/// 2. the same statement driven by pgbench (`-S -c 8 -M extended`, which like this client parses
///    each statement unnamed), as the peer, with the ratio;
/// 3. streaming of 600-byte bytea rows with `forEachRow` (the matcher's start-up load), against
///    `psql` running a binary COPY of the same rows to /dev/null.
/// Appends the figures to Benchmarks/RESULTS.md.
func runPostgresBenchmark(arguments: [String]) async throws {
    let options = try PostgresBenchmarkOptions(arguments)
    var admin = try PostgresConfiguration(url: options.url)
    admin.poolSize = 1
    let adminPool = PostgresPool(configuration: admin)
    let database = "facegate_bench_\(getpid())"
    _ = try await adminPool.query("DROP DATABASE IF EXISTS \(unsafeRaw: database) WITH (FORCE)")
    _ = try await adminPool.query("CREATE DATABASE \(unsafeRaw: database)")
    var configuration = admin
    configuration.database = database
    configuration.poolSize = 8
    configuration.applicationName = "facegate-bench"
    configuration.statementTimeoutMilliseconds = 0  // loading a million rows can outlast the default

    var report = PostgresBenchmarkReport(options: options)
    do {
        let pgbench = PostgresBenchmarkOptions.pgbenchPath
        let pgbenchAvailable = FileManager.default.isExecutableFile(atPath: pgbench)
        progress("preparing pgbench_accounts (scale \(options.scale))…")
        if pgbenchAvailable {
            _ = try runTool(pgbench, ["-i", "-q", "-s", "\(options.scale)"] + connectionArguments(configuration))
        } else {
            try await createAccounts(configuration, scale: options.scale)
        }

        let pool = PostgresPool(configuration: configuration)
        let accounts = options.scale * 100_000
        _ = try await pointSelects(pool, tasks: 8, duration: .seconds(1), accounts: accounts)  // warm-up
        for tasks in options.tasks {
            let result = try await pointSelects(pool, tasks: tasks, duration: .seconds(options.seconds), accounts: accounts)
            progress("facegate pool, \(tasks) tasks: \(result)")
            report.pool.append((tasks, result))
        }
        if pgbenchAvailable {
            for mode in ["extended", "prepared"] {
                let result = try runPgbench(configuration, mode: mode, seconds: options.seconds)
                progress("pgbench -M \(mode): \(result)")
                report.pgbench.append((mode, result))
            }
        }

        progress("preparing \(options.streamRows) template rows…")
        _ = try await pool.query("CREATE TABLE templates (id int8 PRIMARY KEY, embedding bytea NOT NULL)")
        _ = try await pool.query(
            """
            INSERT INTO templates
            SELECT g, decode(lpad(to_hex(g), 8, '0') || repeat(md5(g::text), 37) || 'abcd', 'hex')
            FROM generate_series(1, \(options.streamRows)) g
            """)
        _ = try await pool.query("VACUUM ANALYZE templates")
        _ = try await streamTemplates(pool)  // warm the buffer cache
        report.streaming = try await streamTemplates(pool)
        progress("forEachRow: \(report.streaming!)")
        report.copyPeerSeconds = try timeBinaryCopy(configuration)
        await pool.close()
    } catch {
        _ = try? await adminPool.query("DROP DATABASE IF EXISTS \(unsafeRaw: database) WITH (FORCE)")
        await adminPool.close()
        throw error
    }
    _ = try await adminPool.query("DROP DATABASE IF EXISTS \(unsafeRaw: database) WITH (FORCE)")
    await adminPool.close()

    let markdown = report.markdown()
    print(markdown)
    try appendResults(markdown, to: options.resultsPath)
    progress("appended to \(options.resultsPath)")
}

/// Progress goes to standard error, unbuffered, so a long run shows where it is.
private func progress(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

// MARK: - Options

struct PostgresBenchmarkOptions {
    static let pgbenchPath = "/usr/lib/postgresql/15/bin/pgbench"
    static let psqlPath = "/usr/lib/postgresql/15/bin/psql"

    var url: String
    var seconds = 10
    var tasks = [8, 32, 64]
    var scale = 10
    var streamRows = 200_000
    var resultsPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("RESULTS.md").path

    init(_ arguments: [String]) throws {
        let environment = ProcessInfo.processInfo.environment
        url = environment["FACEGATE_BENCH_DATABASE_URL"] ?? environment["FACEGATE_TEST_DATABASE_URL"] ?? ""
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            guard let value = remaining.popFirst() else { throw BenchmarkUsageError("\(flag) needs a value") }
            func number() throws -> Int {
                guard let number = Int(value), number > 0 else { throw BenchmarkUsageError("\(flag) needs a positive number") }
                return number
            }
            switch flag {
            case "--url": url = value
            case "--seconds": seconds = try number()
            case "--scale": scale = try number()
            case "--stream-rows": streamRows = try number()
            case "--results": resultsPath = value
            case "--tasks":
                tasks = try value.split(separator: ",").map {
                    guard let count = Int($0), count > 0 else { throw BenchmarkUsageError("--tasks takes numbers like 8,32,64") }
                    return count
                }
            default: throw BenchmarkUsageError("unknown option \(flag)")
            }
        }
        if url.isEmpty {
            throw BenchmarkUsageError("set FACEGATE_BENCH_DATABASE_URL or FACEGATE_TEST_DATABASE_URL, or pass --url (a superuser URL)")
        }
    }
}

struct BenchmarkUsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Workloads

struct ThroughputResult: CustomStringConvertible {
    var queries: Int
    var seconds: Double
    var p50Milliseconds: Double
    var p99Milliseconds: Double
    var perSecond: Double { Double(queries) / seconds }

    init(queries: Int, seconds: Double, latenciesMicroseconds: [Int]) {
        self.queries = queries
        self.seconds = seconds
        let sorted = latenciesMicroseconds.sorted()
        func percentile(_ fraction: Double) -> Double {
            sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]) / 1000
        }
        p50Milliseconds = percentile(0.50)
        p99Milliseconds = percentile(0.99)
    }

    var description: String {
        String(format: "%.0f queries/s, p50 %.3f ms, p99 %.3f ms (%d queries)", perSecond, p50Milliseconds, p99Milliseconds, queries)
    }
}

private func pointSelects(
    _ pool: PostgresPool, tasks: Int, duration: Duration, accounts: Int
) async throws -> ThroughputResult {
    let clock = ContinuousClock()
    let start = clock.now
    let deadline = start + duration
    let latencies = try await withThrowingTaskGroup(of: [Int].self) { group in
        for _ in 0..<tasks {
            group.addTask {
                var generator = SystemRandomNumberGenerator()
                var own: [Int] = []
                own.reserveCapacity(100_000)
                while clock.now < deadline {
                    let aid = Int32.random(in: 1...Int32(accounts), using: &generator)
                    let began = clock.now
                    let rows = try await pool.query("SELECT abalance FROM pgbench_accounts WHERE aid = \(aid)")
                    _ = try rows.first?.decode(0, as: Int32.self)
                    let elapsed = clock.now - began
                    own.append(Int(elapsed.components.seconds) * 1_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000_000))
                }
                return own
            }
        }
        return try await group.reduce(into: [Int]()) { $0.append(contentsOf: $1) }
    }
    let seconds = (clock.now - start) / .seconds(1)
    return ThroughputResult(queries: latencies.count, seconds: seconds, latenciesMicroseconds: latencies)
}

struct StreamingResult: CustomStringConvertible {
    var rows: Int
    var bytes: Int
    var seconds: Double
    var description: String {
        String(format: "%d rows, %.1f MB in %.2f s: %.0f rows/s, %.1f MB/s", rows, Double(bytes) / 1e6, seconds,
               Double(rows) / seconds, Double(bytes) / 1e6 / seconds)
    }
}

private func streamTemplates(_ pool: PostgresPool) async throws -> StreamingResult {
    let clock = ContinuousClock()
    let start = clock.now
    var rows = 0
    var bytes = 0
    try await pool.forEachRow("SELECT id, embedding FROM templates") { row in
        let embedding = try row.decode(1, as: [UInt8].self)
        _ = try row.decode(0, as: Int.self)
        rows += 1
        bytes += embedding.count
    }
    return StreamingResult(rows: rows, bytes: bytes, seconds: (clock.now - start) / .seconds(1))
}

/// The accounts table pgbench would create, for machines without pgbench.
private func createAccounts(_ configuration: PostgresConfiguration, scale: Int) async throws {
    let pool = PostgresPool(configuration: configuration)
    _ = try await pool.query("CREATE TABLE pgbench_accounts (aid int4 PRIMARY KEY, bid int4, abalance int4, filler char(84))")
    _ = try await pool.query(
        "INSERT INTO pgbench_accounts SELECT g, 1 + (g - 1) / 100000, 0, '' FROM generate_series(1, \(scale * 100_000)) g")
    _ = try await pool.query("VACUUM ANALYZE pgbench_accounts")
    await pool.close()
}

// MARK: - Peers

private func connectionArguments(_ configuration: PostgresConfiguration) -> [String] {
    ["-h", configuration.host, "-p", "\(configuration.port)", "-U", configuration.user, configuration.database]
}

private func peerEnvironment(_ configuration: PostgresConfiguration) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment
    if let password = configuration.password { environment["PGPASSWORD"] = password }
    return environment
}

/// pgbench select-only with 8 clients; latencies come from its per-transaction log.
private func runPgbench(_ configuration: PostgresConfiguration, mode: String, seconds: Int) throws -> ThroughputResult {
    let logDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("facegate-pgbench-\(getpid())-\(mode)")
    try? FileManager.default.removeItem(at: logDirectory)
    try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: logDirectory) }
    let output = try runTool(
        PostgresBenchmarkOptions.pgbenchPath,
        ["-n", "-S", "-c", "8", "-j", "2", "-T", "\(seconds)", "-M", mode, "-l", "--log-prefix",
         logDirectory.appendingPathComponent("log").path] + connectionArguments(configuration),
        environment: peerEnvironment(configuration))
    var latencies: [Int] = []
    for file in try FileManager.default.contentsOfDirectory(atPath: logDirectory.path) {
        let text = try String(contentsOf: logDirectory.appendingPathComponent(file), encoding: .utf8)
        for line in text.split(separator: "\n") {
            // client_id transaction_no latency_us script_no epoch_s epoch_us
            let fields = line.split(separator: " ")
            if fields.count >= 3, let latency = Int(fields[2]) { latencies.append(latency) }
        }
    }
    let duration = output.split(separator: "\n").first { $0.hasPrefix("duration:") }
        .flatMap { Double($0.split(separator: " ")[1]) } ?? Double(seconds)
    return ThroughputResult(queries: latencies.count, seconds: duration, latenciesMicroseconds: latencies)
}

private func timeBinaryCopy(_ configuration: PostgresConfiguration) throws -> Double {
    let arguments = connectionArguments(configuration) + [
        "-X", "-q", "-o", "/dev/null", "-c", "COPY (SELECT id, embedding FROM templates) TO STDOUT (FORMAT binary)",
    ]
    _ = try runTool(PostgresBenchmarkOptions.psqlPath, arguments, environment: peerEnvironment(configuration))
    let start = ContinuousClock.now
    _ = try runTool(PostgresBenchmarkOptions.psqlPath, arguments, environment: peerEnvironment(configuration))
    return (ContinuousClock.now - start) / .seconds(1)
}

/// Runs a client tool to completion and returns its output.
///
/// Spawned directly rather than with Foundation's Process: a child inherits the signal mask of the
/// spawning thread, and on a dispatch thread SIGALRM is blocked, which is how pgbench ends a `-T` run.
private func runTool(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws -> String {
    let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("facegate-bench-\(getpid())-\(UUID().uuidString).out").path
    defer { try? FileManager.default.removeItem(atPath: outputPath) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    var allSignals = sigset_t()
    sigfillset(&allSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    posix_spawnattr_setsigdefault(&attributes, &allSignals)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    let variables = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { variables.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, variables)
    guard spawned == 0 else { throw BenchmarkUsageError("could not start \(path): error \(spawned)") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    // WIFEXITED && WEXITSTATUS == 0, which Swift does not import.
    guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
        throw BenchmarkUsageError("\(path) failed (wait status \(status)): \(output)")
    }
    return output
}

// MARK: - Report

struct PostgresBenchmarkReport {
    var options: PostgresBenchmarkOptions
    var pool: [(tasks: Int, result: ThroughputResult)] = []
    var pgbench: [(mode: String, result: ThroughputResult)] = []
    var streaming: StreamingResult?
    var copyPeerSeconds: Double?

    func markdown() -> String {
        var lines = [
            "## PostgresClient (postgres) — \(ISO8601DateFormatter().string(from: Date()))", "",
            "Machine: \(Bench.machine()). Server: the dev PostgreSQL 15 on the same machine (TCP, 127.0.0.1).",
            "Statement: `SELECT abalance FROM pgbench_accounts WHERE aid = $1`, random aid, pgbench scale \(options.scale) "
                + "(\(options.scale * 100_000) rows), \(options.seconds) s per run; pool of 8 connections.", "",
            "| client | concurrency | queries/s | p50 ms | p99 ms | vs pgbench -M extended |",
            "|---|---|---|---|---|---|",
        ]
        let peer = pgbench.first { $0.mode == "extended" }?.result
        for (tasks, result) in pool {
            let ratio = peer.map { String(format: "%.2f×", result.perSecond / $0.perSecond) } ?? "n/a"
            lines.append(row("facegate PostgresPool", "\(tasks) tasks", result, ratio))
        }
        for (mode, result) in pgbench {
            let ratio = peer.map { String(format: "%.2f×", result.perSecond / $0.perSecond) } ?? "n/a"
            lines.append(row("pgbench -S -M \(mode)", "8 clients, 2 threads", result, ratio))
        }
        if pgbench.isEmpty { lines += ["", "pgbench was not available: no peer figures."] }
        if let streaming {
            lines += ["", "Streaming (`forEachRow`, single-row mode, each row decoded to Int + [UInt8]): \(streaming)."]
            if let copyPeerSeconds {
                lines.append(String(
                    format: "Peer: `psql` binary COPY of the same rows to /dev/null: %.2f s (forEachRow takes %.2f× as long).",
                    copyPeerSeconds, streaming.seconds / copyPeerSeconds))
            }
        }
        lines.append("")
        return lines.joined(separator: "\n")
    }

    private func row(_ client: String, _ concurrency: String, _ result: ThroughputResult, _ ratio: String) -> String {
        String(format: "| %@ | %@ | %.0f | %.3f | %.3f | %@ |", client, concurrency, result.perSecond,
               result.p50Milliseconds, result.p99Milliseconds, ratio)
    }
}

private func appendResults(_ markdown: String, to path: String) throws {
    if !FileManager.default.fileExists(atPath: path) {
        try "# Benchmark results\n\n".write(toFile: path, atomically: true, encoding: .utf8)
    }
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    try handle.seekToEnd()
    try handle.write(contentsOf: Data(markdown.utf8))
}
