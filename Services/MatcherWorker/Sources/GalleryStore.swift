import FaceEngine
import FaceGateCore
import IdentityRecords
import Foundation
import KafkaClient
import PostgresClient
import ServiceKit
import Synchronization

/// The matcher's in-memory galleries, one per app and face model, kept in step with PostgreSQL (the
/// source of truth): a full load at start, then gallery-change broadcasts, then a periodic
/// reconciliation by change sequence that bounds staleness even if a broadcast is lost. In a sharded
/// deployment it holds only its shard. Templates of models this matcher does not run are skipped.
final class GalleryStore: Sendable {
    private let registries: [FaceModel: GalleryRegistry]
    private let records: GalleryRecords
    private let sealer: Sealer
    private let shard: Int
    private let shards: Int
    private let logger: Logger
    private let highestSeq = Atomic<Int64>(0)
    /// Which gallery each template is in, so a delete finds it.
    private let owners = Mutex<[UUID: (appId: UUID, model: FaceModel)]>([:])

    init(database: PostgresPool, sealer: Sealer, storage: GalleryStorage, models: [FaceModel], shardIndex: Int, shardCount: Int, logger: Logger) {
        self.registries = Dictionary(uniqueKeysWithValues: models.map { ($0, GalleryRegistry(storage: storage)) })
        self.records = GalleryRecords(database: database)
        self.sealer = sealer
        self.shard = shardIndex
        self.shards = shardCount
        self.logger = logger
    }

    /// The gallery of an app under one model (empty when this matcher does not run the model).
    func gallery(of appId: UUID, model: FaceModel) -> FaceGallery {
        (registries[model] ?? GalleryRegistry()).gallery(for: appId)
    }

    func owns(_ templateId: UUID) -> Bool {
        shards == 1 || shardIndex(templateId: templateId, shardCount: shards) == shard
    }

    /// A new template id of this shard: a template this matcher stores is in its own gallery at once, so a search right
    /// after its enrollment finds it without waiting for the gallery-change broadcast (drawn again until it hashes here:
    /// `shards` draws on average).
    func newTemplateId() -> UUID {
        var id = UUID()
        while !owns(id) { id = UUID() }
        return id
    }

    /// Loads every template of this shard, then gives back the room the galleries grew beyond it. Returns how many.
    @discardableResult
    func loadAll() async throws -> Int {
        let loaded = try await load(since: nil)
        registries.values.forEach { $0.trim() }
        return loaded
    }

    /// Catches up on anything a broadcast may have missed. Sequence numbers can commit out of order,
    /// so recent rows are re-read too (upserts are idempotent).
    func reconcile() async throws {
        let since = highestSeq.load(ordering: .relaxed)
        try await load(since: since)
        try await records.forEachTombstone(since: since) { templateId, changeSeq in
            self.remove(templateId: templateId)
            self.noteSeq(changeSeq)
        }
        try await dropDeletedApps()
    }

    /// Drops the galleries of apps that no longer exist: an app's deletion takes its templates without tombstones, and its
    /// broadcasts may have been lost. The apps held are read before the apps that exist, so an app created meanwhile is
    /// never taken for a deleted one (an app id is never reused).
    private func dropDeletedApps() async throws {
        let held = Set(owners.withLock { $0.values.map(\.appId) })
        guard !held.isEmpty else { return }
        let existing = try await records.appIds()
        let deleted = held.subtracting(existing)
        guard !deleted.isEmpty else { return }
        owners.withLock { $0 = $0.filter { !deleted.contains($0.value.appId) } }
        for appId in deleted {
            for registry in registries.values { registry.remove(app: appId) }
        }
        logger.info("dropped the galleries of deleted apps", ["apps": "\(deleted.count)"])
    }

    @discardableResult
    private func load(since: Int64?) async throws -> Int {
        var loaded = 0
        try await records.forEachTemplate(since: since, shard: TemplateSlice(index: shard, count: shards)) { template, changeSeq in
            self.noteSeq(changeSeq)
            if try self.hold(template) { loaded += 1 }
        }
        return loaded
    }

