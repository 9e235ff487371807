import Foundation
import KafkaClient
import Synchronization

// `facegate-bench kafka [--brokers H:P] [--requests N] [--concurrency C] [--payload-bytes B]
//                      [--property key=value]... [--results FILE | --no-results]`
//
// Request→reply round trips through a real broker: a KafkaRequester sends a job, an echo responder
// (its own consumer and producer, as a worker process would have) answers on the requester's reply
// partition. Measures sequential and concurrent latency, plus the bare produce→delivery-report time.
func runKafkaBenchmark(arguments: [String]) async throws {
    let options = try KafkaBenchmarkOptions(arguments)
    let loadBefore = Bench.loadAverage()
    var configuration = KafkaConfiguration(brokers: options.brokers, clientId: "facegate-bench")
    configuration.properties = options.properties
    configuration.logHandler = { event in
        if event.level <= 3 { print("librdkafka \(event.clientName) \(event.facility): \(event.message)") }
    }
    let runId = UUID().uuidString.prefix(8).lowercased()
    let jobsTopic = "bench.jobs.\(runId)"
    let replyTopic = "bench.replies.\(runId)"
    let ackTopic = "bench.acks.\(runId)"
    try await KafkaAdmin.ensureTopics(
        [jobsTopic, replyTopic, ackTopic].map { KafkaTopicSpec(name: $0, partitions: 1) },
        configuration: configuration)

    let responder = try BenchmarkEchoResponder(configuration: configuration, jobsTopic: jobsTopic)
    let producer = try KafkaProducer(configuration: configuration)
    let requester = KafkaRequester(
        configuration: configuration, replyTopic: replyTopic, lease: InProcessReplyPartitionLease(),
        owner: "bench-\(runId)", producer: producer)
    try await requester.start()

    let payload = [UInt8](repeating: 0x5a, count: options.payloadBytes)
    @Sendable func roundTrip() async throws -> Duration {
        let id = UUID().uuidString
        let started = ContinuousClock.now
        let replies = try await requester.request(correlationId: id, deadline: started + .seconds(10)) { address in
            KafkaRecord(
                topic: jobsTopic, key: Array(id.utf8), value: payload,
                headers: [
                    KafkaHeader(key: BenchmarkEchoResponder.replyTopicHeader, value: address.topic),
                    KafkaHeader(key: BenchmarkEchoResponder.replyPartitionHeader, value: String(address.partition)),
                ])
        }
        precondition(replies.count == 1 && replies[0].value.count == payload.count)
        return ContinuousClock.now - started
    }

    print("kafka benchmark: \(options.requests) requests, payload \(options.payloadBytes) B, broker \(options.brokers)")
    for _ in 0..<min(100, options.requests) { _ = try await roundTrip() }  // warm-up: connections, fetch sessions

    var rows: [LatencySummary] = []

    var produceOnly: [Duration] = []
    for _ in 0..<options.requests {
        let started = ContinuousClock.now
        _ = try await producer.send(KafkaRecord(topic: ackTopic, key: nil, value: payload))
        produceOnly.append(ContinuousClock.now - started)
    }
    rows.append(LatencySummary(label: "produce → delivery report, sequential", samples: produceOnly, wall: nil))

    var sequential: [Duration] = []
    let sequentialStart = ContinuousClock.now
    for _ in 0..<options.requests { sequential.append(try await roundTrip()) }
    rows.append(
        LatencySummary(label: "request → reply, sequential", samples: sequential, wall: ContinuousClock.now - sequentialStart))

    let concurrentStart = ContinuousClock.now
    let concurrent = try await withThrowingTaskGroup(of: [Duration].self) { group in
        let perWorker = options.requests / options.concurrency
        for _ in 0..<options.concurrency {
            group.addTask {
                var samples: [Duration] = []
                for _ in 0..<perWorker { samples.append(try await roundTrip()) }
                return samples
            }
        }
        var all: [Duration] = []
        for try await samples in group { all += samples }
        return all
    }
    rows.append(
        LatencySummary(
            label: "request → reply, \(options.concurrency) concurrent", samples: concurrent,
            wall: ContinuousClock.now - concurrentStart))

    for row in rows { print(row.line) }

    await requester.shutdown()
    responder.stop()
    producer.close()

    if let resultsPath = options.resultsPath {
        try appendKafkaResults(rows: rows, options: options, loadBefore: loadBefore, path: resultsPath)
        print("appended to \(resultsPath)")
    }
}

private struct KafkaBenchmarkOptions {
    var brokers = ProcessInfo.processInfo.environment["FACEGATE_TEST_KAFKA_BROKERS"] ?? "127.0.0.1:59092"
    var requests = 2000
    var concurrency = 32
    var payloadBytes = 256
    var resultsPath: String? = "Benchmarks/RESULTS.md"
    /// Extra librdkafka properties for every client (`--property key=value`, repeatable).
    var properties: [String: String] = [:]

    struct BadArgument: Error, CustomStringConvertible {
        var description: String
    }

