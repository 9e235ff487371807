import FaceGateCore
import Foundation

/// An ID card (TD1) or passport data page (TD3) for tests, rendered with ImageMagick's `convert` and the
/// OCR-B font: a front with the holder's portrait and printed fields, a back with the MRZ. A TD3 data page
/// carries portrait and MRZ together, so its front and back are the same page.
///
///     let card = IDCard.td1(documentNumber: "D23145890", surname: "ERIKSSON", givenNames: "ANNA MARIA",
///                           nationality: "UTO", birthDate: "1974-08-12", sex: "F", expiryDate: "2032-04-15",
///                           portrait: try IDCard.testPhoto("obama.jpg"))
///     try card.renderFront(to: front)
///     try card.renderBack(to: back, degradation: .init(noise: 0.5, blur: 0.8, rotation: 2))
public struct IDCard: Sendable, Equatable {
    public var document: MRZDocument
    public var portrait: URL
    /// Prints a wrong check digit for the document number (the reader must refuse the card).
    public var brokenCheckDigit: Bool

    public init(document: MRZDocument, portrait: URL, brokenCheckDigit: Bool = false) {
        self.document = document
        self.portrait = portrait
        self.brokenCheckDigit = brokenCheckDigit
    }

    /// An ID card. Dates are `YYYY-MM-DD`; `issuingState` defaults to the nationality.
    public static func td1(documentNumber: String, surname: String, givenNames: String, nationality: String,
                           birthDate: String, sex: String, expiryDate: String, issuingState: String? = nil,
                           documentType: String = "I", optionalData: String = "", portrait: URL) -> IDCard {
        IDCard(document: MRZDocument(
            format: .td1, documentType: documentType, issuingState: issuingState ?? nationality,
            documentNumber: documentNumber, surname: surname, givenNames: givenNames, nationality: nationality,
            birthDate: birthDate, sex: sex, expiryDate: expiryDate, optionalData: optionalData), portrait: portrait)
    }

    /// A passport data page.
    public static func td3(documentNumber: String, surname: String, givenNames: String, nationality: String,
                           birthDate: String, sex: String, expiryDate: String, issuingState: String? = nil,
                           documentType: String = "P", personalNumber: String = "", portrait: URL) -> IDCard {
        IDCard(document: MRZDocument(
            format: .td3, documentType: documentType, issuingState: issuingState ?? nationality,
            documentNumber: documentNumber, surname: surname, givenNames: givenNames, nationality: nationality,
            birthDate: birthDate, sex: sex, expiryDate: expiryDate, optionalData: personalNumber), portrait: portrait)
    }

    /// A card with random but valid fields, reproducible from `seed`.
    public static func random(format: MRZFormat, seed: UInt64, portrait: URL) -> IDCard {
        var generator = SeededRandom(seed: seed)
        func pick<T>(_ values: [T]) -> T { values[Int(generator.next() % UInt64(values.count))] }
        func number(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(generator.next() % UInt64(range.count)) }
        let alphabet = Array("ABCDEFGHJKLMNPRSTUVWXYZ"), digits = Array("0123456789")
        let documentNumber = String((0..<2).map { _ in pick(alphabet) } + (0..<7).map { _ in pick(digits) })
        let givenCount = number(1...2)
        let given = (0..<givenCount).map { _ in pick(givenNames) }.joined(separator: " ")
        let birth = String(format: "%04d-%02d-%02d", number(1940...2006), number(1...12), number(1...28))
        let expiry = String(format: "%04d-%02d-%02d", number(2027...2036), number(1...12), number(1...28))
        let nationality = pick(countries)
        let sex = pick(["M", "F"])
        switch format {
        case .td1:
            return .td1(documentNumber: documentNumber, surname: pick(surnames), givenNames: given, nationality: nationality,
                        birthDate: birth, sex: sex, expiryDate: expiry, portrait: portrait)
        case .td3:
            let personal = number(0...1) == 0 ? "" : String((0..<number(6...12)).map { _ in pick(digits) })
            return .td3(documentNumber: documentNumber, surname: pick(surnames), givenNames: given, nationality: nationality,
                        birthDate: birth, sex: sex, expiryDate: expiry, personalNumber: personal, portrait: portrait)
        }
    }

