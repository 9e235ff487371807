import FaceEngine
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `facegate-bench face-engine [--images DIR] [--models DIR] [--peer-python PATH] [--repeat N] [--results FILE]`
///
/// (a) Equivalence: for each test image, the Python peer (face_recognition over dlib) reports its box and
///     128-D encoding; FaceEngine computes the descriptor at that same box from the same bytes.
/// (b) Pipeline time decode → detect → align → embed per image, FaceEngine and the peer alternating in
///     the same run, medians of N runs after one warm-up.
/// (c) Engine creation time, the detector's reduction size, pool throughput with OpenBLAS multi-threaded
///     and single-threaded. (a), (b) run with OpenBLAS on one thread, like the peer's dlib (no BLAS).
/// Figures go to stdout and replace the "FaceEngine" section of Benchmarks/RESULTS.md.
func runFaceEngineBenchmark(arguments: [String]) async throws {
    let environment = ProcessInfo.processInfo.environment
    let options = Bench.options(arguments)
    let imageDirectory = options["images"] ?? environment["FACEGATE_TEST_IMAGES"] ?? ".run/testdata"
    let modelDirectory = options["models"] ?? environment["FACEGATE_MODEL_DIR"] ?? ".run/models"
    let peerPython = options["peer-python"] ?? environment["FACEGATE_PEER_PYTHON"] ?? ".run/peer-venv/bin/python"
    let repetitions = Int(options["repeat"] ?? "") ?? 5
    let resultsPath = options["results"] ?? "Benchmarks/RESULTS.md"
    let peerScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("peers/face_pipeline_peer.py").path

    let names = ["obama.jpg", "obama2.jpg", "obama3.jpg", "obama_partial_face.jpg", "obama_partial_face2.jpg",
                 "biden.jpg", "32bit.png"]
    let paths = names.map { imageDirectory + "/" + $0 }
    let images = try paths.map { [UInt8](try Data(contentsOf: URL(fileURLWithPath: $0))) }
    var report: [String] = []
    func emit(_ line: String) {
        print(line)
        report.append(line)
    }

    // (c) creation
    let configuration = FaceEngineConfiguration(modelDirectory: modelDirectory)
    let baseMemory = residentMegabytes()
    var clock = ContinuousClock.now
    let firstEngine = try FaceEngine(configuration: configuration)
    let firstLoad = milliseconds(since: clock)
    let firstMemory = residentMegabytes()
    clock = ContinuousClock.now
    let secondEngine = try FaceEngine(configuration: configuration)
    let secondLoad = milliseconds(since: clock)
    let secondMemory = residentMegabytes()
    emit("Engine creation: first \(format(firstLoad)) ms and +\(format(firstMemory - baseMemory)) MB resident (loads all "
        + "three models, 131 MB of files); second while the first is alive \(format(secondLoad)) ms and "
        + "+\(format(secondMemory - firstMemory)) MB (shares the landmark models, loads its own descriptor network).")
    _ = secondEngine

    // (c) pool throughput: OpenBLAS as the process found it, then on one thread
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let pool = try FaceEnginePool(configuration: configuration, count: cores)
    let startingThreads = blasThreads()
    let multiThreaded = try await poolThroughput(pool, images: images)
    setBlasThreads(1)
    let singleThreaded = try await poolThroughput(pool, images: images)
    emit("")
    emit("Pool of \(cores) engines, \(4 * images.count) analyses of the test images submitted at once: "
        + "\(String(format: "%.1f", multiThreaded)) images/s with OpenBLAS on \(startingThreads) thread(s), "
        + "\(String(format: "%.1f", singleThreaded)) images/s with OpenBLAS on 1 thread.")

    // detector reduction size
    emit("")
    emit("### Detection size (detectionMaxSide): HOG time summed over the \(images.count) images, faces found, box overlap with a full-resolution scan")
    emit("")
    emit("| detectionMaxSide | detect ms (sum of medians) | faces found | smallest IoU vs full resolution |")
    emit("|---|---|---|---|")
    var fullBoxes: [FaceBox?] = []
    var fullConfiguration = configuration
    fullConfiguration.detectionMaxSide = 4096
    let fullEngine = try FaceEngine(configuration: fullConfiguration)
    for image in images { fullBoxes.append(try fullEngine.analyze(image, options: .init(embeddings: false)).faces.first?.box) }
    for side in [640, 800, 1024, 1280, 1600, 4096] {
        var sideConfiguration = configuration
        sideConfiguration.detectionMaxSide = side
        let engine = try FaceEngine(configuration: sideConfiguration)
        var detectTotal = 0.0, found = 0, smallestOverlap = 1.0
        for (position, image) in images.enumerated() {
            var samples: [Double] = []
            var box: FaceBox?
            for _ in 0..<3 {
                let analysis = try engine.analyze(image, options: .init(embeddings: false))
                samples.append(analysis.detectMilliseconds)
                box = analysis.faces.first?.box
            }
            detectTotal += median(samples)
            if let box {
                found += 1
                if let full = fullBoxes[position] { smallestOverlap = min(smallestOverlap, intersectionOverUnion(box, full)) }
            }
        }
        emit("| \(side)\(side == 4096 ? " (no reduction)" : "") | \(format(detectTotal)) | \(found) of \(images.count) | "
            + "\(String(format: "%.2f", smallestOverlap)) |")
    }

    // (a) equivalence at the peer's boxes
    let peerBoxes = try runPeer(peerPython, [peerScript, "boxes"] + paths)
    emit("")
    emit("### Equivalence with face_recognition at the peer's box")
    emit("")
    emit("| image | peer box (l,t,r,b) | FaceEngine box | max abs diff | L2 distance |")
    emit("|---|---|---|---|---|")
    var worst: Float = 0
    for (position, line) in peerBoxes.enumerated() {
        let peer = try JSONDecoder().decode(PeerBoxes.self, from: Data(line.utf8))
        guard let face = peer.faces.first else {
            emit("| \(names[position]) | no face | | | |")
            continue
        }
        let box = FaceBox(left: face.left, top: face.top, right: face.right, bottom: face.bottom)
        let ours = try firstEngine.embedding(images[position], box: box)
        let maxDiff = zip(ours, face.embedding).map { abs($0 - $1) }.max() ?? .infinity
        worst = max(worst, maxDiff)
        let own = try firstEngine.analyze(images[position]).faces.first?.box
        let ownText = own.map { "\($0.left),\($0.top),\($0.right),\($0.bottom)" } ?? "none"
        emit("| \(names[position]) | \(box.left),\(box.top),\(box.right),\(box.bottom) | \(ownText) | "
            + "\(String(format: "%.2e", Double(maxDiff))) | \(String(format: "%.2e", Double(euclideanDistance(ours, face.embedding)))) |")
    }
    emit("")
    emit("Largest per-component difference over all images: \(String(format: "%.2e", Double(worst))).")

    // (b) pipeline timing, alternating per image
    let peer = try PeerServer(python: peerPython, script: peerScript)
    defer { peer.stop() }
    emit("")
    emit("### Pipeline time per image (median of \(repetitions) after a warm-up, milliseconds)")
    emit("")
    emit("FaceEngine: decode (libjpeg-turbo/libpng) → HOG on a copy reduced to ≤ 1024 px, no upsampling → 5-point "
        + "shape → chip → ResNet, largest face. Peer *default*: `load_image_file` (PIL) → `face_locations` (HOG on "
        + "the full image upsampled ×2) → `face_encodings`. Peer *matched*: the same work as FaceEngine (PIL decode, "
        + "HOG without upsampling on a ≤ 1024 px copy, encodings of the largest box).")
    emit("")
    emit("| image | size | FaceEngine decode / detect / embed = total | peer matched total | ratio vs matched "
        + "| peer default total | ratio vs default |")
    emit("|---|---|---|---|---|---|---|")
    var ratiosMatched: [Double] = []
    var ratiosDefault: [Double] = []
    for (position, image) in images.enumerated() {
        _ = try firstEngine.analyze(image)
        var totals: [Double] = [], decodes: [Double] = [], detects: [Double] = [], embeds: [Double] = []
        var size = ""
        for _ in 0..<repetitions {
            let start = ContinuousClock.now
            let analysis = try firstEngine.analyze(image)
            totals.append(milliseconds(since: start))
            decodes.append(analysis.decodeMilliseconds)
            detects.append(analysis.detectMilliseconds)
            embeds.append(analysis.embedMilliseconds)
            size = "\(analysis.width)×\(analysis.height)"
        }
        let matched = try peer.time(variant: "matched", repetitions: repetitions, path: paths[position])
        let standard = try peer.time(variant: "default", repetitions: repetitions, path: paths[position])
        let total = median(totals)
        ratiosMatched.append(total / matched.totalMs)
        ratiosDefault.append(total / standard.totalMs)
        emit("| \(names[position]) | \(size) | \(format(median(decodes))) / \(format(median(detects))) / "
            + "\(format(median(embeds))) = **\(format(total))** | \(format(matched.decodeMs)) / \(format(matched.detectMs)) / "
            + "\(format(matched.embedMs)) = **\(format(matched.totalMs))** | \(String(format: "%.2f", total / matched.totalMs)) | "
            + "\(format(standard.totalMs)) | \(String(format: "%.2f", total / standard.totalMs)) |")
    }
    emit("")
    emit("Builds compared: the peer's dlib is the dlib-bin 20.0.1 wheel (compiled with AVX, no BLAS: the ResNet runs on "
        + "dlib's own matrix code); FaceEngine uses Debian's libdlib 19.24 and compiles dlib's header-only HOG code at -O3 "
        + "for baseline x86-64 (SSE2), with the ResNet's convolutions in OpenBLAS. Both run single-threaded here.")
    emit("")
    emit("Geometric mean of FaceEngine / peer: \(String(format: "%.2f", geometricMean(ratiosMatched))) against the "
        + "matched peer, \(String(format: "%.2f", geometricMean(ratiosDefault))) against face_recognition's default.")

    try replaceResultsSection(heading: "## FaceEngine: dlib pipeline vs Python face_recognition",
                              command: "swift run -c release facegate-bench face-engine", lines: report, path: resultsPath)
}

