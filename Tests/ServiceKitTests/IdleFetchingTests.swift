import FaceGateCore
import FaceGateTestSupport
import Foundation
import KafkaClient
import PostgresClient
import ServiceKit
import Synchronization
import Testing

/// The job consumer's idle pause over a twin of librdkafka's pause and resume, on a clock the test moves: when it stops
/// fetching, what a ring, a lost doorbell and a new assignment do, and the watermark check that finds a job whose ring
/// never came. Against the broker, PostgreSQL and the matcher: IntegrationTests' IdleFetchingTests.
@Suite struct IdleFetchingTests {
    let source = PausableQueue(partitions: [0, 1])
    let idle: IdleFetching

    init() {
        idle = IdleFetching(source: source, pauseAfter: .seconds(2), checkInterval: .seconds(10), logger: Logger(label: "test", level: .error),
                            metrics: MetricsRegistry())
        idle.sweep()  // takes in the first assignment
    }

    func ring(_ partition: Int32) {
        idle.heard(.notification(PostgresNotification(channel: JobDoorbell.channel, payload: "\(partition):\(PausableQueue.topic)")))
    }

    var paused: Set<Int32> { Set(idle.pausedPartitions.map(\.partition)) }

    @Test func anIdleConsumerStopsFetchingAndARingFetchesThePartitionItNamesFromWhereReadingStopped() {
        idle.heard(.connected)
        idle.sweep(now: .now + .seconds(1))
        #expect(paused.isEmpty, "idle for 1 s of 2")
        idle.sweep(now: .now + .milliseconds(2100))
        #expect(paused == [0, 1])
        ring(1)
        #expect(paused == [0] && source.resumed == [PausableQueue.partition(1): [.exact(41)]])
        ring(7)  // not assigned here: nothing happens
        #expect(paused == [0])
    }

    @Test func nothingPausesWhileAJobIsInFlightNorUntilTwoSecondsAfterItFinished() {
        idle.heard(.connected)
        idle.began()
        idle.sweep(now: .now + .seconds(60))
        #expect(paused.isEmpty, "a job in flight")
        idle.finished()
        idle.sweep(now: .now + .seconds(1))
        #expect(paused.isEmpty)
        idle.sweep(now: .now + .milliseconds(2100))
        #expect(paused == [0, 1])
    }

    @Test func withoutTheDoorbellNothingStaysPaused() {
        idle.sweep(now: .now + .seconds(60))
        #expect(paused.isEmpty, "the doorbell was never heard")
        idle.heard(.connected)
        idle.sweep(now: .now + .seconds(3))
        #expect(paused == [0, 1])
        idle.heard(.disconnected(PostgresError(kind: .connection, message: "server closed the connection")))
        #expect(paused.isEmpty && source.resumed.count == 2, "the lost doorbell resumes every partition")
        idle.sweep(now: .now + .seconds(60))
        #expect(paused.isEmpty)
    }

    @Test func aNewAssignmentClearsThePausesWithoutMovingThePosition() {
        idle.heard(.connected)
        idle.sweep(now: .now + .seconds(3))
        #expect(paused == [0, 1])
        source.reassign([1, 2])
        idle.sweep(now: .now + .seconds(3))
        #expect(paused.isEmpty && source.resumedAsAssigned == [[0, 1], [1, 2]], "resumed as assigned, at the committed offsets")
        #expect(source.resumed.isEmpty, "no seek")
        idle.sweep(now: .now + .seconds(3))
        #expect(paused.isEmpty, "the new assignment has its own 2 s")
        idle.sweep(now: .now + .seconds(5))
        #expect(paused == [1, 2])
    }

    /// Pausing asks the broker outside the lock; a ring heard meanwhile, though its partition was not paused yet, has what
    /// was just paused fetched again.
    @Test func aRingHeardWhilePartitionsAreBeingPausedFetchesThemAgain() {
        idle.heard(.connected)
        source.whilePausing = { [idle] in
            idle.heard(.notification(PostgresNotification(channel: JobDoorbell.channel, payload: "0:\(PausableQueue.topic)")))
        }
        idle.sweep(now: .now + .seconds(3))
        #expect(paused.isEmpty)
        #expect(source.resumed == [PausableQueue.partition(0): [.exact(41)], PausableQueue.partition(1): [.exact(41)]])
    }

    @Test func aJobThatCameWithoutItsRingIsFoundByTheWatermarkCheck() {
        idle.heard(.connected)
        let pausedAt = ContinuousClock.now + .seconds(3)
        idle.sweep(now: pausedAt)
        source.arrive(on: 0)
        idle.sweep(now: pausedAt + .seconds(9))
        #expect(paused == [0, 1], "checked every 10 s")
        idle.sweep(now: pausedAt + .seconds(10))
        #expect(paused == [1] && source.resumed == [PausableQueue.partition(0): [.exact(41)]])
    }
}

/// Partitions of one topic that pause and resume as librdkafka's do, recording each call; every pause answers offset 41.
final class PausableQueue: PausableJobSource {
    static let topic = "face.jobs.v1"
    static func partition(_ number: Int32) -> KafkaTopicPartition { KafkaTopicPartition(topic: topic, partition: number) }

    private struct State {
        var assignment: [KafkaTopicPartition]
        var generation = 1
        var resumed: [KafkaTopicPartition: [KafkaOffset]] = [:]
        var resumedAsAssigned: [[Int32]] = []
        var arrived: Set<KafkaTopicPartition> = []
    }
    private let state: Mutex<State>
    /// Runs inside each `pauseIdle`, as a ring or a job arriving while the broker is asked would.
    nonisolated(unsafe) var whilePausing: (@Sendable () -> Void)?

    init(partitions: [Int32]) { state = Mutex(State(assignment: partitions.map(Self.partition))) }

    var resumed: [KafkaTopicPartition: [KafkaOffset]] { state.withLock { $0.resumed } }
    var resumedAsAssigned: [[Int32]] { state.withLock { $0.resumedAsAssigned } }
    func reassign(_ partitions: [Int32]) { state.withLock { $0.assignment = partitions.map(Self.partition); $0.generation += 1 } }
    func arrive(on partition: Int32) { _ = state.withLock { $0.arrived.insert(Self.partition(partition)) } }

    var assignment: [KafkaTopicPartition] { state.withLock { $0.assignment } }
    var assignmentGeneration: Int { state.withLock { $0.generation } }
    func pauseIdle(_ partition: KafkaTopicPartition) throws -> KafkaOffset {
        whilePausing?()
        return .exact(41)
    }
    func resume(_ partition: KafkaTopicPartition, from offset: KafkaOffset) throws {
        state.withLock { $0.resumed[partition, default: []].append(offset) }
    }
    func resumeAsAssigned(_ partitions: [KafkaTopicPartition]) throws {
        state.withLock { $0.resumedAsAssigned.append(partitions.map(\.partition)) }
    }
    func hasMessages(_ partition: KafkaTopicPartition, from offset: KafkaOffset) throws -> Bool {
        state.withLock { $0.arrived.contains(partition) }
    }

    func subscribe(_ topics: [String]) throws {}
    func messages() -> AsyncThrowingStream<KafkaMessage, any Error> { AsyncThrowingStream { nil } }
    func storeOffset(_ message: KafkaMessage) throws {}
    func lag() async throws -> [(partition: KafkaTopicPartition, messages: Int64)] { [] }
    func waitForAssignment(timeout: Duration) async throws {}
    func close() {}
}
