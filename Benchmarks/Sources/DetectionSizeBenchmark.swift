import FaceEngine
import Foundation

/// `facegate-bench detection-size [--images DIR] [--calibration DIR] [--models DIR] [--repeat N]`
///
/// The SFace engine's first, reduced detection scan (`FaceEngineConfiguration.detectionFirstSide`: find the faces on a
/// small copy, then scan again at full scale around each) against one scan at `detectionMaxSide` (1024), on every photo
/// whose longest side is over 640 px: the face_recognition test photos and the calibration photos of that size
/// (`scripts/calibration-data.sh`). Each setting analyses each photo `repeat` times on one thread (settings in turn,
/// photo by photo); per setting: detection and whole-analysis time (sums of the medians), the pixels the detector ran
/// on, how often the whole copy was still scanned, the faces found, and — what decides accuracy — how far the largest
/// face's box and descriptor moved from the one-scan result. The descriptor is what a login compares: a cosine of
/// 0.99 between two descriptors of one photo is a squared distance of 0.02, against a default threshold of 1.0.
func runDetectionSizeBenchmark(arguments: [String]) async throws {
    let environment = ProcessInfo.processInfo.environment
    let options = Bench.options(arguments)
    let imageDirectory = options["images"] ?? environment["FACEGATE_TEST_IMAGES"] ?? ".run/testdata"
    let calibrationDirectory = options["calibration"] ?? ".run/calibration"
    let modelDirectory = options["models"] ?? environment["FACEGATE_MODEL_DIR"] ?? ".run/models"
    let rounds = Int(options["repeat"] ?? "") ?? 3

    var paths = ["obama.jpg", "obama2.jpg", "obama3.jpg", "obama_partial_face.jpg", "obama_partial_face2.jpg", "biden.jpg", "32bit.png"]
        .map { imageDirectory + "/" + $0 }
    if let walker = FileManager.default.enumerator(atPath: calibrationDirectory) {
        paths += walker.compactMap { $0 as? String }.filter { [".jpg", ".jpeg", ".png", ".pgm"].contains(where: $0.lowercased().hasSuffix) }
            .sorted().map { calibrationDirectory + "/" + $0 }
    }
    setBlasThreads(1)
    var base = FaceEngineConfiguration(modelDirectory: modelDirectory)
    base.model = .sface2021dec
    base.detectionFirstSide = nil
    let settings: [Int?] = [nil, 320, 240]
    let engines = try settings.map { side -> FaceEngine in
        var configuration = base
        configuration.detectionFirstSide = side
        return try FaceEngine(configuration: configuration)
    }
    let oneScan = engines[0]

    // The photos over 640 px, read once.
    var photos: [(name: String, bytes: [UInt8], longest: Int)] = []
    for path in paths {
        guard let bytes = try? [UInt8](Data(contentsOf: URL(fileURLWithPath: path))),
              let analysis = try? oneScan.analyze(bytes, options: .init(embeddings: false, maxFaces: 0)) else { continue }
        let longest = max(analysis.width, analysis.height)
        if longest > 640 { photos.append(((path as NSString).lastPathComponent, bytes, longest)) }
    }
    print("\(photos.count) photos over 640 px")

    struct Tally {
        var detect = 0.0, total = 0.0, pixels = 0, fullScans = 0, faces = 0, photosWithFace = 0
        var cosines: [Double] = [], overlaps: [Double] = []
        var lost: [String] = [], gained: [String] = []
    }
    var tallies = Array(repeating: Tally(), count: settings.count)
    let loadBefore = Bench.loadAverage()
    for photo in photos {
        var reference: DetectedFace?
        var oneScanPixels = 0
        for (position, engine) in engines.enumerated() {
            var detect: [Double] = [], total: [Double] = []
            var last: FaceAnalysis?
            for _ in 0..<rounds {
                let analysis = try engine.analyze(photo.bytes, options: .init(embeddings: true, maxFaces: 1))
                detect.append(analysis.detectMilliseconds)
                total.append(analysis.decodeMilliseconds + analysis.detectMilliseconds + analysis.embedMilliseconds)
                last = analysis
            }
            guard let analysis = last else { continue }
            tallies[position].detect += median(detect)
            tallies[position].total += median(total)
            tallies[position].faces += analysis.faces.count
            let face = analysis.faces.first
            if position == 0 { reference = face }
            tallies[position].pixels += analysis.detectorPixels
            if position == 0 { oneScanPixels = analysis.detectorPixels }
            if settings[position] != nil, analysis.detectorPixels >= oneScanPixels { tallies[position].fullScans += 1 }
            if face != nil { tallies[position].photosWithFace += 1 }
            switch (reference, face) {
            case let (reference?, face?):
                tallies[position].overlaps.append(intersectionOverUnion(reference.box, face.box))
                if let a = reference.embedding, let b = face.embedding { tallies[position].cosines.append(cosine(a, b)) }
            case (_?, nil): tallies[position].lost.append(photo.name)
            case (nil, _?): tallies[position].gained.append(photo.name)
            case (nil, nil): break
            }
        }
    }

    var out: [String] = []
    out.append("SFace engine (YuNet + SFace, one thread), \(photos.count) photos whose longest side is over 640 px: the 7 face_recognition "
        + "test photos and the calibration photos of that size (`scripts/calibration-data.sh`: social-media photos, some of groups, and "
        + "portraits). Each setting analyses each photo \(rounds) times (largest face, descriptor), settings in turn photo by photo; "
        + "times are sums of the medians. *One scan*: YuNet on a copy ≤ 1024 px. *First scan at N*: YuNet first on a copy ≤ N px "
        + "to find the faces, then at the one scan's scale in a region around each (the face's longer side beyond it on every "
        + "side, regions merged when they overlap), or on the whole copy when the first scan finds nothing or the regions "
        + "would cost over 80 % of it (*whole copy too*). Detector pixels: what YuNet ran on, padding included, summed over "
        + "the photos. Box overlap and descriptor cosine compare the largest face with the one-scan result of the same photo.")
    out.append("")
    out.append("| detection | detect ms | whole analysis ms | detector pixels (M) | whole copy too | photos with a face | faces found | smallest box IoU | "
        + "descriptor cosine: smallest / 1st percentile / median | below 0.99 |")
    out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (position, side) in settings.enumerated() {
        let tally = tallies[position]
        let cosines = tally.cosines.sorted()
        let name = side.map { "first scan at \($0)" } ?? "one scan (1024)"
        let cosineCell = position == 0 ? "–" : cosines.isEmpty ? "–" : String(format: "%.4f / %.4f / %.4f", cosines[0],
                                                                              Bench.percentile(cosines, 1), Bench.percentile(cosines, 50))
        out.append("| \(name) | \(format(tally.detect)) | \(format(tally.total)) | \(String(format: "%.1f", Double(tally.pixels) / 1e6)) | \(side == nil ? "–" : "\(tally.fullScans) of \(photos.count)") | "
            + "\(tally.photosWithFace) | \(tally.faces) | \(position == 0 ? "–" : String(format: "%.3f", tally.overlaps.min() ?? 1)) | "
            + "\(cosineCell) | \(position == 0 ? "–" : String(tally.cosines.filter { $0 < 0.99 }.count)) |")
    }
    for (position, side) in settings.enumerated() where side != nil {
        let tally = tallies[position]
        if !tally.lost.isEmpty || !tally.gained.isEmpty {
            out.append("")
            out.append("First scan at \(side!): no face where one scan found one: \(tally.lost.isEmpty ? "none" : tally.lost.joined(separator: ", ")); "
                + "a face where one scan found none: \(tally.gained.isEmpty ? "none" : tally.gained.joined(separator: ", ")).")
        }
    }
    out.append("")
    out.append("Load average before \(loadBefore), after \(Bench.loadAverage()).")
    try Bench.record("SFace detection size: find on a reduced copy, refine around each face (`facegate-bench detection-size`)", out.joined(separator: "\n"))
}

private func cosine(_ a: [Float], _ b: [Float]) -> Double {
    var dot = 0.0, normA = 0.0, normB = 0.0
    for (x, y) in zip(a, b) {
        dot += Double(x) * Double(y)
        normA += Double(x) * Double(x)
        normB += Double(y) * Double(y)
    }
    return dot / (normA.squareRoot() * normB.squareRoot())
}
