internal import CTesseract
import FaceGateCore

/// What the reader found: the parsed document, the MRZ lines after correction, the lines as tesseract read
/// them, and how many characters the correction changed.
public struct MRZReading: Sendable, Equatable {
    public var document: MRZDocument
    public var lines: [String]
    public var rawLines: [String]
    public var corrections: Int
    /// The lowest tesseract confidence (0–100) among the letters of the names as read; names carry no check
    /// digit, so this is the only sign of a doubtful name character. 0 when a name letter was read on its own
    /// (a cell the line recognition skipped) and has no line confidence.
    public var nameConfidence: Float
}

/// Why an image gave no document. `description` is safe to log (it never holds MRZ content).
public enum MRZReadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not a decodable JPEG or PNG (including one cut short).
    case imageFormat
    /// More pixels than the reader accepts; refused from the header, before decoding.
    case imageTooLarge(width: Int, height: Int)
    /// No MRZ-shaped text in the image.
    case notFound
    /// An MRZ was found but a field stays wrong after correction (check digit, date, characters).
    case invalid(MRZError)
    /// Tesseract could not be initialised (missing tessdata or language); `status` is its Init return code.
    case engineUnavailable(status: Int)

    /// A better picture may succeed; the other cases will fail the same way again.
    public var isRetriable: Bool {
        switch self {
        case .notFound, .invalid: true
        case .imageFormat, .imageTooLarge, .engineUnavailable: false
        }
    }

    public var description: String {
        switch self {
        case .imageFormat: "the image is not a readable JPEG or PNG"
        case .imageTooLarge(let width, let height): "the image is too large (\(width)×\(height) pixels)"
        case .notFound: "no machine-readable zone found in the image"
        case .invalid(let error): "the machine-readable zone is not valid: \(error.description)"
        case .engineUnavailable(let status): "the OCR engine could not be initialised (tesseract status \(status))"
        }
    }
}

/// Reads the MRZ of an ID card (TD1) or passport data page (TD3) from a JPEG or PNG photo, with tesseract.
/// `instances` handles recognise in parallel, each on its own thread.
public final class MRZReader: Sendable {
    /// Debian's tessdata directory for tesseract 5.
    public static let debianTessdata = "/usr/share/tesseract-ocr/5/tessdata"

    public let maxPixels: Int
    private let pool: EnginePool

    public init(tessdataPath: String? = nil, languages: String = "eng", instances: Int = 1,
                maxPixels: Int = 16_000_000) throws(MRZReadError) {
        self.maxPixels = maxPixels
        // Leptonica reports decoding failures on stderr; they become MRZReadError here instead.
        _ = setMsgSeverityQuietly()
        pool = try EnginePool(count: instances) { () throws(MRZReadError) in
            try TesseractEngine(tessdataPath: tessdataPath, languages: languages)
        }
    }

    public func read(_ image: [UInt8]) async throws(MRZReadError) -> MRZReading {
        guard let header = LeptonicaImage.header(of: image), header.isJPEG || header.isPNG else { throw .imageFormat }
        guard header.width * header.height <= maxPixels else {
            throw .imageTooLarge(width: header.width, height: header.height)
        }
        let maxPixels = maxPixels
        let result = await pool.run { engine in MRZReader.recognize(image, header: header, maxPixels: maxPixels, engine: engine) }
        return try result.get()
    }

    // MARK: Recognition (runs on an engine's thread)

    private static func recognize(_ bytes: [UInt8], header: LeptonicaImage.Header, maxPixels: Int, engine: TesseractEngine)
        -> Result<MRZReading, MRZReadError>
    {
        guard let decoded = LeptonicaImage.decodeGrey(bytes, header: header) else { return .failure(.imageFormat) }
        let grey = decoded.deskewed() ?? decoded
        var failure = MRZReadError.notFound
        var best: MRZReading?
        // Cheapest first: the photo as it is, then cleaned-up copies for noise, blur and small print.
        let attempts: [(() -> LeptonicaImage?, TesseractEngine.Layout)] = [
            ({ grey }, .block),
            ({ grey.denoised() }, .block),
            // Small print is read twice the size, as long as the copy stays within the pixel cap too.
            ({ grey.width < 1600 && grey.width * grey.height * 4 <= maxPixels ? grey.scaled(by: 2)?.binarized() : grey.binarized() }, .block),
            ({ grey }, .auto),
        ]
        // The MRZ is printed along the bottom of an ID card's back and of a passport's data page: reading only
        // the lower half halves the work. The last attempt reads the whole picture, for an MRZ placed higher.
        for (index, (makeImage, layout)) in attempts.enumerated() {
            guard let image = makeImage() else { continue }
            let lowerHalf = (left: 0, top: image.height / 2, width: image.width, height: image.height - image.height / 2)
            let region = index < attempts.count - 1 ? lowerHalf : nil
            let lines = engine.recognize(image, region: region, layout: layout)
            switch interpret(lines, image: image, engine: engine) {
            case .success(let (reading, namesCorrected)):
                // Names have no check digit: when correction had to touch them (stray glyphs in the filler,
                // digits among letters), the name may still be wrong, so the other copies are read too and
                // the reading needing the fewest corrections wins.
                if !namesCorrected { return .success(reading) }
                if best == nil || reading.corrections < best!.corrections { best = reading }
            case .failure(.notFound): continue
            case .failure(let error):
                // Keep the most telling failure: an MRZ that fails its check digits beats none at all.
                failure = error
            }
        }
        if let best { return .success(best) }
        return .failure(failure)
    }

