import Foundation
import HTTPServer

/// `facegate-bench http [--seconds N] [--connections 1,64,1000] [--threads N] [--results PATH]`
///
/// Serves a trivial JSON route in this process and drives it with `wrk` (Debian package `wrk`) at each
/// connection count; records requests/s, wrk's latency p50/p99 and the peak thread count of this
/// process, and appends them to Benchmarks/RESULTS.md.
func runHTTPBenchmark(arguments: [String]) async throws {
    var seconds = 5
    var connectionCounts = [1, 64, 1000]
    var threadCount = 2
    var resultsPath = "Benchmarks/RESULTS.md"
    var index = 0
    while index < arguments.count {
        let value = index + 1 < arguments.count ? arguments[index + 1] : ""
        switch arguments[index] {
        case "--seconds": seconds = Int(value) ?? seconds
        case "--connections": connectionCounts = value.split(separator: ",").compactMap { Int($0) }
        case "--threads": threadCount = Int(value) ?? threadCount
        case "--results": resultsPath = value
        default: throw BenchError("unknown argument \(arguments[index])")
        }
        index += 2
    }
    guard let wrk = ["/usr/bin/wrk", "/usr/local/bin/wrk"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
        throw BenchError("wrk not found; install it with `apt-get install wrk`")
    }

    struct Pong: Encodable {
        var status: String
        var time: Date
    }
    let router = Router()
    router.add("GET", "/v1/ping") { _ in .json(Pong(status: "ok", time: Date())) }
    var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
    configuration.threadCount = threadCount
    configuration.perIPConnectionLimit = 4096
    configuration.maxConnections = 8192
    let server = HTTPServer(configuration: configuration, router: router)
    try server.start()
    let url = "http://127.0.0.1:\(server.port)/v1/ping"
    print("serving \(url) with \(threadCount) daemon threads; wrk for \(seconds) s per run")

    var rows: [String] = []
    let threadsIdle = processThreadCount()
    let loadBefore = Bench.loadAverage()
    for connections in connectionCounts {
        let wrkThreads = min(2, connections)
        let sampler = ThreadSampler()
        let output = try await runProcess(wrk, ["-t\(wrkThreads)", "-c\(connections)", "-d\(seconds)s", "--latency", url])
        let peakThreads = await sampler.stop()
        let report = WrkReport(output)
        let row = "| \(connections) | \(wrkThreads) | \(report.requestsPerSecond) | \(report.p50) | \(report.p99) | \(report.errors) | \(peakThreads) |"
        print(row)
        rows.append(row)
    }
    await server.shutdown(gracePeriod: .seconds(2))

    let loadAfter = Bench.loadAverage()
    let machine = Bench.machine()
    let date = ISO8601DateFormatter().string(from: Date())
    var section = """

    ## HTTPServer (libmicrohttpd): trivial JSON route, in-process server, wrk on the same machine

    \(date) · \(machine) · libmicrohttpd \(HTTPServer.libraryVersion) · release build · \(threadCount) daemon threads · \(seconds) s per run · `GET /v1/ping` → `{"status":"ok","time":…}`

    Threads: \(threadsIdle) in the process with the server idle; the last column is the peak sampled every 50 ms during the run.
    wrk shares the machine's cores with the server, so these figures are lower bounds for the server alone.
    Load average (1 min) before the runs \(loadBefore), after \(loadAfter) (other jobs share this machine).

    | connections | wrk threads | requests/s | latency p50 | latency p99 | errors | peak threads |
    | ---: | ---: | ---: | ---: | ---: | --- | ---: |

    """
    section += rows.joined(separator: "\n") + "\n"
    let existing = (try? String(contentsOfFile: resultsPath, encoding: .utf8)) ?? "# FaceGate benchmark results\n"
    try (existing + section).write(toFile: resultsPath, atomically: true, encoding: .utf8)
    print("appended to \(resultsPath)")
}

/// The figures wrk prints with `--latency`.
private struct WrkReport {
    var requestsPerSecond = "?"
    var p50 = "?"
    var p99 = "?"
    var errors = "none"

    init(_ output: String) {
        var problems: [String] = []
        for raw in output.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if line.hasPrefix("Requests/sec:"), fields.count >= 2 {
                requestsPerSecond = String(fields[1])
            } else if line.hasPrefix("50%"), fields.count >= 2 {
                p50 = String(fields[1])
            } else if line.hasPrefix("99%"), fields.count >= 2 {
                p99 = String(fields[1])
            } else if line.hasPrefix("Socket errors:") || line.hasPrefix("Non-2xx") {
                problems.append(line)
            }
        }
        if !problems.isEmpty { errors = problems.joined(separator: "; ") }
    }
}

/// Samples this process's thread count every 50 ms until stopped; returns the peak.
private final class ThreadSampler: Sendable {
    private let task: Task<Int, Never>

    init() {
        task = Task {
            var peak = processThreadCount()
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(50))
                peak = max(peak, processThreadCount())
            }
            return peak
        }
    }

    func stop() async -> Int {
        task.cancel()
        return await task.value
    }
}

private func processThreadCount() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in status.split(separator: "\n") where line.hasPrefix("Threads:") {
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? -1
    }
    return -1
}

/// Runs a program to completion without holding a cooperative thread, returning its standard output.
private func runProcess(_ path: String, _ arguments: [String]) async throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    return try await withCheckedThrowingContinuation { continuation in
        process.terminationHandler = { _ in
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            continuation.resume(returning: String(decoding: data, as: UTF8.self))
        }
        do {
            try process.run()
        } catch {
            continuation.resume(throwing: error)
        }
    }
}

