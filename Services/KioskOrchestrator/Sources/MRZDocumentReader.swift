import FaceGateCore
import Foundation

// Replaced by the tesseract reader when DocumentOCR lands.
struct MRZDocumentReader: DocumentReader {
    init(tessdataPath: String?, engines: Int) throws {}
    func read(_ image: [UInt8]) async throws -> DocumentReading {
        throw DocumentReadFailure(code: .documentUnreadable, message: "no OCR engine")
    }
}
