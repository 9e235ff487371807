import FaceGateCore
import Foundation
import KafkaClient
import PostgresClient
import Synchronization

/// The job topics' doorbell: a PostgreSQL `NOTIFY` naming a partition that has just been given a job.
///
/// A job consumer that has had nothing to do for `FACEGATE_KAFKA_JOB_PAUSE_MS` stops fetching (`IdleFetching`): a broker
/// that holds every fetch for its whole wait (the local tansu) then answers no empty fetches. Every requester rings
/// after a delivery to a partition it has delivered nothing to for `quiet`, and a paused consumer that hears the ring
/// fetches that partition again at once. A consumer pauses only after twice `quiet`, so a job that came without a ring
/// followed one of the same requester's that kept the partition fetched until it was read. The ring carries no data: a
/// stranger who can `NOTIFY` costs fetches, nothing more; and a partition whose ring was lost is found by a watermark
/// check every `IdleFetching.checkInterval`.
public enum JobDoorbell {
    public static let channel = "facegate_job_doorbell"
    /// A requester rings for a partition it has delivered nothing to for this long.
    public static let quiet = Duration.seconds(1)
    /// The shortest idle time after which a consumer may stop fetching.
    public static let shortestPause = quiet * 2

    static func payload(_ partition: KafkaTopicPartition) -> String { "\(partition.partition):\(partition.topic)" }

    static func partition(from payload: String) -> KafkaTopicPartition? {
        guard let colon = payload.firstIndex(of: ":"), let number = Int32(payload[..<colon]) else { return nil }
        return KafkaTopicPartition(topic: String(payload[payload.index(after: colon)...]), partition: number)
    }
}

/// A requester's side of the doorbell: rings, off the request's path, for each partition given a job after `quiet`.
final class DoorbellRinger: Sendable {
    private let database: PostgresPool
    private let background: BackgroundWork
    private let logger: Logger
    private let rings: Counter
    private let lastDelivery = Mutex<[KafkaTopicPartition: ContinuousClock.Instant]>([:])

    init(runtime: ServiceRuntime) {
        database = runtime.database
        background = runtime.background
        logger = runtime.logger
        rings = runtime.metrics.counter("facegate_job_doorbell_rings_total",
                                        help: "Doorbell rings sent after a job reached a partition that had been quiet, by topic and outcome")
    }

    /// A job reached `partition`.
    func delivered(_ partition: KafkaTopicPartition) {
        let now = ContinuousClock.now
        let quiet = lastDelivery.withLock { last in
            defer { last[partition] = now }
            return last[partition].map { now - $0 >= JobDoorbell.quiet } ?? true
        }
        guard quiet else { return }
        background.submit { [self] in await ring(partition) }
    }

    /// Rings, trying again for a while: a ring that never sounds leaves the job to the consumer's watermark check.
    private func ring(_ partition: KafkaTopicPartition) async {
        let payload = JobDoorbell.payload(partition)
        for attempt in 1...5 {
            do {
                try await database.notify(channel: JobDoorbell.channel, payload: payload)
                rings.increment(["topic": partition.topic, "outcome": "rung"])
                return
            } catch {
                if attempt == 5 {
                    rings.increment(["topic": partition.topic, "outcome": "failed"])
                    logger.warning("job doorbell not rung", ["kafka.topic": partition.topic, "error": "\(error)"])
                    return
                }
                try? await Task.sleep(for: .milliseconds(200 * attempt))
            }
        }
    }
}

/// What `IdleFetching` pauses and resumes (`KafkaConsumer`; a twin in tests).
public protocol PausableJobSource: JobSource {
    var assignment: [KafkaTopicPartition] { get }
    var assignmentGeneration: Int { get }
    func pauseIdle(_ partition: KafkaTopicPartition) throws -> KafkaOffset
    func resume(_ partition: KafkaTopicPartition, from offset: KafkaOffset) throws
    func resumeAsAssigned(_ partitions: [KafkaTopicPartition]) throws
    func hasMessages(_ partition: KafkaTopicPartition, from offset: KafkaOffset) throws -> Bool
}

extension KafkaConsumer: PausableJobSource {}

/// A job consumer's idle pause: once it has had no job, finished none and heard no ring for `pauseAfter`, with none in
/// flight, it stops fetching its partitions; a ring for one of them (`JobDoorbell`) fetches it again from where reading
/// stopped. While the doorbell is not heard (its connection lost) nothing stays paused. A new assignment clears every
/// pause. Every `checkInterval` the paused partitions' watermarks are asked for a job that came without its ring.
public final class IdleFetching: Sendable {
    private struct State {
        var generation = -1
        var lastActivity = ContinuousClock.now
        var inFlight = 0
        var paused: [KafkaTopicPartition: KafkaOffset] = [:]
        var hearing = false
        var lastCheck = ContinuousClock.now
    }

