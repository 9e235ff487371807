import FaceGateTestSupport
import ServiceKit
import Testing

/// The broker waits every service reads: a reply partition waits as long as a job topic unless told otherwise.
@Suite struct ConfigurationTests {
    func configuration(_ overrides: [String: String]) throws -> CommonConfiguration {
        let values = OfflineServiceEnvironment().values(for: "auth-gateway").merging(overrides) { _, new in new }
        return try CommonConfiguration(serviceName: "auth-gateway", defaultAdminPort: 0, environment: Environment(values))
    }

    @Test func replyFetchWaitFollowsTheFetchWaitUnlessSet() throws {
        let plain = try configuration(["FACEGATE_KAFKA_FETCH_WAIT_MS": "25"])
        #expect(plain.kafkaFetchWaitMilliseconds == 25 && plain.kafkaReplyFetchWaitMilliseconds == 25)
        let short = try configuration(["FACEGATE_KAFKA_FETCH_WAIT_MS": "25", "FACEGATE_KAFKA_REPLY_FETCH_WAIT_MS": "5"])
        #expect(short.kafkaFetchWaitMilliseconds == 25 && short.kafkaReplyFetchWaitMilliseconds == 5)
        for refused in ["0", "5001", "soon"] {
            #expect(throws: ConfigurationError.self) { try configuration(["FACEGATE_KAFKA_REPLY_FETCH_WAIT_MS": refused]) }
        }
    }
}