    /// A photo from `$FACEGATE_TEST_IMAGES`.
    public static func testPhoto(_ name: String) throws -> URL {
        guard let directory = ProcessInfo.processInfo.environment["FACEGATE_TEST_IMAGES"], !directory.isEmpty else {
            throw IDCardRenderError("FACEGATE_TEST_IMAGES is not set: it must name the folder with obama.jpg and the other test photos")
        }
        return URL(fileURLWithPath: directory).appendingPathComponent(name)
    }

    /// The MRZ lines printed on the card (with the broken check digit when asked for).
    public func mrzLines() throws -> [String] {
        var lines = try MRZ.compose(document)
        if brokenCheckDigit {
            let (line, column) = document.format == .td1 ? (0, 14) : (1, 9)
            var characters = Array(lines[line])
            let digit = characters[column].wholeNumberValue ?? 0
            characters[column] = Character(String((digit + 1) % 10))
            lines[line] = String(characters)
        }
        return lines
    }

    /// How a photo of the card is spoiled: gaussian noise (ImageMagick attenuation, 0 = none, 1 = strong),
    /// blur sigma in pixels, rotation in degrees, and the JPEG quality when writing a `.jpg`.
    public struct Degradation: Sendable, Equatable {
        public var noise: Double
        public var blur: Double
        public var rotation: Double
        public var jpegQuality: Int

        public init(noise: Double = 0, blur: Double = 0, rotation: Double = 0, jpegQuality: Int = 92) {
            self.noise = noise
            self.blur = blur
            self.rotation = rotation
            self.jpegQuality = jpegQuality
        }

        public static let none = Degradation()
    }

    // MARK: Rendering

    static let ocrB = "/usr/share/fonts/opentype/ocr-b/OCRB.otf"
    static let textFont = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    static let paper = "#e9eff4"

    /// The card's front as an image (format from the file extension: `.jpg` or `.png`).
    public func renderFront(to url: URL, degradation: Degradation = .none) throws {
        if document.format == .td3 { return try renderDataPage(to: url, degradation: degradation) }
        var arguments = ["-size", "1011x638", "gradient:#f4f7fa-#d6e2ea"]
        arguments += portraitArguments(x: 40, y: 150, width: 300, height: 375)
        arguments += text("\(document.issuingState)  IDENTITY CARD", x: 40, y: 80, size: 40)
        let fields: [(String, String)] = [
            ("Surname", document.surname), ("Given names", document.givenNames),
            ("Sex", document.sex), ("Nationality", document.nationality),
            ("Date of birth", document.birthDate), ("Document no.", document.documentNumber),
            ("Date of expiry", document.expiryDate),
        ]
        for (index, field) in fields.enumerated() {
            let y = 170 + index * 62
            arguments += text(field.0, x: 380, y: y, size: 18, color: "#506070")
            arguments += text(field.1, x: 380, y: y + 30, size: 28)
        }
        try render(arguments, degradation: degradation, to: url)
    }

    /// The card's back: a few printed lines above the MRZ (TD1), or the data page (TD3).
    public func renderBack(to url: URL, degradation: Degradation = .none) throws {
        if document.format == .td3 { return try renderDataPage(to: url, degradation: degradation) }
        let lines = try mrzLines()
        var arguments = ["-size", "1011x638", "xc:\(Self.paper)"]
        arguments += text("Issued by the authority of \(document.issuingState)", x: 60, y: 70, size: 24)
        arguments += text("Date of issue \(issueDate)   Height 172 cm", x: 60, y: 115, size: 24)
        arguments += ["-stroke", "#9aa8b4", "-strokewidth", "2", "-draw", "line 40,420 971,420", "-stroke", "none"]
        for (index, line) in lines.enumerated() {
            arguments += mrz(line, x: 60, y: 490 + index * 54, size: 40)
        }
        try render(arguments, degradation: degradation, to: url)
    }

    /// A TD3 passport data page: portrait, fields, and the two MRZ lines at the bottom.
    private func renderDataPage(to url: URL, degradation: Degradation) throws {
        let lines = try mrzLines()
        var arguments = ["-size", "1476x1039", "gradient:#f6f3ea-#e2dccb"]
        arguments += text("PASSPORT   \(document.issuingState)", x: 60, y: 80, size: 40)
        arguments += portraitArguments(x: 60, y: 130, width: 320, height: 400)
        let fields: [(String, String)] = [
            ("Type", document.documentType), ("Passport No.", document.documentNumber),
            ("Surname", document.surname), ("Given names", document.givenNames),
            ("Nationality", document.nationality), ("Date of birth", document.birthDate),
            ("Sex", document.sex), ("Date of expiry", document.expiryDate),
        ]
        for (index, field) in fields.enumerated() {
            let y = 150 + index * 70
            arguments += text(field.0, x: 430, y: y, size: 20, color: "#6a6050")
            arguments += text(field.1, x: 430, y: y + 34, size: 30)
        }
        for (index, line) in lines.enumerated() {
            arguments += mrz(line, x: 60, y: 900 + index * 64, size: 42)
        }
        try render(arguments, degradation: degradation, to: url)
    }