    /// Opens and adds a template of this shard and of a model this matcher runs; false for any other.
    private func hold(_ template: StoredTemplate) throws -> Bool {
        guard owns(template.id), let model = FaceModel(rawValue: template.modelId), registries[model] != nil else { return false }
        add(templateId: template.id, appId: template.appId, userId: template.userId, model: model,
            embedding: try sealer.openTemplate(template.sealedEmbedding, templateId: template.id))
        return true
    }

    /// Applies a broadcast change. The message only says *which* template changed: its app, its user
    /// and its embedding are read from PostgreSQL, and a delete is applied only once the template is gone
    /// there, so a message forged on the broker cannot remap a face to another user or drop one.
    func apply(_ change: GalleryChange) async throws {
        noteSeq(change.changeSeq)
        guard let template = try await records.template(change.templateId) else {
            remove(templateId: change.templateId)  // erased (or never stored): nothing to hold
            return
        }
        _ = try hold(template)
    }

    func add(templateId: UUID, appId: UUID, userId: UUID, model: FaceModel, embedding: [Float]) {
        guard owns(templateId), let registry = registries[model] else { return }
        registry.gallery(for: appId).upsert(templateId: templateId, userId: userId, embedding: embedding)
        owners.withLock { $0[templateId] = (appId, model) }
    }

    func remove(templateId: UUID) {
        guard let owner = owners.withLock({ $0.removeValue(forKey: templateId) }) else { return }
        _ = registries[owner.model]?.gallery(for: owner.appId).remove(templateId: templateId)
    }

    func noteSeq(_ seq: Int64) {
        var current = highestSeq.load(ordering: .relaxed)
        while seq > current {
            let (exchanged, original) = highestSeq.compareExchange(expected: current, desired: seq, ordering: .relaxed)
            if exchanged { break }
            current = original
        }
    }

    var templateCount: Int { registries.values.reduce(0) { $0 + $1.totalCount } }
    var memoryBytes: Int { registries.values.reduce(0) { $0 + $1.memoryBytes } }
}

/// Each app's face model, read from PostgreSQL and kept for a few seconds: jobs never say which model to
/// use, so a forged or stale message cannot make the matcher compare vectors of different models.
/// The face model of each app (`apps.face_model`): every job runs on its app's model, never on one the message names.
protocol AppModelLookup: Sendable {
    func model(of appId: UUID) async throws -> FaceModel
}

/// Tells the other matchers of a stored template (`gallery.changes.v1`).
protocol GalleryChangeBroadcast: Sendable {
    func broadcast(_ change: GalleryChange) async throws
}

struct KafkaGalleryBroadcast: GalleryChangeBroadcast {
    let producer: KafkaProducer
    let topic: String

    func broadcast(_ change: GalleryChange) async throws {
        _ = try await producer.send(KafkaRecord(topic: topic, key: Array(change.templateId.wire.utf8), value: try FaceGateJSON.encode(change),
                                                headers: [TraceContext.header]))
    }
}

final class AppFaceModels: AppModelLookup {
    private let records: GalleryRecords
    private let cache = Mutex<[UUID: (model: FaceModel, readAt: ContinuousClock.Instant)]>([:])
    static let freshFor: Duration = .seconds(5)

    init(database: PostgresPool) {
        records = GalleryRecords(database: database)
    }

    func model(of appId: UUID) async throws -> FaceModel {
        if let cached = cache.withLock({ $0[appId] }), ContinuousClock.now - cached.readAt < Self.freshFor { return cached.model }
        // An app deleted meanwhile has no templates left; any model answers it the same.
        let name = try await records.faceModel(of: appId)
        let model = name.flatMap(FaceModel.init(rawValue:)) ?? .dlibResNetV1
        cache.withLock { $0[appId] = (model, .now) }
        return model
    }
}
