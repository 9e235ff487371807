import DocumentOCR
import FaceGateCore
import Foundation

/// The document reader of the kiosk flow: tesseract reading the MRZ (DocumentOCR), check digits verified.
struct MRZDocumentReader: DocumentReader {
    private let reader: MRZReader

    init(tessdataPath: String?, engines: Int) throws {
        reader = try MRZReader(tessdataPath: tessdataPath, instances: engines)
    }

    func read(_ image: [UInt8]) async throws -> DocumentReading {
        let reading: MRZReading
        do {
            reading = try await reader.read(image)
        } catch {
            switch error {
            case .imageFormat, .imageTooLarge: throw DocumentReadFailure(code: .imageFormatError, message: error.description)
            case .notFound, .invalid: throw DocumentReadFailure(code: .documentUnreadable, message: error.description)
            case .engineUnavailable: throw error
            }
        }
        return DocumentReading(document: reading.document.ocrData, isExpired: reading.document.isExpired())
    }
}
