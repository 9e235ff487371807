import FaceEngine
import FaceGateCore
import Foundation
import KafkaClient
import ServiceKit
import Synchronization

/// A matcher-worker process: admin endpoints, the gallery (loaded, then kept in step), and a member of
/// the face-jobs consumer group. Add replicas for throughput; add shards for galleries larger than one machine.
public final class MatcherWorker: Sendable {
    public let runtime: ServiceRuntime
    public let group: ServiceGroup
    public let admin: AdminServer
    let gallery: GallerySync
    public let jobs: JobConsumer
    let producer: KafkaProducer

    public init(configuration: MatcherConfiguration) throws {
        let runtime = try ServiceRuntime(configuration: configuration.common)
        self.runtime = runtime
        let sealer = try Sealer(key: configuration.sealingKey, previous: configuration.previousSealingKeys)
        var engines: [FaceModel: FaceEnginePool] = [:]
        FaceEngine.setLoneAnalysisThreads(configuration.loneJobThreads)
        for model in configuration.models {
            var engineConfiguration = FaceEngineConfiguration(modelDirectory: configuration.modelDirectory)
            engineConfiguration.maxPixels = configuration.maxPixels
            engineConfiguration.model = switch model {
            case .dlibResNetV1: .dlibResNetV1
            case .sface2021dec: .sface2021dec
            }
            engines[model] = try FaceEnginePool(configuration: engineConfiguration, count: configuration.engines)
        }
        producer = try runtime.makeProducer()
        let store = GalleryStore(database: runtime.database, sealer: sealer, storage: configuration.storage, models: configuration.models,
                                 shardIndex: configuration.shardIndex, shardCount: configuration.shardCount, logger: runtime.logger)
        gallery = GallerySync(store: store, runtime: runtime, reconcileEvery: .seconds(configuration.reconcileSeconds))
        let searches = configuration.searchBatch > 1 ? GallerySearchQueue(maxBatch: configuration.searchBatch) : nil
        let handler = FaceJobHandler(engines: engines, store: store, searches: searches, database: runtime.database, producer: producer,
                                     sealer: sealer, configuration: configuration, changesTopic: runtime.topics.galleryChanges, runtime: runtime)
        let responder = handler.responder(runtime, producer: producer)
        // Prefixed like the topics, so deployments (and test stacks) sharing a broker never share the group.
        jobs = try JobConsumer(name: "face-jobs", runtime: runtime, topic: runtime.topics.faceJobs, groupId: configuration.consumerGroup,
                               producer: producer, concurrency: configuration.engines * 2) { message in await responder.handle(message) }
        admin = runtime.adminServer()
        let gallery = self.gallery
        runtime.readiness.add("gallery") { gallery.isLoaded }
        runtime.metrics.gauge("facegate_gallery_templates", help: "Templates held in memory") { Double(store.templateCount) }
        runtime.metrics.gauge("facegate_gallery_bytes", help: "Bytes held for templates") { Double(store.memoryBytes) }
        // Stopped in reverse: the job loop drains while the gallery, its search thread and the producer its answers
        // go out with still run.
        var services: [any Service] = [admin, ProducerService(producer: producer), runtime.background, TopicsService(runtime: runtime), gallery]
        if let searches {
            runtime.metrics.gauge("facegate_gallery_scans", help: "Gallery scans run for identify queries (batched)") { Double(searches.counts.scans) }
            runtime.metrics.gauge("facegate_gallery_scanned_queries", help: "Identify queries those scans answered") { Double(searches.counts.queries) }
            services.append(SearchQueueService(queue: searches))
        }
        services.append(jobs)
        group = ServiceGroup(services: services, logger: runtime.logger,
                             shutdownTimeout: .seconds(configuration.common.shutdownSeconds))
    }

    public var templateCount: Int { gallery.store.templateCount }
}

