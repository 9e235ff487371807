import FaceEngine
import Foundation

/// Identification accuracy on a folder laid out as `identity/image.jpg`: the first image (by name) of each
/// identity is enrolled, every other image is a probe. Prints rank-1 accuracy and, across thresholds, the
/// false-negative identification rate (a mated probe not returned as its own identity within the threshold)
/// and the false-positive identification rate (a probe whose own identity is left out of the gallery still
/// matching someone within the threshold) — the open-set figures of ISO/IEC 19795-1 / NIST FRVT 1:N.
func runAccuracyTool(arguments: [String]) async throws {
    guard let folder = arguments.first else { throw BenchError("usage: facegate-bench accuracy FOLDER [--record]") }
    let engine = try FaceEngine(configuration: FaceEngineConfiguration(modelDirectory: try Bench.environment("FACEGATE_MODEL_DIR")))
    let fileManager = FileManager.default
    var enrolled: [(identity: String, embedding: [Float])] = []
    var probes: [(identity: String, file: String, embedding: [Float])] = []
    var skipped: [String] = []
    for identity in try fileManager.contentsOfDirectory(atPath: folder).sorted() {
        let directory = folder + "/" + identity
        var isDirectory: ObjCBool = false
        guard fileManager.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else { continue }
        let files = try fileManager.contentsOfDirectory(atPath: directory).filter { [".jpg", ".jpeg", ".png"].contains(where: $0.lowercased().hasSuffix) }.sorted()
        for (index, file) in files.enumerated() {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file)))
            guard let embedding = (try? engine.analyze(bytes))?.faces.first?.embedding else {
                skipped.append("\(identity)/\(file)")
                continue
            }
            if index == 0 || !enrolled.contains(where: { $0.identity == identity }) {
                enrolled.append((identity, embedding))
            } else {
                probes.append((identity, file, embedding))
            }
        }
    }
    guard !probes.isEmpty else { throw BenchError("no probes: each identity needs at least two images with a face") }

    var rank1 = 0
    var mated: [Float] = []      // distance to the probe's own template when it is ranked first, else infinity
    var nonMated: [Float] = []   // best distance to any other identity
    for probe in probes {
        let ranked = enrolled.map { ($0.identity, euclideanDistance(probe.embedding, $0.embedding)) }.sorted { $0.1 < $1.1 }
        if ranked.first?.0 == probe.identity { rank1 += 1; mated.append(ranked[0].1) } else { mated.append(.infinity) }
        nonMated.append(ranked.first { $0.0 != probe.identity }?.1 ?? .infinity)
    }
    var table = "| threshold | FNIR | FPIR |\n| --- | --- | --- |\n"
    for threshold in stride(from: Float(0.35), through: 0.70, by: 0.05) {
        let fnir = Double(mated.filter { $0 > threshold }.count) / Double(mated.count)
        let fpir = Double(nonMated.filter { $0 <= threshold }.count) / Double(nonMated.count)
        table += String(format: "| %.2f | %.3f | %.3f |\n", threshold, fnir, fpir)
    }
    let report = """
    Folder `\(folder)`: \(enrolled.count) identities enrolled, \(probes.count) probes\(skipped.isEmpty ? "" : ", \(skipped.count) images without a face skipped").
    Rank-1 identification accuracy: \(rank1)/\(probes.count) (\(String(format: "%.1f", Double(rank1) / Double(probes.count) * 100)) %).

    \(table)
    """
    print(report)
    if arguments.contains("--record") { try Bench.record("Identification accuracy (facegate-bench accuracy)", report) }
}
