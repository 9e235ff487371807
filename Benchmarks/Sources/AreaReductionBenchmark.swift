import FaceEngine
import Foundation

/// `facegate-bench area-reduction [--images DIR] [--repeat N]`
///
/// The SFace engine's area reduction against OpenCV 4.6's `cv::resize` with INTER_AREA, which it must equal value for
/// value, on the face_recognition test photos: each photo to its detection copy (longest side 1024, as the engine scans
/// it) and a centred square of a third of its shorter side to 112 px (a large face before its chip). One thread, the two
/// in turn `repeat` times; medians.
func runAreaReductionBenchmark(arguments: [String]) async throws {
    let options = Bench.options(arguments)
    let directory = options["images"] ?? ProcessInfo.processInfo.environment["FACEGATE_TEST_IMAGES"] ?? ".run/testdata"
    let repeats = Int(options["repeat"] ?? "") ?? 51
    var rows: [String] = [], ratios: [Double] = []
    var differing = 0
    for name in ["obama.jpg", "obama2.jpg", "obama3.jpg", "obama_partial_face.jpg", "obama_partial_face2.jpg", "biden.jpg", "32bit.png"] {
        let image = try AreaReduction.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))))
        let longest = max(image.width, image.height), side = min(image.width, image.height) / 3
        let scale = min(1, 1024 / Double(longest))
        let cases: [(String, FaceBox, Int, Int)] = [
            ("detection copy", FaceBox(left: 0, top: 0, right: image.width - 1, bottom: image.height - 1),
             Int((Double(image.width) * scale).rounded()), Int((Double(image.height) * scale).rounded())),
            ("face to its chip", FaceBox(left: (image.width - side) / 2, top: (image.height - side) / 2,
                                         right: (image.width - side) / 2 + side - 1, bottom: (image.height - side) / 2 + side - 1), 112, 112),
        ]
        for (label, region, width, height) in cases where width < region.width || height < region.height {
            guard let result = AreaReduction.compare(image, region: region, width: width, height: height, repeats: repeats) else {
                throw BenchError("\(name): \(label) cannot be reduced")
            }
            differing += result.differences
            ratios.append(result.engineMilliseconds / result.openCVMilliseconds)
            rows.append(String(format: "| %@ | %@ | %d×%d → %d×%d | %.3f | %.3f | %.2f | %d |", name, label, region.width, region.height,
                               width, height, result.engineMilliseconds, result.openCVMilliseconds, ratios.last!, result.differences))
            print(rows.last!)
        }
    }
    let geometricMean = exp(ratios.map(log).reduce(0, +) / Double(ratios.count))
    try Bench.record("Area reduction: the SFace engine's against OpenCV's INTER_AREA (`facegate-bench area-reduction`)", """
    Each photo reduced to its detection copy (longest side 1024, as the SFace engine scans it; photos already smaller \
    are left out) and a centred square of a third of its shorter side to 112×112 (a large face before its chip), from \
    RGB to RGB. One thread; the engine's `areaReduce` and OpenCV 4.6's `cv::resize(…, INTER_AREA)` run in turn \(repeats) \
    times, medians in ms. *Differing values*: bytes of the engine's result that are not OpenCV's (the engine must give \
    the same image).

    | photo | reduction | size | engine ms | OpenCV ms | engine / OpenCV | differing values |
    | --- | --- | --- | --- | --- | --- | --- |
    \(rows.joined(separator: "\n"))

    Geometric mean engine / OpenCV: **\(String(format: "%.2f", geometricMean))×**; differing values in all: \(differing). \
    Load average \(Bench.loadAverage()).
    """)
}
