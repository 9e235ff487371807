import CSpawn
import Foundation

/// A process the tests start: a tool they run to the end (`run`) or a server they stop (`stop`). Every wait has a
/// deadline, and the child is reaped here with `waitpid`: Foundation's `Process` learns of a child's end through a socket
/// the child inherits, so any other child that inherits that socket as well (one started at the same moment on another
/// thread) hides the end until it ends itself, and `waitUntilExit` or a loop on `isRunning` can then wait forever.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    public let command: String
    private let lock = NSLock()
    private var waitStatus: Int32?

    /// Starts `command` (a path, or a name looked up on PATH) with its standard streams on these descriptors; nil is
    /// /dev/null. The descriptors stay the caller's.
    public init(_ command: String, _ arguments: [String], environment: [String: String]? = nil,
                input: Int32? = nil, output: Int32? = nil, error: Int32? = nil) throws {
        self.command = command
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard null >= 0 else { throw ChildProcessError("/dev/null could not be opened: errno \(errno)") }
        defer { close(null) }
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let result = Self.withCStrings([command] + arguments) { argv in
            Self.withCStrings(variables) { envp in
                fg_spawn(command, argv, envp, input ?? null, output ?? null, error ?? null)
            }
        }
        guard result > 0 else {
            throw ChildProcessError("\(command) could not be started: \(String(cString: strerror(-result)))")
        }
        pid = result
    }

    deinit {
        if isRunning { _ = stop(signal: SIGKILL) }
    }

    /// False once the child has ended (and has been reaped).
    public var isRunning: Bool { reap(blocking: false) == nil }

    /// The exit code, or 128 + the signal that ended it; nil while it runs.
    public var exitCode: Int32? {
        reap(blocking: false).map { status in status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + status & 0x7f }
    }

    /// Waits up to `timeout` for the child to end; true if it has.
    @discardableResult
    public func wait(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            guard ContinuousClock.now < deadline else { return false }
            usleep(2_000)
        }
        return true
    }

    /// Sends `signal` and waits up to `timeout` for the child to end, then kills it; returns whether it ended in time.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(20)) -> Bool {
        guard isRunning else { return true }
        kill(pid, signal)
        if wait(timeout: timeout) { return true }
        kill(pid, SIGKILL)
        _ = reap(blocking: true)
        return false
    }

    /// The raw wait status once the child has ended.
    private func reap(blocking: Bool) -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let waitStatus { return waitStatus }
        var status: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &status, blocking ? 0 : WNOHANG) } while result < 0 && errno == EINTR
        guard result == pid else { return nil }
        waitStatus = status
        return status
    }

    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        var pointers = strings.map { strdup($0) }
        pointers.append(nil)
        defer { pointers.forEach { free($0) } }
        return body(pointers)
    }
}

extension ChildProcess {
    public struct Output: Sendable {
        public var exitCode: Int32
        public var output: Data
        public var errors: Data
        public var errorText: String { String(decoding: errors.prefix(2000), as: UTF8.self) }
    }

    /// Runs `command` to its end with `input` on its standard input and returns what it wrote; throws if it cannot be
    /// started or is still running after `timeout` (it is then killed). Its output goes through files, not pipes, so
    /// a child that writes a lot to one stream while the other is read cannot stall.
    public static func run(_ command: String, _ arguments: [String], input: Data? = nil,
                           timeout: Duration = .seconds(120)) throws -> Output {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func descriptor(_ name: String, contents: Data?) throws -> Int32 {
            let path = directory.appendingPathComponent(name).path
            if let contents { try contents.write(to: URL(fileURLWithPath: path)) }
            let fd = open(path, contents == nil ? O_RDWR | O_CREAT | O_CLOEXEC : O_RDONLY | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw ChildProcessError("\(path) could not be opened: errno \(errno)") }
            return fd
        }
        let inputFD = try input.map { try descriptor("input", contents: $0) }
        defer { if let inputFD { close(inputFD) } }
        let outputFD = try descriptor("output", contents: nil)
        defer { close(outputFD) }
        let errorFD = try descriptor("errors", contents: nil)
        defer { close(errorFD) }
        let child = try ChildProcess(command, arguments, input: inputFD, output: outputFD, error: errorFD)
        guard child.wait(timeout: timeout) else {
            child.stop(signal: SIGKILL)
            throw ChildProcessError("\(command) \(arguments.prefix(6).joined(separator: " ")) did not end within \(timeout)")
        }
        return Output(exitCode: child.exitCode ?? -1,
                      output: try Data(contentsOf: directory.appendingPathComponent("output")),
                      errors: try Data(contentsOf: directory.appendingPathComponent("errors")))
    }
}

public struct ChildProcessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
