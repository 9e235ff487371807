internal import CGallery
import Foundation

/// How a gallery stores its vectors.
///
/// Memory per template (128-D, ids and index included, capacity == count):
/// `.float32` ≈ 560 B, `.float16` ≈ 300 B, `.int8` ≈ 180 B. The compact modes
/// rank by the stored approximation, then re-score a pool of max(4k, k+16)
/// candidates with an exact fp32 Σ(q−x)² against the decoded stored vector; the
/// original fp32 embedding stays sealed in PostgreSQL, not in memory.
public enum GalleryStorage: Sendable {
    case float32
    /// IEEE half precision (relative error ≤ 2⁻¹¹ per component).
    case float16
    /// One signed byte per component plus a per-vector scale (max |x| / 127):
    /// the only mode within 200 B per template at 128-D.
    case int8
}

public struct GalleryMatch: Sendable, Equatable {
    public var templateId: UUID
    public var userId: UUID
    public var distance: Float

    public init(templateId: UUID, userId: UUID, distance: Float) {
        self.templateId = templateId
        self.userId = userId
        self.distance = distance
    }
}

/// One app's in-memory face gallery: exact Euclidean top-k over contiguous
/// storage (structure of arrays in C), O(1) removal by swap-with-last, upsert by
/// template id.
///
/// Thread safety: the C store holds a reader-writer lock that prefers writers.
/// Any number of searches run at once; an upsert or removal waits for the
/// searches in flight (one float32 scan measured 3.5–4.5 ms at 100k, 56 ms at 1M) and
/// holds new ones back only for a row copy. Copy-on-write snapshots were not
/// chosen: each write would copy the whole gallery (512 MB at 1M float32).
///
/// Searches are CPU-bound and synchronous: call them from a thread or queue of
/// the matcher's own, not from the cooperative pool.
public final class FaceGallery: @unchecked Sendable {
    // @unchecked: the only state is an immutable pointer to a C store whose every
    // entry point takes its own reader-writer lock.
    private let store: OpaquePointer
    public let dimension: Int
    public let storage: GalleryStorage

    public init(dimension: Int = 128, storage: GalleryStorage = .float32) {
        precondition(dimension >= 1, "gallery dimension must be positive")
        let cStorage: cg_storage
        switch storage {
        case .float32: cStorage = CG_STORAGE_FLOAT32
        case .float16: cStorage = CG_STORAGE_FLOAT16
        case .int8: cStorage = CG_STORAGE_INT8
        }
        guard let handle = cg_create(Int32(dimension), cStorage) else {
            fatalError("FaceGallery: out of memory creating the store")
        }
        self.store = handle
        self.dimension = dimension
        self.storage = storage
    }

    deinit { cg_destroy(store) }

    /// Inserts the template, or replaces its vector and user when the template id
    /// is already present. Returns false, changing nothing, when the embedding
    /// has the wrong dimension or a non-finite component (or, in `.float16`, one
    /// beyond ±65504).
    @discardableResult
    public func upsert(templateId: UUID, userId: UUID, embedding: [Float]) -> Bool {
        guard embedding.count == dimension else { return false }
        let rc = withBytes(of: templateId) { tid in
            withBytes(of: userId) { uid in
                embedding.withUnsafeBufferPointer { cg_upsert(store, tid, uid, $0.baseAddress) }
            }
        }
        switch rc {
        case Int32(CG_OK), Int32(CG_REPLACED): return true
        case Int32(CG_ERR_NONFINITE): return false
        default: fatalError("FaceGallery: out of memory growing the store (code \(rc))")
        }
    }

    /// Removes one template; false when it was not present.
    public func remove(templateId: UUID) -> Bool {
        withBytes(of: templateId) { cg_remove(store, $0) } == 1
    }

    /// Removes every template of the user; returns how many. O(count).
    public func removeUser(_ userId: UUID) -> Int {
        Int(withBytes(of: userId) { cg_remove_user(store, $0) })
    }

    /// Allocates room for `capacity` templates up front (avoids regrowth copies
    /// while a gallery is loaded).
    public func reserve(capacity: Int) {
        let rc = cg_reserve(store, Int64(capacity))
        if rc != Int32(CG_OK) { fatalError("FaceGallery: cannot reserve \(capacity) templates (code \(rc))") }
    }

    /// Gives back the room grown beyond the templates held and a sixteenth more: after a load, which grows the arrays
    /// step by step, the gallery keeps what it holds rather than what it last grew to.
    public func trim() {
        let rc = cg_trim(store)
        if rc != Int32(CG_OK) { fatalError("FaceGallery: cannot trim (code \(rc))") }
    }

    public var count: Int { Int(cg_count(store)) }

    /// Bytes allocated for templates: vectors, norms, scales, both ids and the
    /// id index, counted at capacity.
    public var memoryBytes: Int { Int(cg_memory_bytes(store)) }

    /// The k nearest templates in ascending exact Euclidean distance (fewer when
    /// the gallery is smaller). Empty for k ≤ 0 and for a query of the wrong
    /// dimension or with a non-finite component.
    public func search(_ query: [Float], k: Int) -> [GalleryMatch] {
        guard k > 0, query.count == dimension else { return [] }
        let k = min(k, max(count, 1))
        return [cg_match](unsafeUninitializedCapacity: k) { buffer, initialized in
            initialized = Int(query.withUnsafeBufferPointer {
                cg_search(store, $0.baseAddress, Int32(k), buffer.baseAddress)
            })
        }.map(GalleryMatch.init)
    }

    /// One scan of the gallery for several waiting queries; element i answers
    /// queries[i] exactly as `search(queries[i], k:)` would.
    public func search(batch queries: [[Float]], k: Int) -> [[GalleryMatch]] {
        guard k > 0 else { return queries.map { _ in [] } }
        let valid = queries.indices.filter { i in
            queries[i].count == dimension && queries[i].allSatisfy(\.isFinite)
        }
        var results = queries.map { _ in [GalleryMatch]() }
        guard !valid.isEmpty else { return results }
        let k = min(k, max(count, 1))
        var packed = [Float]()
        packed.reserveCapacity(valid.count * dimension)
        for i in valid { packed.append(contentsOf: queries[i]) }
        var matches = [cg_match](repeating: cg_match(), count: valid.count * k)
        let found = Int(packed.withUnsafeBufferPointer { q in
            matches.withUnsafeMutableBufferPointer { out in
                cg_search_batch(store, q.baseAddress, Int32(valid.count), Int32(k), out.baseAddress)
            }
        })
        for (slot, i) in valid.enumerated() {
            results[i] = matches[(slot * k)..<(slot * k + found)].map(GalleryMatch.init)
        }
        return results
    }

    // MARK: - Internal

    func setKernel(_ kernel: cg_kernel) { cg_set_kernel(store, kernel) }

    func kernelName(batch: Bool) -> String { String(cString: cg_kernel_name(store, batch ? 1 : 0)) }
}

extension GalleryMatch {
    init(_ match: cg_match) {
        self.init(
            templateId: UUID(uuid: withUnsafeBytes(of: match.template_id) { $0.loadUnaligned(as: uuid_t.self) }),
            userId: UUID(uuid: withUnsafeBytes(of: match.user_id) { $0.loadUnaligned(as: uuid_t.self) }),
            distance: match.distance)
    }
}

/// Lends the 16 RFC 4122 bytes of `id` to a C call.
@inline(__always)
func withBytes<R>(of id: UUID, _ body: (UnsafePointer<UInt8>) -> R) -> R {
    withUnsafeBytes(of: id.uuid) { body($0.bindMemory(to: UInt8.self).baseAddress!) }
}
