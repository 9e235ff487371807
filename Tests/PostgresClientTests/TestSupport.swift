import Foundation
import PostgresClient
import Synchronization

struct TestSetupError: Error, CustomStringConvertible {
    var description: String
}

enum TestServer {
    /// The superuser URL the Makefile exports; tests fail (not skip) without it.
    static func adminConfiguration() throws -> PostgresConfiguration {
        guard let url = ProcessInfo.processInfo.environment["FACEGATE_TEST_DATABASE_URL"], !url.isEmpty else {
            throw TestSetupError(
                description: "FACEGATE_TEST_DATABASE_URL is not set: export a PostgreSQL superuser URL, "
                    + "e.g. postgres://postgres@127.0.0.1:55432/postgres (make test sets it)")
        }
        return try PostgresConfiguration(url: url)
    }
}

/// A database created for one test and dropped after it.
struct TestDatabase {
    var configuration: PostgresConfiguration
    var pool: PostgresPool
}

/// Creates a fresh database, hands `body` a pool on it, then drops it whatever happened.
func withTestDatabase<T>(
    poolSize: Int = 4, configure: (inout PostgresConfiguration) -> Void = { _ in },
    _ body: (TestDatabase) async throws -> T
) async throws -> T {
    var admin = try TestServer.adminConfiguration()
    admin.poolSize = 1
    let adminPool = PostgresPool(configuration: admin)
    let name = "facegate_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    _ = try await adminPool.query("CREATE DATABASE \(unsafeRaw: name)")
    var configuration = admin
    configuration.database = name
    configuration.poolSize = poolSize
    configure(&configuration)
    let pool = PostgresPool(configuration: configuration)
    let outcome: Result<T, any Error>
    do {
        outcome = .success(try await body(TestDatabase(configuration: configuration, pool: pool)))
    } catch {
        outcome = .failure(error)
    }
    await pool.close()
    _ = try await adminPool.query("DROP DATABASE IF EXISTS \(unsafeRaw: name) WITH (FORCE)")
    await adminPool.close()
    return try outcome.get()
}

/// A counter shared between concurrently running closures.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    @discardableResult func increment() -> Int { value.add(1, ordering: .sequentiallyConsistent).newValue }
    var current: Int { value.load(ordering: .sequentiallyConsistent) }
}

/// Runs `body` against a private cluster and destroys the cluster afterwards, whatever happened.
func withPrivateCluster(_ body: (PrivateCluster) async throws -> Void) async throws {
    let cluster = try await PrivateCluster.create()
    do {
        try await body(cluster)
    } catch {
        await cluster.destroy()
        throw error
    }
    await cluster.destroy()
}

/// Values appended from concurrently running closures, in the order they arrived.
final class Recorder: Sendable {
    private let storage = Mutex<[Int]>([])
    func append(_ value: Int) { storage.withLock { $0.append(value) } }
    var values: [Int] { storage.withLock { $0 } }
}

/// A throwaway PostgreSQL 15 cluster in a temporary directory on a free port, for tests that must
/// stop the server. It never touches the shared development server.
final class PrivateCluster: Sendable {
    static let binaries = "/usr/lib/postgresql/15/bin"
    let directory: String
    let port: Int
    private var dataDirectory: String { directory + "/data" }

    private init(directory: String, port: Int) {
        self.directory = directory
        self.port = port
    }

    var configuration: PostgresConfiguration {
        PostgresConfiguration(host: "127.0.0.1", port: port, user: "postgres", database: "postgres")
    }

    static func create() async throws -> PrivateCluster {
        var template = Array("/tmp/facegate-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TestSetupError(description: "mkdtemp failed") }
        let directory = String(cString: made)
        if getuid() == 0 {
            guard let account = getpwnam("postgres") else {
                throw TestSetupError(description: "running as root but there is no 'postgres' user to run initdb as")
            }
            guard chown(directory, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
                throw TestSetupError(description: "chown \(directory) failed")
            }
        }
        let cluster = PrivateCluster(directory: directory, port: try freePort())
        try await cluster.run(
            "initdb", ["-D", cluster.dataDirectory, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--no-instructions"])
        try await cluster.start()
        return cluster
    }

    func start() async throws {
        let options = "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off"
        try await run("pg_ctl", ["-D", dataDirectory, "-l", directory + "/server.log", "-w", "-o", options, "start"])
    }

    func stop() async throws {
        try await run("pg_ctl", ["-D", dataDirectory, "-m", "fast", "-w", "stop"])
    }

    /// Stops the server (if running) and deletes the directory.
    func destroy() async {
        try? await run("pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs a PostgreSQL tool (as the postgres user when this process is root) and waits for it.
    /// Not Foundation's Process: it notices exit through a descriptor the child inherits, and the
    /// postmaster that `pg_ctl start` leaves running would hold it open for ever; it also passes on
    /// the spawning thread's blocked signals.
    private func run(_ tool: String, _ arguments: [String]) async throws {
        let program = "\(Self.binaries)/\(tool)"
        let argv = (getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", program] : [program]) + arguments
        let outputPath = "\(directory)/\(tool).out"
        let status = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: Self.spawnAndWait(argv, outputPath: outputPath)) }
        }
        guard status == 0 else {
            let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw TestSetupError(description: "\(tool) \(arguments.joined(separator: " ")) exited \(status): \(output)")
        }
    }

    /// Exit status of the program, or -1 if it could not be started or did not exit normally.
    private static func spawnAndWait(_ argv: [String], outputPath: String) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Children inherit the spawning thread's signal mask, and dispatch threads block most signals.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, argv[0], &actions, &attributes, cArguments, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS, which Swift does not import.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
    }

    /// A TCP port nothing listens on right now.
    private static func freePort() throws -> Int {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socketDescriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(socketDescriptor, generic, length) == 0 && getsockname(socketDescriptor, generic, &length) == 0
            }
        }
        guard bound else { throw TestSetupError(description: "could not find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
