import FaceEngine
import Foundation
import ServiceKit
import Synchronization

/// `facegate-bench batching [--templates 1000000] [--seconds 10] [--rounds 2] [--photo obama.jpg] [--side 250] [--engines 2]`
///
/// One matcher's identify pipeline without the broker: `concurrency` jobs at a time, each embedding a real photo
/// with the SFace engine pool (as the matcher's job loop does) and searching a gallery of `templates` seeded
/// unit vectors (the photo is first scaled by ImageMagick to `side` pixels on its longest side; 250 is the size of
/// the face photos the engine benchmarks use), either alone on the job's own thread (`MATCHER_SEARCH_BATCH=1`) or through the gallery search
/// queue that lets waiting queries share one scan (`MATCHER_SEARCH_BATCH=16`, the default). Rounds alternate the
/// two (alone, batched, alone, batched, …) at concurrency 1, 4 and 16; identifications per second and latency
/// percentiles are over every round of a variant. Appends to Benchmarks/RESULTS.md.
func runSearchBatchingBenchmark(arguments: [String]) async throws {
    var options: [String: String] = [:]
    var index = 0
    while index < arguments.count {
        guard arguments[index].hasPrefix("--"), index + 1 < arguments.count else { throw BenchError("bad argument \(arguments[index])") }
        options[String(arguments[index].dropFirst(2))] = arguments[index + 1]
        index += 2
    }
    let templates = Int(options["templates"] ?? "") ?? 1_000_000
    let seconds = Double(options["seconds"] ?? "") ?? 10
    let rounds = Int(options["rounds"] ?? "") ?? 2
    let engines = Int(options["engines"] ?? "") ?? ProcessInfo.processInfo.activeProcessorCount
    let environment = ProcessInfo.processInfo.environment
    let photoPath = (environment["FACEGATE_TEST_IMAGES"] ?? ".run/testdata") + "/" + (options["photo"] ?? "obama.jpg")
    let side = Int(options["side"] ?? "") ?? 250
    let photo = try scaled(photoPath, side: side)

    var configuration = FaceEngineConfiguration(modelDirectory: environment["FACEGATE_MODEL_DIR"] ?? ".run/models")
    configuration.model = .sface2021dec
    let pool = try FaceEnginePool(configuration: configuration, count: engines)
    let gallery = FaceGallery()
    gallery.reserve(capacity: templates)
    var random = BenchRandom(state: 42)
    for _ in 0..<templates {
        gallery.upsert(templateId: random.uuid(), userId: random.uuid(), embedding: random.unitVector(128))
    }
    print("gallery of \(templates) templates built; \(engines) SFace engines")

    struct Figures {
        var completed = 0
        var seconds = 0.0
        var latencies: [Double] = []
        var scans = 0
    }
    /// One timed round: `concurrency` workers, each running identify jobs back to back until the time is up.
    func round(concurrency: Int, queue: GallerySearchQueue?) async throws -> Figures {
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let started = ContinuousClock.now
        let before = queue?.counts.scans ?? 0
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var latencies: [Double] = []
                    while ContinuousClock.now < end {
                        let start = ContinuousClock.now
                        guard let embedding = try await pool.analyze(Array(photo)).faces.first?.embedding else {
                            throw BenchError("no face in \(photoPath)")
                        }
                        let matches = if let queue { await queue.search(embedding, k: 5, in: gallery) } else { gallery.search(embedding, k: 5) }
                        guard matches.count == 5 else { throw BenchError("the search answered \(matches.count) of 5") }
                        latencies.append((ContinuousClock.now - start).milliseconds)
                    }
                    return latencies
                }
            }
            var all: [Double] = []
            for try await part in group { all += part }
            return all
        }
        return Figures(completed: latencies.count, seconds: (ContinuousClock.now - started).seconds, latencies: latencies,
                       scans: (queue?.counts.scans ?? 0) - before)
    }

    var rows: [String] = []
    for concurrency in [1, 4, 16] {
        var alone = Figures(), batched = Figures()
        let queue = GallerySearchQueue(maxBatch: 16)
        for _ in 0..<rounds {
            for batching in [false, true] {
                let figures = try await round(concurrency: concurrency, queue: batching ? queue : nil)
                if batching {
                    batched.completed += figures.completed; batched.seconds += figures.seconds
                    batched.latencies += figures.latencies; batched.scans += figures.scans
                } else {
                    alone.completed += figures.completed; alone.seconds += figures.seconds; alone.latencies += figures.latencies
                }
            }
        }
        queue.close()
        func describe(_ figures: Figures) -> (rate: Double, text: String) {
            let sorted = figures.latencies.sorted()
            let rate = Double(figures.completed) / figures.seconds
            return (rate, String(format: "%.1f/s, p50 %.0f ms, p99 %.0f ms", rate, Bench.percentile(sorted, 50), Bench.percentile(sorted, 99)))
        }
        let a = describe(alone), b = describe(batched)
        let meanBatch = batched.scans > 0 ? Double(batched.completed) / Double(batched.scans) : 0
        let row = String(format: "| %d | %@ | %@ | %.1f | %.2f× |", concurrency, a.text, b.text, meanBatch, b.rate / a.rate)
        print(row)
        rows.append(row)
    }
    try Bench.record("Identify throughput of one matcher: search batching (`facegate-bench batching`)", """
        `facegate-bench batching --templates \(templates) --seconds \(Int(seconds)) --rounds \(rounds)`: identify jobs without the
        broker, each embedding \((photoPath as NSString).lastPathComponent) scaled to \(side) px with \(engines) SFace engines and searching a gallery of
        \(templates) seeded unit vectors (float32, top 5); alone = `MATCHER_SEARCH_BATCH=1` (the search on the job's own
        thread), batched = the default 16 (queries waiting for a scan share the next one). Rounds of \(Int(seconds)) s alternate
        alone and batched, \(rounds) of each per concurrency. Load average at the end: \(Bench.loadAverage()).

        | concurrency | alone | batched | mean batch | batched / alone throughput |
        |---|---|---|---|---|
        \(rows.joined(separator: "\n"))
        """)
}

/// The photo as a JPEG of at most `side` pixels on its longest side (ImageMagick's `convert`).
private func scaled(_ path: String, side: Int) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["convert", path, "-auto-orient", "-resize", "\(side)x\(side)>", "-quality", "90", "jpg:-"]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0, !data.isEmpty else { throw BenchError("convert could not scale \(path)") }
    return data
}

extension BenchRandom {
    mutating func uuid() -> UUID {
        let (a, b) = (next(), next())
        return withUnsafeBytes(of: (a, b)) { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }

    /// A random direction: Gaussian components, normalised.
    mutating func unitVector(_ dimension: Int) -> [Float] {
        var vector: [Float] = []
        while vector.count < dimension {
            let (a, b) = gaussianPair()
            vector += [a, b]
        }
        vector = Array(vector.prefix(dimension))
        let norm = vector.reduce(0) { $0 + $1 * $1 }.squareRoot()
        return vector.map { $0 / norm }
    }
}
