import KafkaClient

/// Closes the producer last, after everything that sends has stopped, so queued replies are delivered.
public final class ProducerService: Service {
    public let name = "kafka-producer"
    private let producer: KafkaProducer
    public init(producer: KafkaProducer) { self.producer = producer }
    public func start() async throws {}
    public func shutdown() async {
        _ = producer.flush(timeoutMilliseconds: 5000)
        producer.close()
    }
}