    private var issueDate: String {
        guard let year = Int(document.expiryDate.prefix(4)) else { return document.expiryDate }
        return "\(year - 10)" + document.expiryDate.dropFirst(4)
    }

    private func portraitArguments(x: Int, y: Int, width: Int, height: Int) -> [String] {
        ["(", portrait.path, "-resize", "\(width)x\(height)^", "-gravity", "center", "-extent", "\(width)x\(height)",
         ")", "-gravity", "northwest", "-geometry", "+\(x)+\(y)", "-composite", "+gravity"]
    }

    private func text(_ value: String, x: Int, y: Int, size: Int, color: String = "#1a2530") -> [String] {
        let font = FileManager.default.fileExists(atPath: Self.textFont) ? ["-font", Self.textFont] : []
        return font + ["-fill", color, "-pointsize", "\(size)", "-annotate", "+\(x)+\(y)", Self.escaped(value)]
    }

    private func mrz(_ line: String, x: Int, y: Int, size: Int) -> [String] {
        ["-font", Self.ocrB, "-fill", "#101010", "-pointsize", "\(size)", "-annotate", "+\(x)+\(y)", line]
    }

    /// `-annotate` expands `%` escapes and reads a file for a leading `@`.
    private static func escaped(_ value: String) -> String {
        let text = value.replacingOccurrences(of: "%", with: "%%")
        return text.hasPrefix("@") ? " " + text : text
    }

    private func render(_ drawing: [String], degradation: Degradation, to url: URL) throws {
        var arguments = drawing
        if degradation.rotation != 0 {
            arguments += ["-background", Self.paper, "-rotate", String(degradation.rotation)]
        }
        if degradation.blur > 0 { arguments += ["-blur", "0x\(degradation.blur)"] }
        // A fixed seed keeps the noise, and so a test's outcome, the same from run to run.
        if degradation.noise > 0 { arguments += ["-seed", "1", "-attenuate", String(degradation.noise), "+noise", "Gaussian"] }
        arguments += ["-quality", String(degradation.jpegQuality), url.path]
        guard FileManager.default.fileExists(atPath: Self.ocrB) else {
            throw IDCardRenderError("the OCR-B font is missing at \(Self.ocrB) (scripts/stack.sh install installs fonts-ocr-b)")
        }
        try Self.runConvert(arguments)
    }

    /// ImageMagick's `convert` with these arguments (tests compose their images with it).
    public static func runConvert(_ arguments: [String]) throws {
        guard let convert = findOnPath("convert") else {
            throw IDCardRenderError("ImageMagick's convert is not on PATH (scripts/stack.sh install installs imagemagick)")
        }
        let result = try ChildProcess.run(convert, arguments)
        guard result.exitCode == 0 else {
            throw IDCardRenderError("convert exited with \(result.exitCode): \(result.errorText)")
        }
    }

    static func findOnPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

public struct IDCardRenderError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

private let surnames = [
    "ERIKSSON", "MUSTERMANN", "GARCIA", "OKAFOR", "NGUYEN", "KOWALSKI", "ROSSI", "DUBOIS", "HANSEN", "SILVA",
    "TANAKA", "MUELLER", "OBRIEN", "KARLSSON", "PETROV", "JOHNSON", "VAN DER BERG", "SCHMIDT", "LINDQVIST", "MORALES",
]
private let givenNames = [
    "ANNA", "MARIA", "ERIKA", "JOHN", "CHIDI", "MINH", "PIOTR", "GIULIA", "CLAIRE", "LARS", "JOAO", "YUKI",
    "KLAUS", "SEAN", "INGRID", "OLGA", "JAMES", "PIETER", "HANNA", "LUIS",
]
private let countries = ["UTO", "FRA", "DEU", "ESP", "ITA", "NLD", "SWE", "CAN", "USA", "GBR", "NOR", "POL", "PRT", "JPN"]