private func poolThroughput(_ pool: FaceEnginePool, images: [[UInt8]]) async throws -> Double {
    let jobs = 4 * images.count
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for job in 0..<jobs {
            let image = images[job % images.count]
            group.addTask { _ = try await pool.analyze(image) }
        }
        try await group.waitForAll()
    }
    return Double(jobs) / (milliseconds(since: start) / 1000)
}

func intersectionOverUnion(_ a: FaceBox, _ b: FaceBox) -> Double {
    let width = max(0, min(a.right, b.right) - max(a.left, b.left) + 1)
    let height = max(0, min(a.bottom, b.bottom) - max(a.top, b.top) + 1)
    let intersection = Double(width * height)
    return intersection / (Double(a.width * a.height + b.width * b.height) - intersection)
}

// OpenBLAS is loaded with dlib; its thread count is process-wide and read from the environment at load
// time, so the benchmark changes it through OpenBLAS's own entry points.
private typealias SetThreads = @convention(c) (Int32) -> Void
private typealias GetThreads = @convention(c) () -> Int32

func setBlasThreads(_ count: Int32) {
    guard let symbol = dlsym(nil, "openblas_set_num_threads") else { return }
    unsafeBitCast(symbol, to: SetThreads.self)(count)
}

private func blasThreads() -> Int32 {
    guard let symbol = dlsym(nil, "openblas_get_num_threads") else { return 0 }
    return unsafeBitCast(symbol, to: GetThreads.self)()
}