/// Ends the search thread with the process's other parts (after the job loop, which the group stops before it).
final class SearchQueueService: Service {
    let name = "gallery-search"
    private let queue: GallerySearchQueue
    init(queue: GallerySearchQueue) { self.queue = queue }
    func run(_ context: ServiceContext) async throws {
        context.ready()
        await context.shutdownRequested()
        queue.close()
    }
}

/// Loads the gallery at start (retrying while PostgreSQL or the broker is away), then follows
/// `gallery.changes.v1` from the point the load began and reconciles periodically.
final class GallerySync: Service {
    let name = "gallery"
    let store: GalleryStore
    private let runtime: ServiceRuntime
    private let reconcileEvery: Duration
    private let loaded = Atomic<Bool>(false)

    init(store: GalleryStore, runtime: ServiceRuntime, reconcileEvery: Duration) {
        self.store = store
        self.runtime = runtime
        self.reconcileEvery = reconcileEvery
    }

    var isLoaded: Bool { loaded.load(ordering: .relaxed) }

    /// Ready once the gallery is loaded; then follows the changes and reconciles until the shutdown.
    func run(_ context: ServiceContext) async throws {
        guard let changes = try await context.cancellingOnShutdown({ [self] in try await load() }) else { return }
        context.ready()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [self] in await follow(changes) }
            group.addTask { [self] in _ = try await context.cancellingOnShutdown { try await self.reconcileForever() } }
            await context.shutdownRequested()
            changes.close()
            try await group.waitForAll()
        }
    }

    /// Loads the gallery, retrying while PostgreSQL or the broker is away; returns the consumer of the changes, which
    /// reads from before the load began: anything committed during the load is seen twice, harmlessly.
    private func load() async throws -> KafkaConsumer {
        let logger = runtime.logger
        var attempt = 0
        while true {
            attempt += 1
            var changes: KafkaConsumer?
            do {
                try await runtime.ensureTopics()
                // Off the request path: a long fetch wait, whatever the broker (a change a beat later is harmless).
                var configuration = runtime.kafka
                configuration.consumer.fetchWait = .milliseconds(500)
                let consumer = try KafkaConsumer(configuration: configuration, groupId: nil, autoOffsetReset: .end)
                changes = consumer
                let topic = runtime.topics.galleryChanges
                let partitions = try await KafkaAdmin.partitionCount(topic: topic, configuration: runtime.kafka)
                try consumer.assign((0..<partitions).map { (KafkaTopicPartition(topic: topic, partition: Int32($0)), KafkaOffset.end) })
                let started = ContinuousClock.now
                let count = try await store.loadAll()
                logger.info("gallery loaded", ["templates": String(count), "seconds": String(format: "%.2f", (ContinuousClock.now - started).seconds)])
                loaded.store(true, ordering: .relaxed)
                return consumer
            } catch {
                changes?.close()
                logger.error("gallery not loaded yet; retrying", ["attempt": String(attempt), "error": "\(error)"])
                try await Task.sleep(for: .seconds(min(attempt, 5)))
            }
        }
    }

    /// Applies each change as it comes, until the consumer is closed.
    private func follow(_ changes: KafkaConsumer) async {
        let logger = runtime.logger
        do {
            for try await message in changes.messages() {
                if case .failure(let rejection) = runtime.messages.authenticate(message) {
                    logger.warning("gallery change refused", ["error": "\(rejection)"])
                    continue
                }
                do {
                    let change = try FaceGateJSON.decode(GalleryChange.self, from: message.value)
                    try await store.apply(change)
                } catch {
                    logger.warning("gallery change not applied; reconciliation will catch up", ["error": "\(error)"])
                }
            }
        } catch {
            logger.warning("gallery change stream ended", ["error": "\(error)"])
        }
    }

    private func reconcileForever() async throws {
        while true {
            try await Task.sleep(for: reconcileEvery)
            do { try await store.reconcile() } catch { runtime.logger.warning("reconciliation failed", ["error": "\(error)"]) }
        }
    }
}