    private let source: any PausableJobSource
    private let pauseAfter: Duration
    let checkInterval: Duration
    private let logger: Logger
    private let wakeups: Counter
    private let state = Mutex(State())
    private let started = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)

    public init(source: any PausableJobSource, pauseAfter: Duration, checkInterval: Duration = .seconds(10),
                logger: Logger, metrics: MetricsRegistry) {
        self.source = source
        self.pauseAfter = max(pauseAfter, JobDoorbell.shortestPause)
        self.checkInterval = checkInterval
        self.logger = logger
        wakeups = metrics.counter("facegate_job_wakeups_total",
                                  help: "Idle-paused job partitions fetched again, by topic and cause (doorbell, watermark, doorbell_lost)")
        metrics.gauge("facegate_job_partitions_paused", help: "Job partitions not fetched for want of jobs") { [weak self] in
            Double(self?.pausedPartitions.count ?? 0)
        }
    }

    /// Sweeps every 100 ms on a thread of its own (pausing and the watermark check ask the broker and block) until `stop`.
    public func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            while !stopped.load(ordering: .acquiring) {
                sweep()
                Thread.sleep(forTimeInterval: 0.1)
            }
            exited.signal()
        }
        thread.name = "idle-fetching"
        thread.start()
    }

    /// Ends the sweeping started by `start` and waits for it.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing), started.load(ordering: .acquiring) else { return }
        exited.wait()
    }

    /// The partitions not fetched now.
    public var pausedPartitions: [KafkaTopicPartition] { state.withLock { Array($0.paused.keys) } }

    /// A job was taken (the consumer loop calls it) …
    public func began() { state.withLock { $0.inFlight += 1; $0.lastActivity = .now } }
    /// … and is done.
    public func finished() { state.withLock { $0.inFlight -= 1; $0.lastActivity = .now } }

    /// What the doorbell's listener heard.
    public func heard(_ event: PostgresListener.Event) {
        switch event {
        case .connected:
            state.withLock { $0.hearing = true; $0.lastActivity = .now }
        case .disconnected:
            state.withLock { state in
                guard state.hearing || !state.paused.isEmpty else { return }
                state.hearing = false
                resumeAll(&state, cause: "doorbell_lost")
            }
        case .notification(let notification):
            guard let partition = JobDoorbell.partition(from: notification.payload), source.assignment.contains(partition) else { return }
            state.withLock { state in
                state.lastActivity = .now
                guard let offset = state.paused[partition] else { return }
                resume(partition, from: offset, &state, cause: "doorbell")
            }
        }
    }

    /// Pauses or resumes as the state says; call it often (every 100 ms). What asks the broker (the watermark check, a
    /// pause's committed-offset lookup) runs outside the lock, so rings and the job loop never wait for it.
    public func sweep(now: ContinuousClock.Instant = .now) {
        let decided = state.withLock { state -> (check: [(KafkaTopicPartition, KafkaOffset)], pause: [KafkaTopicPartition], activity: ContinuousClock.Instant)? in
            let generation = source.assignmentGeneration
            if generation != state.generation {
                // A new assignment starts at the committed offsets; whatever was paused is fetched again from there.
                do { try source.resumeAsAssigned(source.assignment) } catch {
                    logFailure("resume", error)
                    return nil
                }
                state.generation = generation
                state.paused = [:]
                state.lastActivity = now
            }
            var check: [(KafkaTopicPartition, KafkaOffset)] = []
            if !state.paused.isEmpty, now - state.lastCheck >= checkInterval {
                state.lastCheck = now
                check = Array(state.paused)
            }
            let idle = state.hearing && state.inFlight == 0 && now - state.lastActivity >= pauseAfter
            return (check, idle ? source.assignment.filter { state.paused[$0] == nil } : [], state.lastActivity)
        }
        guard let decided else { return }
        let arrived = decided.check.filter { (try? source.hasMessages($0.0, from: $0.1)) == true }
        var pausedNow: [(KafkaTopicPartition, KafkaOffset)] = []
        for partition in decided.pause {
            do { pausedNow.append((partition, try source.pauseIdle(partition))) } catch {
                logFailure("pause", error)
                break
            }
        }
        state.withLock { state in
            for (partition, offset) in arrived where state.paused[partition] == offset {
                logger.warning("a job came without its doorbell", ["kafka.topic": partition.topic, "kafka.partition": String(partition.partition)])
                resume(partition, from: offset, &state, cause: "watermark")
                state.lastActivity = now
            }
            // A job or a ring since the decision: what was just paused is fetched again at once.
            let active = state.lastActivity != decided.activity
            for (partition, offset) in pausedNow {
                if active {
                    do {
                        try source.resume(partition, from: offset)
                        continue
                    } catch {
                        logFailure("resume", error)
                    }
                }
                state.paused[partition] = offset
                state.lastCheck = now
            }
        }
    }

    private func resumeAll(_ state: inout State, cause: String) {
        for (partition, offset) in state.paused { resume(partition, from: offset, &state, cause: cause) }
    }

    private func resume(_ partition: KafkaTopicPartition, from offset: KafkaOffset, _ state: inout State, cause: String) {
        do {
            try source.resume(partition, from: offset)
            state.paused[partition] = nil
            wakeups.increment(["topic": partition.topic, "cause": cause])
        } catch {
            logFailure("resume", error)
        }
    }

    private func logFailure(_ action: String, _ error: any Error) {
        if (error as? KafkaError)?.isClosed == true { return }  // shutting down
        logger.warning("idle \(action) failed", ["error": "\(error)"])
    }
}
