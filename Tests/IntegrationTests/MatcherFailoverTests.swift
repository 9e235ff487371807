import Foundation
import Testing

/// matcher-worker as real processes: a worker killed with SIGKILL in the middle of its jobs loses
/// nothing — its uncommitted jobs are redelivered to the replica that takes over its partitions.
@Suite(.serialized) struct MatcherFailoverTests {
    final class WorkerProcess {
        let process = Process()
        let log: URL

        init(environment: [String: String], name: String) throws {
            let binaries = try TestEnvironment.value("FACEGATE_BIN_DIR")
            process.executableURL = URL(fileURLWithPath: binaries + "/matcher-worker")
            var env = ProcessInfo.processInfo.environment
            env.merge(environment) { _, new in new }
            env["FACEGATE_LOG_LEVEL"] = "debug"
            env["FACEGATE_INSTANCE_ID"] = name
            process.environment = env
            log = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(6)).log")
            FileManager.default.createFile(atPath: log.path, contents: nil)
            let handle = try FileHandle(forWritingTo: log)
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
        }

        var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

        func waitFor(_ text: String, timeout: Duration) async throws {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                if output.contains(text) { return }
                guard process.isRunning else { throw TestSetupError("matcher-worker exited: \(output.suffix(2000))") }
                try await Task.sleep(for: .milliseconds(100))
            }
            throw TestSetupError("matcher-worker did not log '\(text)' in time: \(output.suffix(2000))")
        }

        func kill() { process.stop(signal: SIGKILL) }

        func terminate() { process.stop(signal: SIGTERM) }
    }

    @Test func jobsOfAKilledWorkerAreAnsweredByItsReplacement() async throws {
        try await TestStack.with(withMatcher: false, extra: ["FACEGATE_REQUEST_TIMEOUT_SECONDS": "90"]) { stack in
            var env = stack.environment
            env["FACEGATE_ADMIN_PORT"] = "0"
            // Enroll through a first worker, then stop it gracefully.
            let enroller = try WorkerProcess(environment: env, name: "enroller")
            defer { enroller.terminate() }
            try await enroller.waitFor("all services started", timeout: .seconds(60))
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "K1", name: "Obama")
            // The first job waits for the group to assign partitions to the worker.
            let enrolled = try await stack.enroll(app, user: user, photo: "obama.jpg")
            #expect(enrolled.status == 201, "\(String(decoding: enrolled.body, as: UTF8.self))")
            enroller.terminate()
            #expect(enroller.process.terminationStatus == 0, "graceful SIGTERM exit")

            let victim = try WorkerProcess(environment: env, name: "victim")
            defer { victim.terminate() }
            try await victim.waitFor("all services started", timeout: .seconds(60))
            let token = try await stack.accessToken(app)
            let photos = ["obama2.jpg", "obama3.jpg", "obama_partial_face.jpg", "obama_partial_face2.jpg"]
            let logins = Task {
                try await withThrowingTaskGroup(of: String?.self) { group in
                    for (index, photo) in photos.enumerated() {
                        group.addTask { try await stack.faceLogin(token, device: "d\(index)", photo: photo).string("status") }
                    }
                    return try await group.reduce(into: [String?]()) { $0.append($1) }
                }
            }
            // Kill the worker as soon as it has taken a job, before all are answered.
            try await victim.waitFor("face job started", timeout: .seconds(60))
            victim.kill()
            let successor = try WorkerProcess(environment: env, name: "successor")
            defer { successor.terminate() }
            let statuses = try await logins.value
            #expect(statuses.count == photos.count)
            #expect(statuses.allSatisfy { $0 == "CONFIRM_REQUIRED" }, "\(statuses)")
        }
    }
}
