internal import CKafka

/// A topic to create.
public struct KafkaTopicSpec: Sendable {
    public var name: String
    public var partitions: Int
    /// -1: the broker's `default.replication.factor`.
    public var replicationFactor: Int
    /// Topic configuration, e.g. `cleanup.policy=compact`.
    public var config: [String: String]

    public init(name: String, partitions: Int, replicationFactor: Int = -1, config: [String: String] = [:]) {
        self.name = name
        self.partitions = partitions
        self.replicationFactor = replicationFactor
        self.config = config
    }
}

/// Topic administration through librdkafka's admin API.
public enum KafkaAdmin {
    /// Creates the topics that do not exist yet (CreateTopics; an existing topic is left as it is) and returns
    /// the names of those it created.
    @discardableResult
    public static func ensureTopics(
        _ topics: [KafkaTopicSpec], configuration: KafkaConfiguration, timeoutMilliseconds: Int = 30_000
    ) async throws(KafkaError) -> [String] {
        guard !topics.isEmpty else { return [] }
        return try await runOnDedicatedThread(name: "kafka-admin") { () throws(KafkaError) in
            try createTopics(topics, configuration: configuration, timeoutMilliseconds: timeoutMilliseconds)
        }
    }

    /// The topic's partition count from broker metadata, asked on a thread of its own (never the caller's:
    /// the lookup blocks for up to `timeoutMilliseconds` while the broker is away).
    public static func partitionCount(
        topic: String, configuration: KafkaConfiguration, timeoutMilliseconds: Int = 10_000
    ) async throws(KafkaError) -> Int {
        try await runOnDedicatedThread(name: "kafka-metadata") { () throws(KafkaError) in
            try blockingPartitionCount(topic: topic, configuration: configuration, timeoutMilliseconds: timeoutMilliseconds)
        }
    }

    static func blockingPartitionCount(
        topic: String, configuration: KafkaConfiguration, timeoutMilliseconds: Int
    ) throws(KafkaError) -> Int {
        // A consumer-type handle never asks the broker to auto-create the topic it looks up.
        let client = try RDKafkaClient(
            kind: .consumer,
            properties: configuration.librdkafkaProperties(for: .admin, defaults: ["allow.auto.create.topics": "false"]),
            context: RDKafkaClientContext(configuration: configuration))
        guard let topicHandle = rd_kafka_topic_new(client.handle, topic, nil) else {
            throw KafkaError(rd_kafka_last_error(), detail: "topic \(topic)")
        }
        defer { rd_kafka_topic_destroy(topicHandle) }
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(client.handle, 0, topicHandle, &metadata, Int32(clamping: timeoutMilliseconds))
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else { throw KafkaError(err, detail: "metadata for \(topic)") }
        defer { rd_kafka_metadata_destroy(metadata) }
        let topics = UnsafeBufferPointer(start: metadata.pointee.topics, count: Int(metadata.pointee.topic_cnt))
        guard let entry = topics.first(where: { String(cString: $0.topic) == topic }) else {
            throw KafkaError(RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, detail: topic)
        }
        guard entry.err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(entry.err, detail: topic) }
        return Int(entry.partition_cnt)
    }

    private static func createTopics(
        _ topics: [KafkaTopicSpec], configuration: KafkaConfiguration, timeoutMilliseconds: Int
    ) throws(KafkaError) -> [String] {
        let client = try RDKafkaClient(
            kind: .producer, properties: configuration.librdkafkaProperties(for: .admin, defaults: [:]),
            context: RDKafkaClientContext(configuration: configuration))
        var errstr = [CChar](repeating: 0, count: 512)

        var newTopics: [OpaquePointer?] = []
        defer { for topic in newTopics { rd_kafka_NewTopic_destroy(topic) } }
        for spec in topics {
            guard let newTopic = rd_kafka_NewTopic_new(
                spec.name, Int32(clamping: spec.partitions), Int32(clamping: spec.replicationFactor),
                &errstr, errstr.count)
            else { throw KafkaError.invalidArgument("topic \(spec.name): \(cErrorText(errstr))") }
            newTopics.append(newTopic)
            for (key, value) in spec.config {
                let err = rd_kafka_NewTopic_set_config(newTopic, key, value)
                guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err, detail: "\(spec.name) \(key)") }
            }
        }

        let options = rd_kafka_AdminOptions_new(client.handle, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        let timeout = Int32(clamping: timeoutMilliseconds)
        _ = rd_kafka_AdminOptions_set_request_timeout(options, timeout, &errstr, errstr.count)
        _ = rd_kafka_AdminOptions_set_operation_timeout(options, timeout, &errstr, errstr.count)

        let queue = rd_kafka_queue_new(client.handle)
        defer { rd_kafka_queue_destroy(queue) }
        newTopics.withUnsafeMutableBufferPointer { buffer in
            rd_kafka_CreateTopics(client.handle, buffer.baseAddress, buffer.count, options, queue)
        }
        // The request itself times out after `timeout`; the margin covers librdkafka's own bookkeeping.
        guard let event = rd_kafka_queue_poll(queue, timeout + 5_000) else { throw KafkaError.timedOut }
        defer { rd_kafka_event_destroy(event) }
        let eventError = rd_kafka_event_error(event)
        guard eventError == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(eventError, detail: rd_kafka_event_error_string(event).map { String(cString: $0) })
        }
        guard let result = rd_kafka_event_CreateTopics_result(event) else {
            throw KafkaError.invalidArgument("unexpected admin event")
        }
        var count = 0
        guard let results = rd_kafka_CreateTopics_result_topics(result, &count) else { return [] }
        var created: [String] = []
        for index in 0..<count {
            let topicResult = results[index]
            let err = rd_kafka_topic_result_error(topicResult)
            let name = rd_kafka_topic_result_name(topicResult).map { String(cString: $0) } ?? "?"
            if err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS { continue }
            if err == RD_KAFKA_RESP_ERR_NO_ERROR {
                created.append(name)
                continue
            }
            let text = rd_kafka_topic_result_error_string(topicResult).map { String(cString: $0) } ?? ""
            throw KafkaError(err, detail: "topic \(name): \(text)")
        }
        return created
    }
}
