import FaceGateCore
import Foundation
import PostgresClient

/// The figures every service exposes besides its own: build, process (CPU, memory, threads, open
/// files — the names the Prometheus client libraries use, so stock dashboards read them), and the
/// database pool (connections in use, idle, and tasks waiting for one: a pool that makes tasks wait is
/// the first sign of a slow or overloaded PostgreSQL).
enum ProcessMetrics {
    static func register(in metrics: MetricsRegistry, service: String, database: PostgresPool) {
        metrics.gauge("facegate_build_info", help: "Always 1; the release and service in its labels")
            .set(1, ["service": service, "version": Release.version])

        metrics.counter("process_cpu_seconds_total", help: "User and system CPU time spent, in seconds") {
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
            return seconds(usage.ru_utime) + seconds(usage.ru_stime)
        }
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        metrics.gauge("process_resident_memory_bytes", help: "Resident memory, in bytes") {
            statm(field: 1).map { $0 * pageSize } ?? 0
        }
        metrics.gauge("process_virtual_memory_bytes", help: "Virtual memory, in bytes") {
            statm(field: 0).map { $0 * pageSize } ?? 0
        }
        metrics.gauge("process_open_fds", help: "Open file descriptors") {
            Double((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0)
        }
        metrics.gauge("process_threads", help: "Operating-system threads") {
            status(field: "Threads:") ?? 0
        }
        let started = Date().timeIntervalSince1970
        metrics.gauge("process_start_time_seconds", help: "Start time since the Unix epoch, in seconds") { started }

        metrics.gauge("facegate_db_pool_connections", help: "PostgreSQL connections open (lent out or idle)") {
            Double(database.statistics.open)
        }
        metrics.gauge("facegate_db_pool_in_use", help: "PostgreSQL connections lent out to a query or transaction") {
            Double(database.statistics.inUse)
        }
        metrics.gauge("facegate_db_pool_waiting", help: "Tasks waiting for a PostgreSQL connection") {
            Double(database.statistics.waiting)
        }
        metrics.gauge("facegate_db_pool_capacity", help: "The most PostgreSQL connections the pool opens") {
            Double(database.capacity)
        }
        metrics.counter("facegate_db_round_trips_total",
                        help: "Round trips to PostgreSQL: a statement, or statements sent together in one pipeline") {
            Double(database.statistics.roundTrips)
        }
        metrics.counter("facegate_db_round_trip_seconds_total", help: "Time spent in those round trips, from sending to the last row") {
            database.statistics.roundTripSeconds
        }
    }

    /// A field of /proc/self/statm (in pages): 0 size, 1 resident.
    private static func statm(field: Int) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        return fields.count > field ? Double(fields[field]) : nil
    }

    /// A numeric line of /proc/self/status, such as `Threads:`.
    private static func status(field: String) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first { $0.hasPrefix(field) }
        return line.flatMap { Double($0.dropFirst(field.count).trimmingCharacters(in: .whitespaces)) }
    }
}
