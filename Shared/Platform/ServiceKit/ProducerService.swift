import KafkaClient

/// Closes the producer last, after everything that sends has stopped, so queued replies are delivered.
public final class ProducerService: Service {
    public let name = "kafka-producer"
    private let producer: KafkaProducer
    public init(producer: KafkaProducer) { self.producer = producer }
    public func run(_ context: ServiceContext) async throws {
        context.ready()
        await context.shutdownRequested()
        _ = producer.flush(timeoutMilliseconds: 5000)
        producer.close()
    }
}
