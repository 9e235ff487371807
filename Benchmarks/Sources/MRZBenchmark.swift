import DocumentOCR
import FaceGateCore
import FaceGateTestSupport
import Foundation

/// `facegate-bench mrz [--count N]`: N cards (TD1 and TD3 alternating, random fields) rendered with ImageMagick
/// at a few degradation levels, each read back by MRZReader on one tesseract handle. Per level: documents read
/// exactly, fields read exactly, documents refused, documents accepted with a wrong field, and read time.
func runMRZBenchmark(arguments: [String]) async throws {
    var count = 60
    if let index = arguments.firstIndex(of: "--count"), index + 1 < arguments.count, let value = Int(arguments[index + 1]) {
        count = value
    }
    _ = try Bench.environment("FACEGATE_TEST_IMAGES")
    let portrait = try IDCard.testPhoto("obama.jpg")
    let levels: [(name: String, degradation: IDCard.Degradation)] = [
        ("clean (JPEG q92)", .none),
        ("mild (noise 0.3, blur 0.6, 1°, q85)", .init(noise: 0.3, blur: 0.6, rotation: 1, jpegQuality: 85)),
        ("moderate (noise 0.5, blur 1.0, 2°, q75)", .init(noise: 0.5, blur: 1.0, rotation: 2, jpegQuality: 75)),
    ]
    let reader = try MRZReader(tessdataPath: MRZReader.debianTessdata, instances: 1)
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("facegate-bench-mrz-\(getpid())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }

    var rows: [String] = []
    var confidenceRows: [String] = []
    for level in levels {
        var exact = 0, fieldsRight = 0, refused = 0, wrong = 0
        // Accepted readings: their lowest name-letter confidence, whether the document and the names were right.
        var accepted: [(confidence: Float, exact: Bool, namesRight: Bool)] = []
        var times: [Double] = []
        for index in 0..<count {
            let card = IDCard.random(format: index % 2 == 0 ? .td1 : .td3, seed: UInt64(10_000 + index), portrait: portrait)
            let expected = try MRZ.parse(lines: try card.mrzLines())
            let url = directory.appendingPathComponent("\(index).jpg")
            try card.renderBack(to: url, degradation: level.degradation)
            let image = Array(try Data(contentsOf: url))
            let start = ContinuousClock.now
            let outcome: Result<MRZReading, MRZReadError>
            do throws(MRZReadError) { outcome = .success(try await reader.read(image)) } catch { outcome = .failure(error) }
            let elapsed = ContinuousClock.now - start
            times.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
            switch outcome {
            case .success(let reading):
                let matches = fieldMatches(reading.document, expected)
                fieldsRight += matches
                let namesRight = reading.document.surname == expected.surname && reading.document.givenNames == expected.givenNames
                accepted.append((reading.nameConfidence, matches == fieldCount, namesRight))
                if matches == fieldCount {
                    exact += 1
                } else {
                    wrong += 1
                    // Synthetic fields: printing them shows which confusions slip through.
                    print("  accepted wrong: printed \(try card.mrzLines()) read \(reading.lines) "
                          + "name confidence \(String(format: "%.1f", reading.nameConfidence))")
                }
            case .failure:
                refused += 1
            }
        }
        times.sort()
        func percent(_ value: Int, of total: Int) -> String { String(format: "%.1f %%", 100 * Double(value) / Double(total)) }
        let row = "| \(level.name) | \(count) | \(percent(exact, of: count)) | \(percent(fieldsRight, of: count * fieldCount)) "
            + "| \(percent(refused, of: count)) | \(percent(wrong, of: count)) "
            + "| \(String(format: "%.0f", Bench.percentile(times, 50))) | \(String(format: "%.0f", Bench.percentile(times, 95))) |"
        print(row)
        rows.append(row)
        // What refusing readings whose weakest name letter falls below a confidence would do, for this level.
        for threshold: Float in [50, 60, 70, 80] {
            let below = accepted.filter { $0.confidence < threshold }
            let line = "| \(level.name) | \(String(format: "%.0f", threshold)) | \(below.filter { !$0.namesRight }.count) of "
                + "\(accepted.filter { !$0.namesRight }.count) | \(below.filter(\.exact).count) of \(accepted.filter(\.exact).count) |"
            print(line)
            confidenceRows.append(line)
        }
    }
    let body = """
    MRZReader (tesseract 5.3 `eng`, one handle) on ID-card backs (TD1, 1011×638) and passport data pages
    (TD3, 1476×1039) rendered by ImageMagick with OCR-B, half of each kind, random fields; load average at the
    end: \(Bench.loadAverage()). "Refused" = notFound/invalid (the kiosk asks for a retake); "wrong" = accepted
    with at least one field different from the printed one (names carry no check digit).

    | level | documents | fully correct | fields correct | refused | accepted wrong | median ms | p95 ms |
    |---|---|---|---|---|---|---|---|
    \(rows.joined(separator: "\n"))

    Tesseract's lowest confidence among the name letters of each accepted reading, if readings below a threshold
    were refused (measured on the same run, not applied by the reader):

    | level | threshold | wrong names refused | correct documents refused |
    |---|---|---|---|
    \(confidenceRows.joined(separator: "\n"))
    """
    try Bench.record("MRZ reader: documents and fields read exactly", body)
}

private let fieldCount = 10

private func fieldMatches(_ a: MRZDocument, _ b: MRZDocument) -> Int {
    [a.documentType == b.documentType, a.issuingState == b.issuingState, a.documentNumber == b.documentNumber,
     a.surname == b.surname, a.givenNames == b.givenNames, a.nationality == b.nationality, a.birthDate == b.birthDate,
     a.sex == b.sex, a.expiryDate == b.expiryDate, a.optionalData == b.optionalData].filter { $0 }.count
}
