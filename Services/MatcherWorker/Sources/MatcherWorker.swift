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
        var services: [any Service] = [admin, gallery, jobs, ProducerService(producer: producer), TopicsService(runtime: runtime)]
        if let searches {
            runtime.metrics.gauge("facegate_gallery_scans", help: "Gallery scans run for identify queries (batched)") { Double(searches.counts.scans) }
            runtime.metrics.gauge("facegate_gallery_scanned_queries", help: "Identify queries those scans answered") { Double(searches.counts.queries) }
            services.append(SearchQueueService(queue: searches))
        }
        group = ServiceGroup(services: services, logger: runtime.logger,
                             shutdownTimeout: .seconds(configuration.common.shutdownSeconds), failures: runtime.failures)
    }

    public var templateCount: Int { gallery.store.templateCount }
}

/// Ends the search thread with the process's other parts (after the job loop, which the group stops first).
final class SearchQueueService: Service {
    let name = "gallery-search"
    private let queue: GallerySearchQueue
    init(queue: GallerySearchQueue) { self.queue = queue }
    func start() async throws {}
    func shutdown() async { queue.close() }
}

/// Loads the gallery at start (retrying while PostgreSQL or the broker is away), then follows
/// `gallery.changes.v1` from the point the load began and reconciles periodically.
final class GallerySync: Service {
    let name = "gallery"
    let store: GalleryStore
    private let runtime: ServiceRuntime
    private let reconcileEvery: Duration
    private let loaded = Atomic<Bool>(false)
    private let tasks = Mutex<[Task<Void, Never>]>([])
    private let consumer = Mutex<KafkaConsumer?>(nil)

    init(store: GalleryStore, runtime: ServiceRuntime, reconcileEvery: Duration) {
        self.store = store
        self.runtime = runtime
        self.reconcileEvery = reconcileEvery
    }

    var isLoaded: Bool { loaded.load(ordering: .relaxed) }

    func start() async throws {
        let logger = runtime.logger
        var attempt = 0
        while !Task.isCancelled {
            attempt += 1
            do {
                try await runtime.ensureTopics()
                // Follow changes from before the load starts: anything committed during the load is seen twice, harmlessly.
                // Off the request path: a long fetch wait, whatever the broker (a change a beat later is harmless).
                var configuration = runtime.kafka
                configuration.consumer.fetchWait = .milliseconds(500)
                let changes = try KafkaConsumer(configuration: configuration, groupId: nil, autoOffsetReset: .end)
                let topic = runtime.topics.galleryChanges
                let partitions = try await KafkaAdmin.partitionCount(topic: topic, configuration: runtime.kafka)
                try changes.assign((0..<partitions).map { (KafkaTopicPartition(topic: topic, partition: Int32($0)), KafkaOffset.end) })
                consumer.withLock { $0 = changes }
                let started = ContinuousClock.now
                let count = try await store.loadAll()
                logger.info("gallery loaded", ["templates": String(count), "seconds": String(format: "%.2f", (ContinuousClock.now - started).seconds)])
                loaded.store(true, ordering: .relaxed)
                follow(changes)
                return
            } catch {
                consumer.withLock { $0?.close(); $0 = nil }
                logger.error("gallery not loaded yet; retrying", ["attempt": String(attempt), "error": "\(error)"])
                try await Task.sleep(for: .seconds(min(attempt, 5)))
            }
        }
    }

    private func follow(_ changes: KafkaConsumer) {
        let store = self.store
        let logger = runtime.logger
        let every = reconcileEvery
        let messages = runtime.messages
        let reader = Task {
            do {
                for try await message in changes.messages() {
                    if case .failure(let rejection) = messages.authenticate(message) {
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
        let reconciler = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: every)
                if Task.isCancelled { break }
                do { try await store.reconcile() } catch { logger.warning("reconciliation failed", ["error": "\(error)"]) }
            }
        }
        tasks.withLock { $0 = [reader, reconciler] }
    }

    func shutdown() async {
        consumer.withLock { $0?.close() }
        for task in tasks.withLock({ $0 }) {
            task.cancel()
            await task.value
        }
    }
}
