import DocumentOCR
import FaceEngine
import FaceGateCore
import FaceGateTestSupport
import Foundation
import Testing

/// Real tesseract on cards rendered by real ImageMagick with the OCR-B font.
@Suite final class MRZReaderTests {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("facegate-ocr-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func reader(instances: Int = 1) throws -> MRZReader {
        try MRZReader(tessdataPath: MRZReader.debianTessdata, instances: instances)
    }

    func back(of card: IDCard, degradation: IDCard.Degradation = .none, name: String = UUID().uuidString) throws -> [UInt8] {
        let url = directory.appendingPathComponent("\(name).jpg")
        try card.renderBack(to: url, degradation: degradation)
        return Array(try Data(contentsOf: url))
    }

    /// The document as printed: composing may truncate names, so the expectation is what the MRZ holds.
    func printed(_ card: IDCard) throws -> MRZDocument { try MRZ.parse(lines: try card.mrzLines()) }

    @Test(arguments: [MRZFormat.td1, .td3])
    func readsRandomCardsExactly(format: MRZFormat) async throws {
        let reader = try reader()
        let portrait = try IDCard.testPhoto("obama.jpg")
        for seed in UInt64(1)...3 {
            let card = IDCard.random(format: format, seed: seed * 7919 + (format == .td1 ? 0 : 1), portrait: portrait)
            let reading = try await reader.read(try back(of: card))
            #expect(reading.document == (try printed(card)), "raw: \(reading.rawLines)")
            #expect(reading.lines == (try card.mrzLines()))
            #expect(reading.rawLines.count == format.lineCount)
        }
    }

    @Test(arguments: [MRZFormat.td1, .td3])
    func readsNoisyBlurredRotatedCards(format: MRZFormat) async throws {
        let reader = try reader()
        let portrait = try IDCard.testPhoto("obama.jpg")
        let degradations = [
            IDCard.Degradation(noise: 0.6, jpegQuality: 70),
            IDCard.Degradation(blur: 1.0),
            IDCard.Degradation(rotation: 2),
            IDCard.Degradation(noise: 0.3, blur: 0.6, rotation: -1.5, jpegQuality: 80),
        ]
        for (index, degradation) in degradations.enumerated() {
            let card = IDCard.random(format: format, seed: 100 + UInt64(index) * 31 + (format == .td1 ? 0 : 7), portrait: portrait)
            let reading = try await reader.read(try back(of: card, degradation: degradation))
            #expect(reading.document == (try printed(card)), "\(degradation): raw \(reading.rawLines)")
        }
    }

    @Test func readsTheSpecimenCardAndItsOCRData() async throws {
        let card = IDCard.td1(documentNumber: "D23145890", surname: "ERIKSSON", givenNames: "ANNA MARIA", nationality: "UTO",
                              birthDate: "1974-08-12", sex: "F", expiryDate: "2012-04-15", portrait: try IDCard.testPhoto("obama.jpg"))
        #expect(try card.mrzLines() == ["I<UTOD231458907<<<<<<<<<<<<<<<", "7408122F1204159UTO<<<<<<<<<<<6", "ERIKSSON<<ANNA<MARIA<<<<<<<<<<"])
        let reading = try await reader().read(try back(of: card))
        #expect(reading.document.documentNumber == "D23145890")
        #expect(reading.document.birthDate == "1974-08-12")
        #expect(reading.document.isExpired(on: Date()))
    }

    @Test(arguments: [MRZFormat.td1, .td3])
    func refusesAPrintedWrongCheckDigit(format: MRZFormat) async throws {
        var card = IDCard.random(format: format, seed: 42, portrait: try IDCard.testPhoto("obama.jpg"))
        card.brokenCheckDigit = true
        let image = try back(of: card)
        let reader = try reader()
        do throws(MRZReadError) {
            let reading = try await reader.read(image)
            Issue.record("accepted a card with a wrong check digit: \(reading.lines)")
        } catch {
            // The document number's own digit fails; should a look-alike substitution happen to satisfy it,
            // the composite digit, computed over the true number, still refuses the card.
            #expect(error == .invalid(.checkDigit(.documentNumber)) || error == .invalid(.checkDigit(.composite)))
        }
    }

