import Dispatch
import Foundation
import Synchronization
import Testing

@_spi(Benchmarking) @testable import FaceEngine
import FaceGateContracts

/// Deterministic generator so a failure reproduces.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
    mutating func gaussian() -> Float {
        let u = Double.random(in: Double.ulpOfOne..<1, using: &self)
        let v = Double.random(in: 0..<1, using: &self)
        return Float((-2 * Foundation.log(u)).squareRoot() * cos(2 * Double.pi * v))
    }
    /// Components N(0, 1/dim): norm ≈ 1, like a normalised embedding.
    mutating func unitScaleVector(_ dim: Int = 128) -> [Float] {
        let s = 1 / Float(dim).squareRoot()
        return (0..<dim).map { _ in gaussian() * s }
    }
    mutating func uuid() -> UUID {
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255, using: &self) }
        return bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }
    /// `base` moved by a random offset of about `distance` in Euclidean length.
    mutating func near(_ base: [Float], distance: Float) -> [Float] {
        let s = distance / Float(base.count).squareRoot()
        return base.map { $0 + gaussian() * s }
    }
}

struct Template {
    var id: UUID
    var user: UUID
    var vector: [Float]
}

func euclidean(_ a: [Float], _ b: [Float]) -> Float {
    var s = 0.0
    for i in a.indices {
        let d = Double(a[i]) - Double(b[i])
        s += d * d
    }
    return Float(s.squareRoot())
}

/// The k nearest by a plain double-precision loop over every template.
func bruteForce(_ query: [Float], _ templates: [Template], k: Int) -> [GalleryMatch] {
    templates
        .map { GalleryMatch(templateId: $0.id, userId: $0.user, distance: euclidean(query, $0.vector)) }
        .sorted { $0.distance < $1.distance }
        .prefix(max(k, 0))
        .map { $0 }
}

/// Same ranking as the oracle: equal ids at each rank, or an exact tie there;
/// every returned distance is the true distance of the template returned.
func expectSameRanking(
    _ got: [GalleryMatch], _ expected: [GalleryMatch], byId: [UUID: Template], query: [Float],
    tolerance: Float = 1e-5, sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(got.count == expected.count, "result count", sourceLocation: sourceLocation)
    for (g, e) in zip(got, expected) {
        #expect(g.templateId == e.templateId || abs(g.distance - e.distance) <= tolerance,
                "rank differs: \(g) vs \(e)", sourceLocation: sourceLocation)
        guard let t = byId[g.templateId] else {
            Issue.record("returned unknown template \(g.templateId)", sourceLocation: sourceLocation)
            continue
        }
        #expect(g.userId == t.user, "user id torn from its template", sourceLocation: sourceLocation)
        #expect(abs(g.distance - euclidean(query, t.vector)) <= tolerance, sourceLocation: sourceLocation)
    }
    #expect(zip(got, got.dropFirst()).allSatisfy { $0.distance <= $1.distance }, "not ascending",
            sourceLocation: sourceLocation)
}

func makeTemplates(_ n: Int, users: Int, rng: inout SplitMix64) -> [Template] {
    let userIds = (0..<max(users, 1)).map { _ in rng.uuid() }
    return (0..<n).map { i in Template(id: rng.uuid(), user: userIds[i % userIds.count], vector: rng.unitScaleVector()) }
}

