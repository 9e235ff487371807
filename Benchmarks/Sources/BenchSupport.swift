import FaceGateCore
import FaceGateTestSupport
import Foundation
import PostgresClient
import ServiceKit
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Shared pieces of the benchmarks: the machine line, percentiles, appending to RESULTS.md, and
/// running the services as real processes.
enum Bench {
    static var resultsPath: String {
        ProcessInfo.processInfo.environment["FACEGATE_BENCH_RESULTS"] ?? "Benchmarks/RESULTS.md"
    }

    static func machine() -> String {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        let memory = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8))?.split(separator: "\n").first?
            .split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Double($0) }.map { String(format: "%.0f GiB", $0 / 1_048_576) } ?? "?"
        var system = utsname()
        uname(&system)
        let architecture = withUnsafeBytes(of: &system.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return "\(architecture), \(ProcessInfo.processInfo.activeProcessorCount) cores (nproc), \(model), \(memory) RAM"
    }

    /// The 1, 5 and 15 minute load averages: the machine is shared, so figures need this context.
    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let rank = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
        return sorted[rank]
    }

    /// Appends a section to RESULTS.md: heading, date, machine, then the body.
    static func record(_ title: String, _ body: String) throws {
        let date = ISO8601DateFormatter().string(from: Date())
        let section = "\n## \(title)\n\n_\(date) · \(machine())_\n\n\(body.trimmingCharacters(in: .whitespacesAndNewlines))\n"
        if !FileManager.default.fileExists(atPath: resultsPath) {
            FileManager.default.createFile(atPath: resultsPath, contents: Data("# Benchmark results\n".utf8))
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: resultsPath))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(section.utf8))
        try handle.close()
        print(section)
    }

    /// A new, migrated database `name` beside FACEGATE_DATABASE_URL's, owned by its user (dropped first if it exists; made
    /// as the superuser of FACEGATE_TEST_DATABASE_URL): its URL, and a pool on it that sees every app's rows (row-level
    /// security) with statements of up to 10 minutes.
    static func freshDatabase(_ name: String) async throws -> (url: String, pool: PostgresPool) {
        guard var components = URLComponents(string: try environment("FACEGATE_DATABASE_URL")), let owner = components.user else {
            throw BenchError("FACEGATE_DATABASE_URL names no user")
        }
        let admin = try superuser(on: "postgres")
        _ = try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
        _ = try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name) OWNER \(owner)"))
        await admin.close()
        components.path = "/" + name
        let url = components.string!
        var configuration = try PostgresConfiguration(url: url)
        configuration.statementTimeoutMilliseconds = 600_000
        configuration.sessionSettings = [Tenant.setting: Tenant.everyApp]
        let pool = PostgresPool(configuration: configuration)
        try await ServiceRuntime.migrate(pool)
        return (url, pool)
    }

    /// A pool on `database` as the superuser of FACEGATE_TEST_DATABASE_URL (creating databases, maintenance).
    static func superuser(on database: String) throws -> PostgresPool {
        guard var components = URLComponents(string: try environment("FACEGATE_TEST_DATABASE_URL")) else {
            throw BenchError("FACEGATE_TEST_DATABASE_URL is not a URL")
        }
        components.path = "/" + database
        return PostgresPool(configuration: try PostgresConfiguration(url: components.string!))
    }

    /// The leading `--name value` pairs of a benchmark's arguments, by name.
    static func options(_ arguments: [String]) -> [String: String] {
        var options: [String: String] = [:]
        var index = 0
        while index + 1 < arguments.count, arguments[index].hasPrefix("--") {
            options[String(arguments[index].dropFirst(2))] = arguments[index + 1]
            index += 2
        }
        return options
    }

    static func environment(_ name: String) throws -> String {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            throw BenchError("\(name) is not set: run benchmarks with `make bench`")
        }
        return value
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A service binary running as a child process, stopped with SIGTERM.
final class ServiceProcess {
    let process = Process()
    let name: String

    init(_ binary: String, name: String, environment: [String: String]) throws {
        self.name = name
        process.executableURL = URL(fileURLWithPath: binary)
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        // The service's own message-signing key from the stack's environment (scripts/stack.sh), and no other.
        let own = "FACEGATE_SERVICE_KEY_" + URL(fileURLWithPath: binary).lastPathComponent.uppercased().replacingOccurrences(of: "-", with: "_")
        if env["FACEGATE_SERVICE_KEY"] == nil, let seed = env[own] { env["FACEGATE_SERVICE_KEY"] = seed }
        for key in env.keys where key.hasPrefix("FACEGATE_SERVICE_KEY_") { env[key] = nil }
        process.environment = env
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("facegate-bench-\(name).log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    /// `Threads` and `VmRSS` (kB) from /proc.
    func threadsAndRSS() -> (threads: Int, rssKB: Int) {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            status.split(separator: "\n").first { $0.hasPrefix(name) }?.split(whereSeparator: { $0 == " " || $0 == "\t" })
                .dropFirst().first.flatMap { Int($0) } ?? -1
        }
        return (field("Threads:"), field("VmRSS:"))
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitForExit()
    }
}

/// HTTP calls of the benchmarks. To this machine over raw sockets (`LoopbackHTTP`): URLSession on Linux spends more CPU
/// per request than the gateway does (measured by `facegate-bench throughput`), which would count against the stack.
enum HTTP {
    static func call(_ method: String, _ url: String, headers: [String: String] = [:], body: Data? = nil) async throws -> (Int, Data) {
        if let parts = URLComponents(string: url), parts.host == "127.0.0.1", let port = parts.port {
            let path = parts.percentEncodedPath + (parts.percentEncodedQuery.map { "?" + $0 } ?? "")
            let answer = try await LoopbackHTTP.send(port: port, method: method, path: path, headers: headers.map { ($0.key, $0.value) }, body: body,
                                                     timeout: 120)
            return (answer.status, answer.body)
        }
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        request.timeoutInterval = 120
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    static func json(_ data: Data) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }

    static func waitUntilOK(_ url: String, timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let (status, _) = try? await call("GET", url), status == 200 { return }
            try await Task.sleep(for: .milliseconds(250))
        }
        throw BenchError("\(url) not ready within \(timeout)")
    }
}

extension Process {
    /// Waits for the child by polling. Foundation's `waitUntilExit` spins a run loop at full CPU on
    /// Linux, which would steal a core from whatever is being measured.
    func waitForExit() {
        while isRunning { usleep(10_000) }
    }
}