    @Test func findsNoMRZInAFaceOrACardFrontOrABlur() async throws {
        let reader = try reader()
        let photo = Array(try Data(contentsOf: try IDCard.testPhoto("obama.jpg")))
        await #expect(throws: MRZReadError.notFound) { try await reader.read(photo) }

        let card = IDCard.random(format: .td1, seed: 5, portrait: try IDCard.testPhoto("obama.jpg"))
        let front = directory.appendingPathComponent("front.jpg")
        try card.renderFront(to: front)
        await #expect(throws: MRZReadError.notFound) { try await reader.read(Array(try Data(contentsOf: front))) }

        let smeared = try back(of: card, degradation: .init(blur: 9))
        do throws(MRZReadError) {
            let reading = try await reader.read(smeared)
            Issue.record("read a document from an unreadable blur: \(reading.rawLines)")
        } catch {
            #expect(error == .notFound || { if case .invalid = error { true } else { false } }())
            #expect(error.isRetriable)
        }
    }

    @Test func refusesBrokenAndOversizedImages() async throws {
        let reader = try reader()
        let card = IDCard.random(format: .td1, seed: 6, portrait: try IDCard.testPhoto("obama.jpg"))
        let bytes = try back(of: card)
        await #expect(throws: MRZReadError.imageFormat) { try await reader.read(Array(bytes.prefix(bytes.count / 2))) }
        await #expect(throws: MRZReadError.imageFormat) { try await reader.read(Array(bytes.prefix(40))) }
        await #expect(throws: MRZReadError.imageFormat) { try await reader.read(Array("not an image at all".utf8)) }
        await #expect(throws: MRZReadError.imageFormat) { try await reader.read([]) }
        let small = try MRZReader(tessdataPath: MRZReader.debianTessdata, maxPixels: 100_000)
        await #expect(throws: MRZReadError.imageTooLarge(width: 1011, height: 638)) { try await small.read(bytes) }
        #expect(!MRZReadError.imageFormat.isRetriable)
    }

    @Test(arguments: [MRZFormat.td1, .td3])
    func rendersAFrontWhosePortraitDlibMatchesToThePhoto(format: MRZFormat) throws {
        guard let models = ProcessInfo.processInfo.environment["FACEGATE_MODEL_DIR"], !models.isEmpty else {
            Issue.record("FACEGATE_MODEL_DIR is not set: it must name the folder with the dlib models")
            return
        }
        let engine = try FaceEngine(configuration: FaceEngineConfiguration(modelDirectory: models))
        let photo = try IDCard.testPhoto("obama.jpg")
        let front = directory.appendingPathComponent("front-\(format.rawValue).jpg")
        try IDCard.random(format: format, seed: 77, portrait: photo).renderFront(to: front)
        let card = try engine.analyze(Array(try Data(contentsOf: front)))
        let original = try engine.analyze(Array(try Data(contentsOf: photo)))
        #expect(card.faceCount == 1)
        let distance = euclideanDistance(try #require(card.faces.first?.embedding), try #require(original.faces.first?.embedding))
        #expect(distance < 0.45, "portrait on the card vs the photo: \(distance)")
    }

    @Test func reportsAMissingLanguage() {
        #expect(throws: MRZReadError.self) { try MRZReader(tessdataPath: MRZReader.debianTessdata, languages: "xxx") }
    }

    @Test func readsConcurrentlyWithSeveralHandles() async throws {
        let reader = try reader(instances: 2)
        let portrait = try IDCard.testPhoto("obama.jpg")
        let cards = (0..<4).map { IDCard.random(format: $0 % 2 == 0 ? .td1 : .td3, seed: 900 + UInt64($0), portrait: portrait) }
        let images = try cards.map { try back(of: $0) }
        let documents = try await withThrowingTaskGroup(of: (Int, MRZDocument).self) { group in
            for (index, image) in images.enumerated() {
                group.addTask { (index, try await reader.read(image).document) }
            }
            var result: [Int: MRZDocument] = [:]
            for try await (index, document) in group { result[index] = document }
            return result
        }
        for (index, card) in cards.enumerated() {
            #expect(documents[index] == (try printed(card)))
        }
    }
}
