import FaceGateTestSupport
import Foundation

/// A service executable from `FACEGATE_BIN_DIR` run as a real process with the stack's environment,
/// its output in a temporary log file the test can wait on.
final class ServiceProcess {
    let process: ChildProcess
    let log: URL
    let executable: String

    init(_ executable: String, environment: [String: String], name: String) throws {
        self.executable = executable
        let binaries = try TestEnvironment.value("FACEGATE_BIN_DIR")
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        env["FACEGATE_LOG_LEVEL"] = "debug"
        env["FACEGATE_INSTANCE_ID"] = name
        log = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(6)).log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        process = try ChildProcess(binaries + "/" + executable, [], environment: env,
                                   output: handle.fileDescriptor, error: handle.fileDescriptor)
    }

    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    func waitFor(_ text: String, timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if output.contains(text) { return }
            guard process.isRunning else { throw TestSetupError("\(executable) exited: \(output.suffix(2000))") }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestSetupError("\(executable) did not log '\(text)' in time: \(output.suffix(2000))")
    }

    func kill() { process.stop(signal: SIGKILL) }

    func terminate() { process.stop(signal: SIGTERM) }
}
