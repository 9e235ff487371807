import FaceEngine
import Foundation

/// `facegate-bench sface-engine [--images DIR] [--calibration DIR] [--models DIR] [--peer-python PATH] [--repeat N]
/// [--results FILE]`
///
/// FaceEngine's YuNet + SFace pipeline against two Python peers on the same photos, one thread each:
/// - `peers/sface_pipeline_peer.py`: the same two ONNX files through opencv-python's `cv2.FaceDetectorYN` and
///   `cv2.FaceRecognizerSF` (variants *matched*: FaceEngine's detection size; *default*: OpenCV's sample, YuNet on
///   the full image);
/// - `peers/face_pipeline_peer.py`: Python `face_recognition` (dlib), variants *matched* and *default*.
/// FaceEngine's dlib pipeline runs too, for the cost of the model change.
///
/// (a) Agreement: cosine between FaceEngine's SFace descriptor and opencv-python's for the same photo.
/// (b) Time per photo of decode → detect → align → embed (largest face): every round runs each pipeline once per
///     photo in turn (FaceEngine SFace, the four peer variants, FaceEngine dlib), after one untimed run; medians over
///     the rounds. The photos are the face_recognition test photos and, when `scripts/calibration-data.sh` has
///     run, six calibration photos of the sizes found there.
/// Figures go to stdout and replace the "FaceEngine SFace" section of Benchmarks/RESULTS.md.
func runSFaceEngineBenchmark(arguments: [String]) async throws {
    let environment = ProcessInfo.processInfo.environment
    let options = Bench.options(arguments)
    let imageDirectory = options["images"] ?? environment["FACEGATE_TEST_IMAGES"] ?? ".run/testdata"
    let calibrationDirectory = options["calibration"] ?? ".run/calibration"
    let modelDirectory = options["models"] ?? environment["FACEGATE_MODEL_DIR"] ?? ".run/models"
    let peerPython = options["peer-python"] ?? environment["FACEGATE_PEER_PYTHON"] ?? ".run/peer-venv/bin/python"
    let rounds = Int(options["repeat"] ?? "") ?? 7
    let resultsPath = options["results"] ?? "Benchmarks/RESULTS.md"
    let peers = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("peers")
    let sfacePeerScript = peers.appendingPathComponent("sface_pipeline_peer.py").path
    let dlibPeerScript = peers.appendingPathComponent("face_pipeline_peer.py").path

    var paths = ["obama.jpg", "obama2.jpg", "obama3.jpg", "obama_partial_face.jpg", "obama_partial_face2.jpg",
                 "biden.jpg", "32bit.png"].map { imageDirectory + "/" + $0 }
    let calibrationSamples = ["labelled/orl-s01/01.png", "labelled/john-Simm/000288_00470387.jpg",
                              "impostors/radar-AJ_Albuquerque/1.jpg", "impostors/radar-Acir_Gurgacz/1.jpg",
                              "impostors/ctu-female_46/Female_46_1_2_1.jpg", "impostors/ctu-female_46/Female_46_1_4.jpg"]
        .map { calibrationDirectory + "/" + $0 }
    let withCalibration = calibrationSamples.allSatisfy { FileManager.default.fileExists(atPath: $0) }
    if withCalibration { paths += calibrationSamples }
    let images = try paths.map { [UInt8](try Data(contentsOf: URL(fileURLWithPath: $0))) }
    let names = paths.map { path in
        path.hasPrefix(calibrationDirectory + "/") ? String(path.dropFirst(calibrationDirectory.count + 1)) : (path as NSString).lastPathComponent
    }

    var report: [String] = []
    func emit(_ line: String) {
        print(line)
        report.append(line)
    }
    let loadBefore = Bench.loadAverage()

    var configuration = FaceEngineConfiguration(modelDirectory: modelDirectory)
    configuration.model = .sface2021dec
    let memoryBefore = residentMegabytes()
    var start = ContinuousClock.now
    let sface = try FaceEngine(configuration: configuration)
    let creation = milliseconds(since: start)
    let memoryAfter = residentMegabytes()
    let dlib = try FaceEngine(configuration: FaceEngineConfiguration(modelDirectory: modelDirectory))
    setBlasThreads(1)   // the dlib engine's ResNet; single-threaded like every other pipeline here

    start = ContinuousClock.now
    let sfacePeer = try PeerServer(python: peerPython, script: sfacePeerScript, arguments: ["serve", modelDirectory])
    let peerStartup = milliseconds(since: start)
    defer { sfacePeer.stop() }
    let dlibPeer = try PeerServer(python: peerPython, script: dlibPeerScript)
    defer { dlibPeer.stop() }
    let peerInfo = (try? JSONSerialization.jsonObject(with: Data(sfacePeer.readyLine.utf8))) as? [String: Any] ?? [:]

    emit("FaceEngine SFace creation: \(format(creation)) ms, +\(format(memoryAfter - memoryBefore)) MB resident (YuNet + "
        + "SFace ONNX, 39 MB of files, and dlib's optional 68-point landmark model, 100 MB, when the model directory has it; OpenCV \(opencvVersion()) from Debian). The opencv-python peer (OpenCV "
        + "\(peerInfo["opencv"] as? String ?? "?"), cv2.getNumThreads() = \(peerInfo["threads"] as? Int ?? -1)) starts and loads "
        + "both models in \(format(peerStartup)) ms. Descriptors: one network pass per face, no flip augmentation "
        + "(FaceEngineConfiguration's default).")

    // (a) agreement with opencv-python on the same photos
    emit("")
    emit("### Agreement with opencv-python (FaceDetectorYN + FaceRecognizerSF.alignCrop/feature, matched variant)")
    emit("")
    emit("| photo | size | FaceEngine box (l,t,r,b) | peer box | cosine of the two descriptors |")
    emit("|---|---|---|---|---|")
    let peerFeatures = try runPeer(peerPython, [sfacePeerScript, "features", modelDirectory] + paths)
    var cosines: [Double] = []
    for (position, line) in peerFeatures.enumerated() {
        let peer = try JSONDecoder().decode(PeerFeature.self, from: Data(line.utf8))
        let analysis = try sface.analyze(images[position])
        let ours = analysis.faces.first
        let ourBox = ours.map { "\($0.box.left),\($0.box.top),\($0.box.right),\($0.box.bottom)" } ?? "no face"
        let peerBox = peer.box.map { b in "\(Int(b[0].rounded())),\(Int(b[1].rounded())),\(Int((b[0] + b[2]).rounded()) - 1),\(Int((b[1] + b[3]).rounded()) - 1)" } ?? "no face"
        var cosine = "–"
        if let a = ours?.embedding, let b = peer.embedding {
            let value = Double(zip(a, b).map { $0 * $1 }.reduce(0, +))
            cosines.append(value)
            cosine = String(format: "%.4f", value)
        }
        emit("| \(names[position]) | \(analysis.width)×\(analysis.height) | \(ourBox) | \(peerBox) | \(cosine) |")
    }
    emit("")
    emit("Lowest cosine \(String(format: "%.4f", cosines.min() ?? .nan)), median \(String(format: "%.4f", median(cosines))). The pipelines "
        + "differ on purpose in two places: FaceEngine decodes with libjpeg-turbo/libpng itself (opencv-python bundles its "
        + "own libjpeg-turbo) and, for a face much larger than the 112×112 chip, area-averages it before the affine warp "
        + "where alignCrop samples bilinearly; YuNet runs on the same ≤ 1024 px copy in both.")

    // (b) timing, alternating
    let variants = ["FaceEngine SFace", "opencv-python matched", "opencv-python default", "face_recognition matched",
                    "face_recognition default", "FaceEngine dlib"]
    var samples = [[[Double]]](repeating: [[Double]](repeating: [], count: variants.count), count: images.count)
    for position in images.indices {   // warm-up: page cache, lazy allocations, the peers' first runs
        _ = try sface.analyze(images[position])
        _ = try dlib.analyze(images[position])
        _ = try sfacePeer.time(variant: "matched", repetitions: 1, path: paths[position])
        _ = try sfacePeer.time(variant: "default", repetitions: 1, path: paths[position])
    }
    var sfaceStages = [[(Double, Double, Double)]](repeating: [], count: images.count)
    var peerStages = [[PeerTiming]](repeating: [], count: images.count)   // opencv-python matched
    for _ in 0..<rounds {
        for position in images.indices {
            var clock = ContinuousClock.now
            let analysis = try sface.analyze(images[position])
            samples[position][0].append(milliseconds(since: clock))
            sfaceStages[position].append((analysis.decodeMilliseconds, analysis.detectMilliseconds, analysis.embedMilliseconds))
            let matched = try sfacePeer.time(variant: "matched", repetitions: 1, path: paths[position])
            samples[position][1].append(matched.totalMs)
            peerStages[position].append(matched)
            samples[position][2].append(try sfacePeer.time(variant: "default", repetitions: 1, path: paths[position]).totalMs)
            samples[position][3].append(try dlibPeer.time(variant: "matched", repetitions: 1, path: paths[position]).totalMs)
            samples[position][4].append(try dlibPeer.time(variant: "default", repetitions: 1, path: paths[position]).totalMs)
            clock = ContinuousClock.now
            _ = try dlib.analyze(images[position])
            samples[position][5].append(milliseconds(since: clock))
        }
    }
    emit("")
    emit("### Time per photo, decode → detect → align → embed, largest face (median of \(rounds) alternating rounds, ms)")
    emit("")
    emit("FaceEngine SFace: decode → YuNet on a copy ≤ 1024 px (photos under 320 px enlarged to 320) → 5-point "
        + "alignment → SFace, plus quality figures. *opencv-python matched*: the same steps with cv2 (`imdecode`, "
        + "`FaceDetectorYN` on the same copy, `alignCrop`, `feature`); *default*: OpenCV's sample, YuNet on the full "
        + "image. *face_recognition matched / default*: the dlib pipeline as in the section above. Every pipeline on "
        + "one thread (OpenCV `setNumThreads(1)` on both sides; OpenBLAS on 1 thread for FaceEngine dlib).")
    emit("")
    emit("| photo | size | FaceEngine SFace decode / detect / embed = total | opencv-python matched | ratio | opencv-python default "
        + "| ratio | face_recognition matched | ratio | face_recognition default | ratio | FaceEngine dlib |")
    emit("|---|---|---|---|---|---|---|---|---|---|---|---|")
    var ratios = [[Double]](repeating: [], count: 5)
    var testPhotoRatios = [[Double]](repeating: [], count: 5)
    for position in images.indices {
        let medians = samples[position].map(median)
        let size = (try? sface.analyze(images[position])).map { "\($0.width)×\($0.height)" } ?? "?"
        let decode = median(sfaceStages[position].map(\.0)), detect = median(sfaceStages[position].map(\.1))
        let embed = median(sfaceStages[position].map(\.2))
        var cells = ["\(format(decode)) / \(format(detect)) / \(format(embed)) = **\(format(medians[0]))**"]
        for peer in 1...4 {
            let ratio = medians[0] / medians[peer]
            ratios[peer].append(ratio)
            if position < 7 { testPhotoRatios[peer].append(ratio) }
            cells += [format(medians[peer]), String(format: "%.2f", ratio)]
        }
        ratios[0].append(medians[0] / medians[5])
        if position < 7 { testPhotoRatios[0].append(medians[0] / medians[5]) }
        cells.append(format(medians[5]))
        emit("| \(names[position]) | \(size) | " + cells.joined(separator: " | ") + " |")
    }
    emit("")
    func summary(_ values: [[Double]], _ label: String) -> String {
        "\(label): FaceEngine SFace / opencv-python matched **\(String(format: "%.2f", geometricMean(values[1])))**, "
            + "/ opencv-python default \(String(format: "%.2f", geometricMean(values[2]))), "
            + "/ face_recognition matched \(String(format: "%.2f", geometricMean(values[3]))), "
            + "/ face_recognition default **\(String(format: "%.2f", geometricMean(values[4])))**; "
            + "SFace / FaceEngine dlib \(String(format: "%.2f", geometricMean(values[0])))."
    }
    var stageSums = [[Double]](repeating: [0, 0, 0], count: 2)
    for position in images.indices {
        stageSums[0][0] += median(sfaceStages[position].map(\.0))
        stageSums[0][1] += median(sfaceStages[position].map(\.1))
        stageSums[0][2] += median(sfaceStages[position].map(\.2))
        stageSums[1][0] += median(peerStages[position].map(\.decodeMs))
        stageSums[1][1] += median(peerStages[position].map(\.detectMs))
        stageSums[1][2] += median(peerStages[position].map(\.embedMs))
    }
    emit("Per stage, sum over the \(images.count) photos of the median milliseconds: FaceEngine SFace decode "
        + "\(format(stageSums[0][0])), detect \(format(stageSums[0][1])), align + embed \(format(stageSums[0][2])); "
        + "opencv-python matched decode \(format(stageSums[1][0])), detect \(format(stageSums[1][1])), align + embed "
        + "\(format(stageSums[1][2])). The networks run in OpenCV's dnn module on both sides: Debian's "
        + "\(opencvVersion()) under FaceEngine, with the engine's own 1×1 and depthwise convolution layers "
        + "(`FaceEngineConfiguration.ownConvolutions`), the wheel's \(peerInfo["opencv"] as? String ?? "?") under Python.")
    emit("")
    emit("Geometric means of the per-photo ratios (goal: ≤ 1.0 against the same models in Python, ≤ 0.4 against "
        + "face_recognition).")
    emit("")
    emit("- " + summary(ratios, "All \(images.count) photos"))
    if withCalibration { emit("- " + summary(testPhotoRatios, "The 7 face_recognition test photos (0.6–3.3 MP) only")) }
    emit("")
    emit("Load average before the timing \(loadBefore), after \(Bench.loadAverage()) (2 cores shared with other work: "
        + "the alternation keeps the ratios comparable when the machine's speed drifts; the absolute times are not).")

    try replaceResultsSection(heading: "## FaceEngine SFace: YuNet + SFace pipeline vs opencv-python and face_recognition",
                              command: "scripts/bench.sh sface-engine", lines: report, path: resultsPath)
}

private struct PeerFeature: Decodable {
    var box: [Double]?
    var embedding: [Float]?
}

/// The OpenCV that FaceEngine links: the version of Debian's libopencv-dnn package.
private func opencvVersion() -> String {
    let process = Process()
    let output = Pipe()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/dpkg-query")
    process.arguments = ["-W", "-f", "${Version}", "libopencv-dnn-dev"]
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return "?" }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitForExit()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}
