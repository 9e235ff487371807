import Dispatch
@_spi(Benchmarking) import FaceEngine
import Foundation

// facegate-bench gallery [--sizes 10000,100000,1000000] [--k 5] [--batch 16] [--results Benchmarks/RESULTS.md]
//                        [--peer Benchmarks/peers/gallery_peer.py] [--python .run/peer-venv/bin/python]
//                        [--data-dir DIR] [--no-peer]
//
// 1:N top-k per query on seed-generated synthetic templates, the same raw float32
// file read by the numpy / FAISS peer. Appends its figures to RESULTS.md.

private struct GalleryBenchOptions {
    var sizes = [10_000, 100_000, 1_000_000]
    var k = 5
    var batch = 16
    var results = "Benchmarks/RESULTS.md"
    var peer = "Benchmarks/peers/gallery_peer.py"
    var python = ProcessInfo.processInfo.environment["FACEGATE_PEER_PYTHON"] ?? ".run/peer-venv/bin/python"
    var dataDir = NSTemporaryDirectory() + "facegate-gallery-bench"
    var runPeer = true

    init(_ arguments: [String]) throws {
        var i = 0
        func value() throws -> String {
            i += 1
            guard i < arguments.count else { throw BenchError("missing value for \(arguments[i - 1])") }
            return arguments[i]
        }
        while i < arguments.count {
            switch arguments[i] {
            case "--sizes": sizes = try value().split(separator: ",").compactMap { Int($0) }
            case "--k": k = Int(try value()) ?? k
            case "--batch": batch = Int(try value()) ?? batch
            case "--results": results = try value()
            case "--peer": peer = try value()
            case "--python": python = try value()
            case "--data-dir": dataDir = try value()
            case "--no-peer": runPeer = false
            default: throw BenchError("unknown argument \(arguments[i])")
            }
            i += 1
        }
    }
}

/// Seeded generator (SplitMix64) for the benchmarks' synthetic templates; the gallery benchmark writes what it draws to
/// the data file both sides read.
struct BenchRandom {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
    mutating func uniform() -> Double { Double(next() >> 11) * 0x1p-53 }
    mutating func gaussianPair() -> (Float, Float) {
        let u = max(uniform(), 0x1p-60), v = uniform()
        let r = (-2 * Foundation.log(u)).squareRoot()
        return (Float(r * cos(2 * .pi * v)), Float(r * sin(2 * .pi * v)))
    }
}

/// Row number in the first 8 bytes (little-endian), so results map back to file rows.
func templateId(row: Int) -> UUID {
    var id: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0x47, 0, 0, 0, 0, 0, 0, 0)
    withUnsafeMutableBytes(of: &id) { $0.storeBytes(of: UInt64(row).littleEndian, as: UInt64.self) }
    return UUID(uuid: id)
}

func row(of id: UUID) -> Int {
    withUnsafeBytes(of: id.uuid) { Int(UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self))) }
}

private func seconds(_ body: () -> Void) -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

private func shell(_ command: String) -> String {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/sh")
    p.arguments = ["-c", command]
    let pipe = Pipe()
    p.standardOutput = pipe
    try? p.run()
    p.waitForExit()
    return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        .trimmingCharacters(in: .whitespacesAndNewlines)
}

private struct Timing {
    var singleMs: Double
    var singleMinMs: Double
    var batchMsPerQuery: Double
    var batchMinMsPerQuery: Double
}

private func fmt(_ v: Double?, _ digits: Int = 3) -> String {
    guard let v, v.isFinite else { return "–" }
    return String(format: "%.\(digits)f", v)
}