    /// Finds the MRZ among recognised lines (the lowest 3 lines about 30 cells long, or 2 about 44, with filler),
    /// places each line on the fixed grid and parses it with correction. Returns the reading and whether
    /// correction changed the names, which no check digit confirms.
    static func interpret(_ lines: [RecognizedLine], image: LeptonicaImage, engine: TesseractEngine)
        -> Result<(MRZReading, Bool), MRZReadError>
    {
        // Tesseract's glyph count is unreliable in runs of `<`, so the format comes from the line's shape:
        // OCR-B's pitch is about its cap height, so a line is about width / cap height cells long.
        let candidates: [(line: RecognizedLine, format: MRZFormat)] = lines.compactMap { line in
            guard line.glyphs.count >= 10, line.text.contains("<") else { return nil }
            let cells = Double(line.right - line.left) / Double(max(1, line.capHeight))
            guard (22...56).contains(cells) else { return nil }
            return (line, cells < 36.5 ? .td1 : .td3)
        }
        guard !candidates.isEmpty else { return .failure(.notFound) }
        var failure = MRZReadError.notFound
        for format in [MRZFormat.td1, .td3] {
            let fitting = candidates.filter { $0.format == format }.map(\.line)
            guard fitting.count >= format.lineCount else { continue }
            // The MRZ is the last block of such lines on the page.
            let group = Array(fitting.suffix(format.lineCount))
            let raw = group.map(\.text)
            let grid = MRZLineGrid.align(group, cells: format.lineLength) { glyph in
                image.looksLikeChevron(left: glyph.left, top: glyph.top, right: glyph.right, bottom: glyph.bottom)
            }
            var rows = grid.rows
            for pass in 0..<2 {
                let aligned = rows.map { String($0.map { $0 ?? "<" }) }
                do throws(MRZError) {
                    let corrected = try MRZ.correct(lines: aligned)
                    // The names fill TD1's third line, and TD3's first line after type and issuing state.
                    let namesCorrected = format == .td1 ? corrected.lines[2] != aligned[2]
                        : corrected.lines[0].dropFirst(5) != aligned[0].dropFirst(5)
                    let names = format == .td1 ? (row: 2, cells: 0..<30) : (row: 0, cells: 5..<44)
                    let letterConfidences = names.cells.filter { corrected.lines[names.row].dropFirst($0).first != "<" }
                        .map { rows[names.row][$0] == nil ? 0 : grid.confidences[names.row][$0] ?? 0 }
                    return .success((MRZReading(document: corrected.document, lines: corrected.lines, rawLines: raw,
                                                corrections: corrected.corrections,
                                                nameConfidence: letterConfidences.min() ?? 0), namesCorrected))
                } catch {
                    failure = .invalid(error)
                }
                // Cells the line recognition skipped are mostly filler, but a lost digit breaks a check:
                // read each skipped cell on its own, once.
                guard pass == 0 else { break }
                var filled = false
                for (row, line) in group.enumerated() {
                    let height = line.bottom - line.top
                    for cell in 0..<format.lineLength where rows[row][cell] == nil {
                        let center = grid.origins[row] + Double(cell) * grid.pitch
                        let left = Int(center - grid.pitch / 2), top = line.top - height / 5
                        let width = Int(grid.pitch.rounded(.up)), boxHeight = height + 2 * (height / 5)
                        guard let character = engine.recognizeCharacter(image, left: left, top: top, width: width,
                                                                         height: boxHeight) else { continue }
                        rows[row][cell] = character
                        filled = true
                    }
                }
                if !filled { break }
            }
        }
        return .failure(failure)
    }
}

private func setMsgSeverityQuietly() -> Int32 {
    setMsgSeverity(Int32(L_SEVERITY_NONE))
}