    init(_ arguments: [String]) throws {
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            guard flag == "--no-results" || !remaining.isEmpty else { throw BadArgument(description: "\(flag) needs a value") }
            switch flag {
            case "--brokers": brokers = remaining.removeFirst()
            case "--requests": requests = try Self.positive(remaining.removeFirst(), flag)
            case "--concurrency": concurrency = try Self.positive(remaining.removeFirst(), flag)
            case "--payload-bytes": payloadBytes = try Self.positive(remaining.removeFirst(), flag)
            case "--results": resultsPath = remaining.removeFirst()
            case "--no-results": resultsPath = nil
            case "--property":
                let pair = remaining.removeFirst().split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2 else { throw BadArgument(description: "--property needs key=value") }
                properties[pair[0]] = pair[1]
            default:
                throw BadArgument(
                    description: "unknown option \(flag); use --brokers, --requests, --concurrency, --payload-bytes, --property, --results, --no-results")
            }
        }
    }

    var propertiesNote: String {
        properties.isEmpty ? "" : "; overridden: " + properties.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
    }

    private static func positive(_ text: String, _ flag: String) throws -> Int {
        guard let value = Int(text), value > 0 else { throw BadArgument(description: "\(flag) needs a positive number") }
        return value
    }
}

/// The worker side: reads jobs on a thread of its own and echoes each one to the reply address
/// named in its headers.
private final class BenchmarkEchoResponder: Sendable {
    static let replyTopicHeader = "reply.topic"
    static let replyPartitionHeader = "reply.partition"

    private let consumer: KafkaConsumer
    private let producer: KafkaProducer
    private let stopped = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)

    init(configuration: KafkaConfiguration, jobsTopic: String) throws {
        consumer = try KafkaConsumer(configuration: configuration, groupId: nil)
        producer = try KafkaProducer(configuration: configuration)
        try consumer.assign([(KafkaTopicPartition(topic: jobsTopic, partition: 0), .beginning)])
        let thread = Thread { [self] in
            defer { exited.signal() }
            while !stopped.load(ordering: .acquiring) {
                guard let job = try? consumer.poll(timeoutMilliseconds: 100) else { continue }
                guard let topic = job.header(Self.replyTopicHeader),
                    let partition = job.header(Self.replyPartitionHeader).flatMap({ Int32(String(decoding: $0, as: UTF8.self)) }),
                    let correlationId = job.keyString
                else { continue }
                let reply = replyRecord(
                    to: ReplyAddress(topic: String(decoding: topic, as: UTF8.self), partition: partition),
                    correlationId: correlationId, value: job.value)
                Task { [producer] in _ = try? await producer.send(reply) }
            }
        }
        thread.name = "bench-echo-responder"
        thread.start()
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        exited.wait()
        consumer.close()
        producer.close()
    }
}

private struct LatencySummary {
    var label: String
    var count: Int
    var p50, p90, p99, max, mean: Double  // milliseconds
    var throughput: Double?  // requests per second over the run's wall time

    init(label: String, samples: [Duration], wall: Duration?) {
        let milliseconds = samples.map { Double($0.components.seconds) * 1e3 + Double($0.components.attoseconds) * 1e-15 }
            .sorted()
        func percentile(_ p: Double) -> Double {
            milliseconds[Int((p * Double(milliseconds.count - 1)).rounded())]
        }
        self.label = label
        count = milliseconds.count
        p50 = percentile(0.50)
        p90 = percentile(0.90)
        p99 = percentile(0.99)
        max = milliseconds.last ?? 0
        mean = milliseconds.reduce(0, +) / Double(Swift.max(1, count))
        throughput = wall.map { Double(count) / (Double($0.components.seconds) + Double($0.components.attoseconds) * 1e-18) }
    }

    var line: String {
        "\(label): n=\(count) p50=\(fmt(p50)) ms p90=\(fmt(p90)) ms p99=\(fmt(p99)) ms max=\(fmt(max)) ms"
            + (throughput.map { " \(Int($0)) req/s" } ?? "")
    }

    var tableRow: String {
        "| \(label) | \(count) | \(fmt(p50)) | \(fmt(p90)) | \(fmt(p99)) | \(fmt(max)) | \(throughput.map { String(Int($0)) } ?? "–") |"
    }

    private func fmt(_ value: Double) -> String { String(format: "%.2f", value) }
}

private func appendKafkaResults(
    rows: [LatencySummary], options: KafkaBenchmarkOptions, loadBefore: String, path: String
) throws {
    let heading = "## Kafka request–reply round trip (KafkaClient, Swift)"
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    var block = """

        ### \(formatter.string(from: Date())) — \(Bench.machine())
        librdkafka \(KafkaLibrary.version) at run time; broker \(options.brokers) (tansu, in-memory, same machine); \
        payload \(options.payloadBytes) B; load average before the run \(loadBefore); requester: KafkaRequester (one reply partition, assign at end), \
        responder: KafkaConsumer + KafkaProducer echo thread; defaults: fetch.wait.max.ms=5, linger.ms=0, \
        enable.idempotence=true, socket.nagle.disable=true\(options.propertiesNote).

        | run | requests | p50 ms | p90 ms | p99 ms | max ms | req/s |
        | --- | --- | --- | --- | --- | --- | --- |

        """
    for row in rows { block += row.tableRow + "\n" }

    var text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "# FaceGate benchmark results\n"
    if let headingRange = text.range(of: heading + "\n") {
        // Insert at the end of this benchmark's section (before the next top-level heading).
        let rest = text[headingRange.upperBound...]
        let insertAt = rest.range(of: "\n## ")?.lowerBound ?? text.endIndex
        text.insert(contentsOf: block, at: insertAt)
    } else {
        if !text.hasSuffix("\n") { text += "\n" }
        text += "\n" + heading + "\n" + block
    }
    try text.write(toFile: path, atomically: true, encoding: .utf8)
}