func runGalleryBenchmark(arguments: [String]) async throws {
    let options = try GalleryBenchOptions(arguments)
    let dim = 128, k = options.k, batch = options.batch
    let maxN = options.sizes.max() ?? 0
    let queryCount = 64
    let wallStart = Date()
    func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    // Machine.
    let cpu = shell("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-")
    let machine = "\(shell("uname -m")), \(shell("nproc")) cores, \(cpu), \(shell("free -g | awk '/Mem:/{print $2}'")) GiB"
    let loadBefore = shell("cut -d' ' -f1-3 /proc/loadavg")
    say("gallery benchmark on \(machine); load \(loadBefore)")
    let env = ProcessInfo.processInfo.environment
    let blasEnv = "OPENBLAS_CORETYPE=\(env["OPENBLAS_CORETYPE"] ?? "unset"), OPENBLAS_L2_SIZE=\(env["OPENBLAS_L2_SIZE"] ?? "unset")"

    let openBLASThreads = shell("nproc")
    let bandwidth1 = GalleryDiagnostics.measureReadBandwidth(bytes: 1 << 30, threads: 1)
    let bandwidth2 = GalleryDiagnostics.measureReadBandwidth(bytes: 1 << 30, threads: 2)
    say(String(format: "read bandwidth: %.2f GB/s (1 thread), %.2f GB/s (2 threads)", bandwidth1 / 1e9, bandwidth2 / 1e9))

    // Data: templates are independent random unit-scale vectors (each its own person);
    // each query is a template from the first 10k moved by ~0.35 or ~0.42 (same-person distances).
    try FileManager.default.createDirectory(atPath: options.dataDir, withIntermediateDirectories: true)
    let galleryPath = options.dataDir + "/gallery_f32.bin", queryPath = options.dataDir + "/queries_f32.bin"
    let data = UnsafeMutableBufferPointer<Float>.allocate(capacity: maxN * dim)
    defer { data.deallocate() }
    var rng = BenchRandom(state: 0x5eed_f00d)
    let scale = 1 / Float(dim).squareRoot()
    let genSeconds = seconds {
        var i = 0
        while i < data.count {
            let (a, b) = rng.gaussianPair()
            data[i] = a * scale
            if i + 1 < data.count { data[i + 1] = b * scale }
            i += 2
        }
    }
    var queries = [[Float]]()
    var plantedRow = [Int]()
    for q in 0..<queryCount {
        let target = Int(rng.next() % UInt64(min(maxN, 10_000)))
        plantedRow.append(target)
        queries.append((0..<dim).map { j in
            let (a, _) = rng.gaussianPair()
            return data[target * dim + j] + a * 0.35 / Float(dim).squareRoot() * (q % 2 == 0 ? 1 : 1.2)
        })
    }
    guard FileManager.default.createFile(atPath: galleryPath, contents: Data(buffer: UnsafeBufferPointer(data))),
          FileManager.default.createFile(atPath: queryPath, contents: queries.flatMap { $0 }.withUnsafeBufferPointer { Data(buffer: $0) })
    else { throw BenchError("cannot write the data files in \(options.dataDir)") }
    say(String(format: "data: %d x %d float32 generated in %.1f s -> %@", maxN, dim, genSeconds, galleryPath))

    // Peer first (it reads the files); its figures are merged into the tables below.
    var peer: [String: Any]? = nil
    if options.runPeer {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: options.python)
        p.arguments = [options.peer, "--gallery", galleryPath, "--queries", queryPath, "--dim", "\(dim)",
                       "--sizes", options.sizes.map(String.init).joined(separator: ","), "--k", "\(k)", "--batch", "\(batch)"]
        var peerEnv = env
        peerEnv["OPENBLAS_CORETYPE"] = nil  // these slow a current numpy; unset for this command only
        peerEnv["OPENBLAS_L2_SIZE"] = nil
        p.environment = peerEnv
        let pipe = Pipe()
        p.standardOutput = pipe
        let peerStart = Date()
        try p.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitForExit()
        if p.terminationStatus == 0, let json = try? JSONSerialization.jsonObject(with: output) as? [String: Any] {
            peer = json
            say(String(format: "peer finished in %.0f s", Date().timeIntervalSince(peerStart)))
        } else {
            say("peer failed (status \(p.terminationStatus)); continuing without it")
        }
    }
    let peerSizes = (peer?["sizes"] as? [[String: Any]]) ?? []
    let bandwidthMiddle = GalleryDiagnostics.measureReadBandwidth(bytes: 1 << 30, threads: 1)
    // Other work on the machine only lowers a bandwidth reading: the highest one is the closest
    // to what the memory can do, so percentages are taken against it.
    let bandwidthBest = max(bandwidth1, bandwidthMiddle)

    struct Variant {
        var name: String
        var storage: GalleryStorage
        var kernel: GalleryScanKernel
        var rowBytes: Int
    }
    let variants = [
        Variant(name: "Swift fp32, AVX2 scan", storage: .float32, kernel: .vectorized, rowBytes: 512),
        Variant(name: "Swift fp32, OpenBLAS sgemv/sgemm", storage: .float32, kernel: .blas, rowBytes: 512),
        Variant(name: "Swift fp16 + fp32 re-score", storage: .float16, kernel: .vectorized, rowBytes: 256),
        Variant(name: "Swift int8 + fp32 re-score", storage: .int8, kernel: .vectorized, rowBytes: 128),
    ]

    var tables: [String] = []
    var buildLines: [String] = []
    var recallLines: [String] = []
    var agreementLines: [String] = []
    var autoLine = ""

    for n in options.sizes {
        say("n = \(n)")
        let big = n >= 500_000
        let singleRounds = big ? 20 : n >= 50_000 ? 60 : 200
        let batchRounds = big ? 3 : n >= 50_000 ? 8 : 40
        var rows: [(String, String, Timing, Int)] = []  // name, threads, timing, memory bytes
        var fp32Top: [[GalleryMatch]] = []
        var fp32Batch: [[GalleryMatch]] = []

        for variant in variants {
            // Builds are shared by the two fp32 kernels.
            if variant.kernel == .blas, variant.storage == .float32 { continue }
            let gallery = FaceGallery(dimension: dim, storage: variant.storage)
            let buildSeconds = seconds {
                gallery.reserve(capacity: n)
                for r in 0..<n {
                    let v = Array(UnsafeBufferPointer(start: data.baseAddress! + r * dim, count: dim))
                    gallery.upsert(templateId: templateId(row: r), userId: templateId(row: r / 3), embedding: v)
                }
            }
            buildLines.append("| \(n) | \(variant.storage) | \(fmt(buildSeconds, 2)) s | \(fmt(Double(gallery.memoryBytes) / Double(n), 1)) B | \(fmt(Double(gallery.memoryBytes) / 1_048_576, 1)) MiB |")
            let kernels: [Variant] = variant.storage == .float32 ? variants.filter { $0.storage == .float32 } : [variant]
            for v in kernels {
                gallery.setScanKernel(v.kernel)
                var singles: [Double] = []
                for r in 0..<singleRounds {
                    let q = queries[r % queries.count]
                    singles.append(seconds { _ = gallery.search(q, k: k) })
                }
                let results = queries.map { gallery.search($0, k: k) }  // untimed: for the recall table
                let batchQueries = Array(queries.prefix(batch))
                var batched: [[GalleryMatch]] = []
                var batches: [Double] = []
                for _ in 0..<batchRounds { batches.append(seconds { batched = gallery.search(batch: batchQueries, k: k) }) }
                let timing = Timing(
                    singleMs: median(singles) * 1e3, singleMinMs: singles.min()! * 1e3,
                    batchMsPerQuery: median(batches) * 1e3 / Double(batch), batchMinMsPerQuery: batches.min()! * 1e3 / Double(batch))
                rows.append((v.name, v.kernel == .blas ? "OpenBLAS's (\(openBLASThreads))" : "1", timing, gallery.memoryBytes))
                say("  \(v.name): single \(fmt(timing.singleMs)) (min \(fmt(timing.singleMinMs))) ms, batch \(fmt(timing.batchMsPerQuery)) (min \(fmt(timing.batchMinMsPerQuery))) ms/query")
                if v.storage == .float32 && v.kernel == .vectorized {
                    fp32Top = results
                    fp32Batch = batched
                }
                if v.storage != .float32 {
                    let same = zip(results, fp32Top).filter { $0.first?.templateId == $1.first?.templateId }.count
                    let planted = zip(results, plantedRow).filter { $0.first.map { row(of: $0.templateId) } == $1 }.count
                    let maxDelta = zip(results, fp32Top).map { abs(($0.first?.distance ?? 0) - ($1.first?.distance ?? 0)) }.max() ?? 0
                    recallLines.append("| \(n) | \(v.storage) | \(same)/\(results.count) | \(planted)/\(results.count) | \(fmt(Double(maxDelta), 5)) |")
                }
            }
            if variant.storage == .float32 {
                gallery.setScanKernel(.automatic)
                autoLine = "automatic kernel choice: single query → \(gallery.scanKernelName(batch: false)), batch → \(gallery.scanKernelName(batch: true)); OpenBLAS core \(GalleryDiagnostics.blasCoreName) (\(blasEnv))"
            }
        }

        // Cross-check against the peer's exact top-k for the batch queries.
        let peerEntry = peerSizes.first { ($0["n"] as? Int) == n }
        if let exact = peerEntry?["topk"] as? [[String: Any]] {
            var agree = 0
            for (mine, theirs) in zip(fp32Batch, exact) {
                let rowsTheirs = (theirs["rows"] as? [Int]) ?? []
                if mine.map({ row(of: $0.templateId) }) == rowsTheirs { agree += 1 }
            }
            agreementLines.append("n = \(n): Swift fp32 batch top-\(k) equals numpy's exact top-\(k) for \(agree)/\(min(fp32Batch.count, exact.count)) queries")
        }

        // Table for this size.
        let peerMethods = (peerEntry?["methods"] as? [String: [String: Any]]) ?? [:]
        let numpyNorms = peerMethods["numpy norms trick"]
        // FAISS at its faster thread count for each figure.
        let faissRuns = peerMethods.filter { $0.key.hasPrefix("FAISS") }.map(\.value)
        func faissBest(_ key: String) -> Double? { faissRuns.compactMap { $0[key] as? Double }.min() }
        func ratio(_ theirs: Double?, _ mine: Double) -> String {
            guard let theirs, mine > 0 else { return "–" }
            return String(format: "%.2f×", theirs / mine)
        }
        func pair(_ median: Double?, _ min: Double?) -> String {
            guard let median else { return "–" }
            return "\(fmt(median)) (\(fmt(min)))"
        }
        func scanned(_ bytes: Int, _ ms: Double?) -> (String, String) {
            guard let ms, ms > 0 else { return ("–", "–") }
            let gbs = Double(bytes) / (ms / 1e3) / 1e9
            return (fmt(gbs, 2), "\(fmt(gbs * 1e9 / bandwidthBest * 100, 0))")
        }
        var lines = [
            "#### n = \(n) (top-\(k); batch = \(batch) queries per call)",
            "",
            "| method | threads | single ms/query, median (min) | batch ms/query, median (min) | scanned GB/s (single, min) | % of 1-thread read BW | single: numpy-norms ÷ this | single: best FAISS ÷ this | batch: numpy-norms ÷ this | batch: best FAISS ÷ this |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for key in peerMethods.keys.sorted() {
            let m = peerMethods[key]!
            let (gbs, pct) = scanned(n * dim * 4, m["single_min_ms"] as? Double)
            lines.append("| \(key) | \(m["threads"].map { "\($0)" } ?? "–") | \(pair(m["single_ms"] as? Double, m["single_min_ms"] as? Double)) | \(pair(m["batch_ms_per_query"] as? Double, m["batch_min_ms_per_query"] as? Double)) | \(gbs) | \(pct) | | | | |")
        }
        for (name, threads, timing, _) in rows {
            let rowBytes = variants.first { $0.name == name }!.rowBytes
            let (gbs, pct) = scanned(n * rowBytes, timing.singleMinMs)
            lines.append("| \(name) | \(threads) | \(pair(timing.singleMs, timing.singleMinMs)) | \(pair(timing.batchMsPerQuery, timing.batchMinMsPerQuery)) | \(gbs) | \(pct) | \(ratio(numpyNorms?["single_min_ms"] as? Double, timing.singleMinMs)) | \(ratio(faissBest("single_min_ms"), timing.singleMinMs)) | \(ratio(numpyNorms?["batch_min_ms_per_query"] as? Double, timing.batchMinMsPerQuery)) | \(ratio(faissBest("batch_min_ms_per_query"), timing.batchMinMsPerQuery)) |")
        }
        if let add = peerEntry?["faiss_add_s"] as? Double { lines.append("\nFAISS `add` of \(n) vectors: \(fmt(add, 2)) s.") }
        tables.append(lines.joined(separator: "\n"))
    }

    let loadAfter = shell("cut -d' ' -f1-3 /proc/loadavg")
    let bandwidthAfter = GalleryDiagnostics.measureReadBandwidth(bytes: 1 << 30, threads: 1)
    let blasPeer = peer?["blas"].flatMap { try? JSONSerialization.data(withJSONObject: $0) }.map { String(decoding: $0, as: UTF8.self) } ?? "–"
    let faissThreads = peer?["faiss_threads_default"].map { "\($0)" } ?? "–"
    let section = """

    ## Gallery: 1:N top-\(k) search (`facegate-bench gallery`)

    \(ISO8601DateFormatter().string(from: wallStart)) · \(machine) · load average \(loadBefore) before, \(loadAfter) after (other builds share the 2 cores) · run took \(fmt(Date().timeIntervalSince(wallStart), 0)) s

    - Data: \(maxN) × \(dim) float32, components N(0, 1/\(dim)) (norm ≈ 1, every template its own person), one seeded file read by both sides; \(queryCount) queries, each a template moved by ≈0.35 or ≈0.42 (same-person distances). Smaller sizes use the first n rows.
    - Memory read bandwidth measured in this run (C sum over a 1 GiB float array, best of 3): **\(fmt(bandwidth1 / 1e9, 2)) GB/s with 1 thread, \(fmt(bandwidth2 / 1e9, 2)) GB/s with 2** at the start; with 1 thread \(fmt(bandwidthMiddle / 1e9, 2)) GB/s after the peer and \(fmt(bandwidthAfter / 1e9, 2)) GB/s at the end. The "% of read BW" column divides by the highest 1-thread reading, taken before the tables were written.
    - Swift rows run on 1 thread; the OpenBLAS rows use OpenBLAS's own thread pool (one thread per core). "best FAISS" is FAISS at its faster thread count (1 or 2) for that figure; the second core was shared with other work during the run. Sizes ≤ 10k fit in the 32 MiB L3, so their GB/s exceed the DRAM figure. Peer: numpy \(peer?["numpy"] ?? "–"), faiss \(peer?["faiss"] ?? "–") (default \(faissThreads) OpenMP threads), BLAS seen by threadpoolctl with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset for that command: `\(blasPeer)`.
    - \(autoLine)
    - Times: median and (minimum) over the timed calls; the minimum is the least-disturbed run on this shared machine, and the GB/s and ratio columns use it. "scanned GB/s" = bytes of stored vectors read by one single-query search ÷ its time.
    - Compact modes: the scan ranks by the stored approximation (fp16, or int8 codes × a per-vector scale); the best max(4k, k+16) candidates are then re-scored by Σ(q − x̂)² in float64 over the decoded stored vector x̂. That is exact for the stored vector, not for the original: the original fp32 embedding stays sealed in PostgreSQL and is not held in memory (an in-memory fp32 copy alone is 512 B). fp16 vectors alone are 256 B at 128-D, so only int8 meets ≤ 200 B per template.

    \(tables.joined(separator: "\n\n"))

    #### Build and memory (reserve + one upsert per template from [Float]; memory = vectors, norms, scales, both UUIDs, id index)

    | n | storage | build | memory per template | total |
    | --- | --- | --- | --- | --- |
    \(buildLines.joined(separator: "\n"))

    #### Compact storage vs fp32 (same \(queryCount) queries)

    | n | storage | top-1 equals fp32 top-1 | top-1 is the planted template | max abs Δ of top-1 distance vs fp32 |
    | --- | --- | --- | --- | --- |
    \(recallLines.joined(separator: "\n"))

    \(agreementLines.map { "- " + $0 }.joined(separator: "\n"))

    """
    if let handle = FileHandle(forWritingAtPath: options.results) {
        handle.seekToEndOfFile()
        handle.write(Data(section.utf8))
        try handle.close()
    } else {
        guard FileManager.default.createFile(atPath: options.results, contents: Data(("# FaceGate benchmark results\n" + section).utf8))
        else { throw BenchError("cannot write \(options.results)") }
    }
    say(section)
}
