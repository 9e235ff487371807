import Foundation
import MatcherWorker
import PostgresClient
import ServiceKit
import Testing

/// An idle matcher stops fetching its job partitions (the local broker then answers no empty fetches) and a login
/// wakes it through the job doorbell: the gateway's PostgreSQL NOTIFY once the job is on its partition. Real broker,
/// PostgreSQL, matcher and photos; the pause's rules on a twin: ServiceKitTests' IdleFetchingTests.
@Suite(.serialized) struct IdleFetchingTests {
    @Test func anIdleMatcherStopsFetchingAndALoginRingsItAwake() async throws {
        try await TestStack.with(extra: ["FACEGATE_KAFKA_JOB_PAUSE_MS": "2000"]) { stack in
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "I1", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: user, photo: "obama.jpg").status == 201)
            let token = try await stack.accessToken(app)
            #expect(try await stack.faceLogin(token, device: "idle-1", photo: "obama2.jpg").status == 200)

            let matcher = try #require(stack.matcher)
            let idle = try #require(matcher.jobs.idle, "FACEGATE_KAFKA_JOB_PAUSE_MS sets the idle pause")
            let deadline = ContinuousClock.now + .seconds(15)
            while idle.pausedPartitions.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
            let paused = idle.pausedPartitions.count
            #expect(paused > 0, "the matcher still fetches after 15 s without a job")
            #expect(matcher.wakeups(cause: "doorbell") == 0)

            // Well inside the gateway's request timeout: the ring, not the 10 s watermark check, brought the job in.
            let started = ContinuousClock.now
            let login = try await stack.faceLogin(token, device: "idle-1", photo: "obama2.jpg")
            #expect(login.status == 200)
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(matcher.wakeups(cause: "doorbell") >= 1 && matcher.wakeups(cause: "watermark") == 0)
            #expect(idle.pausedPartitions.count < paused, "the login's partition is fetched again")
        }
    }
}

extension MatcherWorker {
    /// Idle-paused job partitions this matcher fetched again for `cause` (`facegate_job_wakeups_total`).
    func wakeups(cause: String) -> Double {
        runtime.metrics.render().split(separator: "\n")
            .filter { $0.hasPrefix("facegate_job_wakeups_total{") && $0.contains("cause=\"\(cause)\"") }
            .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
    }
}
