import FaceGateCore
import Foundation

/// Reads an identity document's back: the MRZ, check digits verified.
public protocol DocumentReader: Sendable {
    /// Throws `DocumentReadFailure` when the image is not a usable document.
    func read(_ image: [UInt8]) async throws -> DocumentReading
}

public struct DocumentReading: Sendable {
    public var document: KioskOCRData
    public var isExpired: Bool

    public init(document: KioskOCRData, isExpired: Bool) {
        self.document = document
        self.isExpired = isExpired
    }
}

/// Why a document could not be read; the step fails with `code` and the session waits for a retake.
public struct DocumentReadFailure: Error, Sendable {
    public var code: ErrorCode
    public var message: String

    public init(code: ErrorCode, message: String) {
        self.code = code
        self.message = message
    }
}