func makeGallery(_ templates: [Template], storage: GalleryStorage = .float32, kernel: GalleryScanKernel = .automatic) -> FaceGallery {
    let gallery = FaceGallery(storage: storage)
    gallery.setScanKernel(kernel)
    for t in templates { #expect(gallery.upsert(templateId: t.id, userId: t.user, embedding: t.vector)) }
    return gallery
}

@Suite struct GallerySearchTests {
    @Test(arguments: GalleryScanKernel.allCases)
    func topKEqualsBruteForce(kernel: GalleryScanKernel) {
        var rng = SplitMix64(seed: 42)
        let cases: [(n: Int, k: Int)] = [(0, 5), (1, 5), (3, 5), (7, 1), (9, 9), (100, 10), (257, 257), (300, 1000), (2500, 5), (2500, 32)]
        for (n, k) in cases {
            let templates = makeTemplates(n, users: n / 3, rng: &rng)
            let byId = Dictionary(uniqueKeysWithValues: templates.map { ($0.id, $0) })
            let gallery = makeGallery(templates, kernel: kernel)
            #expect(gallery.count == n)
            for _ in 0..<4 {
                let query = templates.isEmpty || Bool.random(using: &rng)
                    ? rng.unitScaleVector()
                    : rng.near(templates.randomElement(using: &rng)!.vector, distance: 0.3)
                let got = gallery.search(query, k: k)
                #expect(got.count == min(n, k), "n=\(n) k=\(k)")
                expectSameRanking(got, bruteForce(query, templates, k: k), byId: byId, query: query)
            }
        }
    }

    @Test func rejectsMalformedInputWithoutChangingTheGallery() {
        var rng = SplitMix64(seed: 7)
        let gallery = FaceGallery()
        #expect(gallery.search(rng.unitScaleVector(), k: 5).isEmpty, "empty gallery")
        let t = makeTemplates(10, users: 2, rng: &rng)
        for x in t { gallery.upsert(templateId: x.id, userId: x.user, embedding: x.vector) }
        #expect(!gallery.upsert(templateId: rng.uuid(), userId: rng.uuid(), embedding: [Float](repeating: 0, count: 127)))
        var nan = rng.unitScaleVector()
        nan[3] = .nan
        #expect(!gallery.upsert(templateId: rng.uuid(), userId: rng.uuid(), embedding: nan))
        #expect(!gallery.upsert(templateId: t[0].id, userId: t[0].user, embedding: nan), "replacing with NaN refused")
        #expect(gallery.count == 10)
        #expect(gallery.search(t[0].vector, k: 1).first?.distance == 0, "t[0] kept its vector")
        #expect(gallery.search(t[0].vector, k: 0).isEmpty)
        #expect(gallery.search(t[0].vector, k: -3).isEmpty)
        #expect(gallery.search(nan, k: 3).isEmpty)
        #expect(gallery.search([1, 2, 3], k: 3).isEmpty)
        let half = FaceGallery(storage: .float16)
        #expect(!half.upsert(templateId: rng.uuid(), userId: rng.uuid(), embedding: [Float](repeating: 70000, count: 128)),
                "beyond the float16 range")
        #expect(half.count == 0)
    }

    @Test(arguments: [GalleryStorage.float32, .float16, .int8])
    func mutationsKeepResultsRight(storage: GalleryStorage) {
        var rng = SplitMix64(seed: 99)
        let users = (0..<40).map { _ in rng.uuid() }
        var model: [UUID: Template] = [:]
        let gallery = FaceGallery(storage: storage)
        let tolerance: Float = storage == .float32 ? 1e-5 : storage == .float16 ? 2e-3 : 3e-2

        func check() {
            #expect(gallery.count == model.count)
            let all = Array(model.values)
            for _ in 0..<3 {
                let query = all.isEmpty ? rng.unitScaleVector() : rng.near(all.randomElement(using: &rng)!.vector, distance: 0.3)
                let got = gallery.search(query, k: 8)
                let expected = bruteForce(query, all, k: 8)
                #expect(got.count == expected.count)
                if storage == .float32 {
                    expectSameRanking(got, expected, byId: model, query: query)
                } else {
                    // Quantised: the nearest planted neighbour is still first, ids stay consistent.
                    #expect(got.first?.templateId == expected.first?.templateId)
                    for g in got {
                        #expect(model[g.templateId]?.user == g.userId)
                        if let t = model[g.templateId] { #expect(abs(g.distance - euclidean(query, t.vector)) <= tolerance) }
                    }
                }
            }
        }

        for step in 0..<1500 {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<5:  // new template
                let t = Template(id: rng.uuid(), user: users.randomElement(using: &rng)!, vector: rng.unitScaleVector())
                #expect(gallery.upsert(templateId: t.id, userId: t.user, embedding: t.vector))
                model[t.id] = t
            case 5, 6:  // replace an existing template's vector and possibly its user
                guard var t = model.values.randomElement(using: &rng) else { continue }
                t.vector = rng.unitScaleVector()
                t.user = users.randomElement(using: &rng)!
                #expect(gallery.upsert(templateId: t.id, userId: t.user, embedding: t.vector))
                model[t.id] = t
            case 7, 8:  // remove one, sometimes an absent one
                if Bool.random(using: &rng), let t = model.values.randomElement(using: &rng) {
                    #expect(gallery.remove(templateId: t.id))
                    model[t.id] = nil
                    #expect(!gallery.remove(templateId: t.id), "second removal finds nothing")
                } else {
                    #expect(!gallery.remove(templateId: rng.uuid()))
                }
            default:
                if step % 3 == 0 {
                    let user = users.randomElement(using: &rng)!
                    let expected = model.values.filter { $0.user == user }.count
                    #expect(gallery.removeUser(user) == expected)
                    model = model.filter { $0.value.user != user }
                }
            }
            if step % 100 == 0 { check() }
        }
        check()
        // Every surviving template is found by its own vector, with its own user.
        for t in model.values {
            let top = gallery.search(t.vector, k: 1).first
            #expect(top?.templateId == t.id && top?.userId == t.user)
        }
        for user in users { _ = gallery.removeUser(user) }
        #expect(gallery.count == 0)
        #expect(gallery.search(rng.unitScaleVector(), k: 3).isEmpty)
    }

    @Test(arguments: [(GalleryStorage.float32, GalleryScanKernel.automatic), (.float32, .vectorized), (.float32, .blas),
                      (.float32, .scalar), (.float16, .automatic), (.float16, .scalar), (.int8, .automatic), (.int8, .scalar)])
    func batchEqualsSingle(storage: GalleryStorage, kernel: GalleryScanKernel) {
        var rng = SplitMix64(seed: 5)
        let templates = makeTemplates(3001, users: 500, rng: &rng)
        let gallery = makeGallery(templates, storage: storage, kernel: kernel)
        var queries = (0..<19).map { i in
            i % 2 == 0 ? rng.near(templates.randomElement(using: &rng)!.vector, distance: 0.35) : rng.unitScaleVector()
        }
        var nan = rng.unitScaleVector()
        nan[0] = .infinity
        queries.insert(nan, at: 4)
        queries.append([0.5])
        for k in [1, 5, 40] {
            let batch = gallery.search(batch: queries, k: k)
            #expect(batch.count == queries.count)
            #expect(batch[4].isEmpty && batch[queries.count - 1].isEmpty, "malformed queries answer nothing")
            for i in queries.indices where i != 4 && i != queries.count - 1 {
                let single = gallery.search(queries[i], k: k)
                #expect(batch[i].count == k)
                #expect(batch[i].map(\.templateId) == single.map(\.templateId), "query \(i) k \(k)")
                for (b, s) in zip(batch[i], single) { #expect(abs(b.distance - s.distance) <= 1e-6) }
            }
        }
        #expect(gallery.search(batch: [], k: 5).isEmpty)
        #expect(FaceGallery().search(batch: queries, k: 5).allSatisfy { $0.isEmpty })
    }

    /// The matcher's search queue: queries that wait while a scan runs share the next one, and each answer is
    /// its own query's, from its own gallery, with its own k, exactly as a lone search answers it.
    @Test func queuedSearchesShareScansAndAnswerAsAlone() async {
        var rng = SplitMix64(seed: 11)
        let first = makeTemplates(20_000, users: 5_000, rng: &rng), second = makeTemplates(2_000, users: 400, rng: &rng)
        let galleries = [makeGallery(first), makeGallery(second)]
        let queue = GallerySearchQueue(maxBatch: 16)
        let queries = (0..<64).map { i in (gallery: i % 3 == 0 ? 1 : 0, k: [1, 5, 12][i % 3], vector: rng.unitScaleVector()) }
        // The queue is held until all 64 wait, so how they share scans does not depend on how fast the tasks start.
        queue.state.hold(true)
        let answers = await withTaskGroup(of: (Int, [GalleryMatch]).self) { group in
            for (index, query) in queries.enumerated() {
                group.addTask { (index, await queue.search(query.vector, k: query.k, in: galleries[query.gallery])) }
            }
            while queue.state.waiting < queries.count { await Task.yield() }
            queue.state.hold(false)
            var answers = [[GalleryMatch]](repeating: [], count: queries.count)
            for await (index, matches) in group { answers[index] = matches }
            return answers
        }
        for (query, answer) in zip(queries, answers) {
            let alone = galleries[query.gallery].search(query.vector, k: query.k)
            #expect(answer.map(\.templateId) == alone.map(\.templateId))
            #expect(zip(answer, alone).allSatisfy { abs($0.distance - $1.distance) <= 1e-6 })
        }
        let counts = queue.counts
        #expect(counts.queries == queries.count)
        // Each scan takes the oldest query and up to 15 more of its gallery: 42 queries of the first gallery need 3 scans,
        // 22 of the second 2, in whatever order they arrived.
        #expect(counts.scans == 5, "\(counts.scans) scans for \(counts.queries) queries")
        #expect(await queue.search([1, 2], k: 3, in: galleries[0]).isEmpty, "a malformed query answers nothing")
        queue.close()
        #expect(await queue.search(queries[0].vector, k: 2, in: galleries[0]).map(\.templateId)
                == galleries[0].search(queries[0].vector, k: 2).map(\.templateId), "after close, searches run on the caller")
    }

    @Test(arguments: [GalleryStorage.float16, .int8])
    func compactStorageFindsPlantedDuplicates(storage: GalleryStorage) {
        var rng = SplitMix64(seed: 2024)
        let templates = makeTemplates(10_000, users: 10_000, rng: &rng)
        let exact = makeGallery(templates, storage: .float32)
        let compact = makeGallery(templates, storage: storage)
        var hits = 0, exactHits = 0
        let planted = 300
        for i in 0..<planted {
            let target = templates[(i * 7919) % templates.count]
            // Same-person distances for dlib are 0.23–0.44; plant across and beyond that range.
            let query = rng.near(target.vector, distance: [0.05, 0.25, 0.45][i % 3])
            let top = compact.search(query, k: 1).first
            let reference = exact.search(query, k: 1).first
            if top?.templateId == target.id { hits += 1 }
            if reference?.templateId == target.id { exactHits += 1 }
            if let top, let reference, top.templateId == reference.templateId {
                #expect(abs(top.distance - reference.distance) <= (storage == .float16 ? 2e-3 : 2e-2))
            }
        }
        #expect(exactHits == planted)
        #expect(hits == planted, "recall@1 \(hits)/\(planted) in \(storage)")
    }

    @Test func compactModeStaysWithin200BytesPerTemplate() {
        var rng = SplitMix64(seed: 11)
        let n = 50_000
        let gallery = FaceGallery(storage: .int8)
        gallery.reserve(capacity: n)
        let user = rng.uuid()
        let vector = rng.unitScaleVector()
        for _ in 0..<n { gallery.upsert(templateId: rng.uuid(), userId: user, embedding: vector) }
        #expect(gallery.count == n)
        let perTemplate = Double(gallery.memoryBytes) / Double(n)
        #expect(perTemplate <= 200, "int8 uses \(perTemplate) B per template")
        #expect(perTemplate >= 168, "accounts at least codes, scale, norm and both ids")
        let wide = FaceGallery(storage: .float32)
        wide.reserve(capacity: n)
        #expect(wide.memoryBytes >= n * (512 + 4 + 32))
    }

    @Test func aGrownGalleryTrimmedKeepsWhatItHoldsAndStillGrows() {
        var rng = SplitMix64(seed: 12)
        let n = 40_000
        let gallery = FaceGallery(storage: .int8)
        let user = rng.uuid()
        var ids: [UUID] = [], vectors: [[Float]] = []
        for _ in 0..<n {
            ids.append(rng.uuid())
            vectors.append(rng.unitScaleVector())
            gallery.upsert(templateId: ids.last!, userId: user, embedding: vectors.last!)
        }
        let grown = gallery.memoryBytes
        gallery.trim()
        #expect(gallery.memoryBytes < grown, "grown by doubling to 65,536 rows: trimming gives room back")
        #expect(Double(gallery.memoryBytes) / Double(n) <= 200, "\(Double(gallery.memoryBytes) / Double(n)) B per template after the trim")
        for index in stride(from: 0, to: n, by: 997) { #expect(gallery.search(vectors[index], k: 1).first?.templateId == ids[index]) }
        let later = rng.uuid(), vector = rng.unitScaleVector()
        for _ in 0..<3000 { gallery.upsert(templateId: rng.uuid(), userId: user, embedding: rng.unitScaleVector()) }
        gallery.upsert(templateId: later, userId: user, embedding: vector)
        #expect(gallery.count == n + 3001)
        #expect(gallery.search(vector, k: 1).first?.templateId == later)
    }

    @Test func concurrentSearchesDuringWritesNeverSeeTornEntries() {
        var rng = SplitMix64(seed: 31337)
        // Each template has two versions (vector and user); upserts flip rows between them in
        // place, removals move the last row, so a search racing a write would pair one
        // version's distance with another's ids, or ids with the wrong template.
        let ids = (0..<5000).map { _ in rng.uuid() }
        let users = (0..<400).map { _ in rng.uuid() }
        let versions: [UUID: [Template]] = Dictionary(uniqueKeysWithValues: ids.map { id in
            (id, (0..<2).map { _ in Template(id: id, user: users.randomElement(using: &rng)!, vector: rng.unitScaleVector()) })
        })
        let gallery = FaceGallery()
        let model = Mutex<[UUID: Int]>([:])  // template → version stored; written by the writer only
        for id in ids.prefix(2500) {
            gallery.upsert(templateId: id, userId: versions[id]![0].user, embedding: versions[id]![0].vector)
            model.withLock { $0[id] = 0 }
        }
        let queries = (0..<64).map { i in rng.near(versions[ids[(i * 37) % ids.count]]![i % 2].vector, distance: 0.3) }
        let failures = Mutex<[String]>([])
        let searches = Atomic<Int>(0)
        let writerDone = Atomic<Bool>(false)

        // Real threads: concurrentPerform may run its iterations one after another on a busy machine.
        let finished = DispatchGroup()
        func spawn(_ body: @escaping @Sendable () -> Void) {
            finished.enter()
            Thread {
                body()
                finished.leave()
            }.start()
        }
        spawn {
            var rng = SplitMix64(seed: 1)
            // Writes overlap the whole read phase: at least 4000 of them, and on until the
            // readers have searched 600 times (bounded either way).
            var writes = 0
            while writes < 300_000 && (writes < 4000 || searches.load(ordering: .relaxed) < 600) {
                writes += 1
                let id = ids.randomElement(using: &rng)!
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<6:
                    let v = Int.random(in: 0..<2, using: &rng), t = versions[id]![v]
                    gallery.upsert(templateId: id, userId: t.user, embedding: t.vector)
                    model.withLock { $0[id] = v }
                case 6..<9:
                    _ = gallery.remove(templateId: id)
                    model.withLock { $0[id] = nil }
                default:
                    let user = versions[id]![0].user
                    _ = gallery.removeUser(user)
                    model.withLock { m in
                        m = m.filter { versions[$0.key]![$0.value].user != user }
                    }
                }
            }
            writerDone.store(true, ordering: .releasing)
        }
        for reader in 1...3 { spawn {
            var i = reader
            while !writerDone.load(ordering: .acquiring) {
                let q = queries[i % queries.count]
                let results = i % 5 == 0 ? gallery.search(batch: [q, queries[(i + 1) % queries.count]], k: 4)[0] : gallery.search(q, k: 4)
                for m in results {
                    guard let candidates = versions[m.templateId] else {
                        failures.withLock { $0.append("unknown template \(m.templateId)") }
                        continue
                    }
                    if !candidates.contains(where: { $0.user == m.userId && abs(m.distance - euclidean(q, $0.vector)) <= 1e-4 }) {
                        failures.withLock { $0.append("torn entry \(m)") }
                    }
                }
                if Set(results.map(\.templateId)).count != results.count {
                    failures.withLock { $0.append("a template returned twice") }
                }
                if zip(results, results.dropFirst()).contains(where: { $0.distance > $1.distance }) {
                    failures.withLock { $0.append("results not ascending") }
                }
                searches.add(1, ordering: .relaxed)
                i += 3
            }
        } }
        finished.wait()
        #expect(searches.load(ordering: .relaxed) >= 600)
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(5) })")
        // Afterwards the gallery holds exactly the writer's last state.
        let final = model.withLock { $0 }
        #expect(gallery.count == final.count)
        for (id, v) in final {
            let t = versions[id]![v], top = gallery.search(t.vector, k: 1).first
            #expect(top?.templateId == id && top?.userId == t.user && top?.distance == 0)
        }
    }

    @Test func shardIndexIsStableAndRoughlyUniform() {
        // FNV-1a 64 of the RFC 4122 bytes, reduced modulo the shard count: pinned values
        // so another service (or language) computing it agrees.
        let zero = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
        let dns = UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8")!
        let v4 = UUID(uuidString: "f47ac10b-58cc-4372-a567-0e02b2c3d479")!
        #expect(shardIndex(templateId: zero, shardCount: 16) == 5)
        #expect(shardIndex(templateId: zero, shardCount: 1000) == 221)
        #expect(shardIndex(templateId: dns, shardCount: 7) == 6)
        #expect(shardIndex(templateId: dns, shardCount: 16) == 12)
        #expect(shardIndex(templateId: v4, shardCount: 1000) == 738)
        #expect(shardIndex(templateId: v4, shardCount: 1) == 0)

        var rng = SplitMix64(seed: 8)
        let shards = 8, n = 80_000
        var counts = [Int](repeating: 0, count: shards)
        for _ in 0..<n {
            let s = shardIndex(templateId: rng.uuid(), shardCount: shards)
            #expect((0..<shards).contains(s))
            counts[s] += 1
        }
        let expected = Double(n) / Double(shards)
        for c in counts { #expect(abs(Double(c) - expected) < expected * 0.05, "\(counts)") }
        // Sequential, time-ordered ids spread as well.
        var sequential = [Int](repeating: 0, count: shards)
        for i in 0..<8000 {
            let id = UUID(uuidString: String(format: "018f0000-0000-7000-8000-%012x", i))!
            sequential[shardIndex(templateId: id, shardCount: shards)] += 1
        }
        for c in sequential { #expect(abs(Double(c) - 1000) < 150, "\(sequential)") }
    }

    @Test func registryKeepsOneGalleryPerApp() {
        var rng = SplitMix64(seed: 3)
        let registry = GalleryRegistry(storage: .float16)
        let appA = rng.uuid(), appB = rng.uuid()
        let a = registry.gallery(for: appA)
        #expect(registry.gallery(for: appA) === a)
        #expect(a.storage == .float16)
        let t = makeTemplates(30, users: 3, rng: &rng)
        for x in t.prefix(20) { a.upsert(templateId: x.id, userId: x.user, embedding: x.vector) }
        for x in t.suffix(10) { registry.gallery(for: appB).upsert(templateId: x.id, userId: x.user, embedding: x.vector) }
        #expect(registry.totalCount == 30)
        #expect(registry.memoryBytes == a.memoryBytes + registry.gallery(for: appB).memoryBytes)
        #expect(a.search(t[25].vector, k: 1).first?.templateId != t[25].id, "apps do not see each other's templates")
        #expect(registry.gallery(for: appB).search(t[25].vector, k: 1).first?.templateId == t[25].id)
    }
}