private struct PeerBoxes: Decodable {
    struct Face: Decodable {
        var top: Int, right: Int, bottom: Int, left: Int
        var embedding: [Float]
    }
    var faces: [Face]
}

struct PeerTiming: Decodable {
    var decodeMs: Double, detectMs: Double, embedMs: Double, totalMs: Double
}

/// A Python peer in `serve` mode: one request line ("VARIANT REPEAT PATH") in, one JSON line out. Also used by
/// the SFace benchmark.
final class PeerServer {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffer = Data()
    /// The peer's first line, sent once its models are loaded.
    private(set) var readyLine = ""

    init(python: String, script: String, arguments: [String] = ["serve"]) throws {
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script] + arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        readyLine = try readLine()  // {"ready": true, …} once the models are loaded
    }

    func time(variant: String, repetitions: Int, path: String) throws -> PeerTiming {
        input.fileHandleForWriting.write(Data("\(variant) \(repetitions) \(path)\n".utf8))
        return try JSONDecoder().decode(PeerTiming.self, from: Data(try readLine().utf8))
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitForExit()
    }

    private func readLine() throws -> String {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw BenchError("the peer exited early") }
            buffer.append(chunk)
        }
    }
}


func runPeer(_ python: String, _ arguments: [String]) throws -> [String] {
    let process = Process()
    let output = Pipe()
    process.executableURL = URL(fileURLWithPath: python)
    process.arguments = arguments
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitForExit()
    guard process.terminationStatus == 0 else { throw BenchError("peer failed: \(arguments.prefix(2))") }
    return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
}

// Shared by the benchmarks of this target.
func milliseconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
}

func residentMegabytes() -> Double {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return (Double(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func geometricMean(_ values: [Double]) -> Double {
    exp(values.map { log($0) }.reduce(0, +) / Double(max(1, values.count)))
}

func format(_ value: Double) -> String { String(format: "%.1f", value) }

private func shell(_ command: String) -> String {
    let process = Process()
    let output = Pipe()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    process.standardOutput = output
    try? process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitForExit()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Replaces a benchmark's section of the results file (or appends it), with the machine, load and date.
func replaceResultsSection(heading: String, command: String, lines: [String], path: String) throws {
    let machine = "Machine: \(shell("uname -m")), \(shell("nproc")) cores, "
        + "\(shell("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2")); "
        + "load average at the end \(shell("cut -d' ' -f1-3 /proc/loadavg")); date \(shell("date -u +%Y-%m-%dT%H:%MZ")). "
        + "Release build (`\(command)`)."
    let section = ([heading, "", machine, ""] + lines).joined(separator: "\n") + "\n"
    let existing = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "# Benchmark results\n"
    var updated: String
    if let start = existing.range(of: heading + "\n") {
        // The section runs to the next level-2 heading or the end of the file.
        let end = existing[start.upperBound...].range(of: "\n## ").map { existing.index(after: $0.lowerBound) }
        updated = String(existing[..<start.lowerBound]) + section
        if let end { updated += "\n" + existing[end...] }
    } else {
        updated = existing + (existing.hasSuffix("\n") ? "\n" : "\n\n") + section
    }
    try updated.write(toFile: path, atomically: true, encoding: .utf8)
}
