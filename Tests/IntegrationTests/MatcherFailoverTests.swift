import Foundation
import Testing

/// matcher-worker as real processes: a worker killed with SIGKILL in the middle of its jobs loses
/// nothing — its uncommitted jobs are redelivered to the replica that takes over its partitions.
@Suite(.serialized) struct MatcherFailoverTests {
    @Test func jobsOfAKilledWorkerAreAnsweredByItsReplacement() async throws {
        try await TestStack.with(withMatcher: false, extra: ["FACEGATE_REQUEST_TIMEOUT_SECONDS": "90"]) { stack in
            // The successor starts, loads the models and joins the group while the logins wait: on a busy machine that
            // has taken over 30 s, so the test waits as long as the gateway does.
            stack.clientTimeout = 100
            var env = stack.environment(for: "matcher-worker")
            env["FACEGATE_ADMIN_PORT"] = "0"
            // Enroll through a first worker, then stop it gracefully.
            let enroller = try ServiceProcess("matcher-worker", environment: env, name: "enroller")
            defer { enroller.terminate() }
            try await enroller.waitFor("all services started", timeout: .seconds(60))
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "K1", name: "Obama")
            // The first job waits for the group to assign partitions to the worker.
            let enrolled = try await stack.enroll(app, user: user, photo: "obama.jpg")
            #expect(enrolled.status == 201, "\(String(decoding: enrolled.body, as: UTF8.self))")
            // The caller's W3C trace reaches the worker's log lines for that job; a malformed one starts a new trace.
            let traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
            let searched = try await stack.call("POST", "/v1/apps/\(app.id)/faces/search", bearer: stack.adminKey,
                                                body: try TestEnvironment.image("obama2.jpg"), contentType: "image/jpeg",
                                                headers: ["traceparent": "00-\(traceId)-00f067aa0ba902b7-01"])
            #expect(searched.string("outcome") == "MATCH")
            try await enroller.waitFor(traceId, timeout: .seconds(10))
            let lines = enroller.output.split(separator: "\n").filter { $0.contains(traceId) }
            #expect(lines.contains { $0.contains("face job answered") && $0.contains(#""job.kind":"identify""#) }, "\(lines)")
            enroller.terminate()
            #expect(enroller.process.exitCode == 0, "graceful SIGTERM exit")

            let victim = try ServiceProcess("matcher-worker", environment: env, name: "victim")
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
            let successor = try ServiceProcess("matcher-worker", environment: env, name: "successor")
            defer { successor.terminate() }
            let statuses = try await logins.value
            #expect(statuses.count == photos.count)
            #expect(statuses.allSatisfy { $0 == "CONFIRM_REQUIRED" }, "\(statuses)")
        }
    }
}
