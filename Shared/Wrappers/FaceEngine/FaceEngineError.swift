internal import CFaceEngine

public enum FaceEngineError: Error, Sendable, Equatable {
    /// Not a JPEG or PNG, or corrupt, or truncated.
    case imageFormat(String)
    /// The header announces more pixels than `FaceEngineConfiguration.maxPixels`; nothing was decoded.
    case imageTooLarge(width: Int, height: Int)
    /// A model file is missing or unreadable.
    case modelMissing(String)
    /// Memory exhaustion, an unexpected failure inside dlib, or an invalid argument (message starts
    /// with "invalid argument").
    case internalError(String)

    /// The engine's native status code (`fe_status`).
    public var code: Int32 {
        switch self {
        case .imageFormat: Int32(FE_ERR_IMAGE_FORMAT.rawValue)
        case .imageTooLarge: Int32(FE_ERR_IMAGE_TOO_LARGE.rawValue)
        case .modelMissing: Int32(FE_ERR_MODEL_MISSING.rawValue)
        case .internalError(let message):
            message.hasPrefix(Self.invalidArgumentPrefix) ? Int32(FE_ERR_INVALID_ARGUMENT.rawValue) : Int32(FE_ERR_INTERNAL.rawValue)
        }
    }

    /// Image and model errors repeat for the same input; only an internal failure (typically memory
    /// exhaustion) may pass on another attempt or another worker.
    public var isRetriable: Bool {
        if case .internalError = self { return code == Int32(FE_ERR_INTERNAL.rawValue) }
        return false
    }

    static let invalidArgumentPrefix = "invalid argument: "

    init(_ error: fe_error) {
        var error = error
        let message = withUnsafeBytes(of: &error.message) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        switch UInt32(bitPattern: error.code) {
        case FE_ERR_IMAGE_FORMAT.rawValue: self = .imageFormat(message)
        case FE_ERR_IMAGE_TOO_LARGE.rawValue: self = .imageTooLarge(width: Int(error.width), height: Int(error.height))
        case FE_ERR_MODEL_MISSING.rawValue: self = .modelMissing(message)
        case FE_ERR_INVALID_ARGUMENT.rawValue: self = .internalError(Self.invalidArgumentPrefix + message)
        default: self = .internalError(message)
        }
    }
}

extension FaceEngineError: CustomStringConvertible {
    /// Safe to log: messages come from the decoders and dlib and never carry image bytes.
    public var description: String {
        switch self {
        case .imageFormat(let message): "image format error (\(code)): \(message)"
        case .imageTooLarge(let width, let height): "image too large (\(code)): \(width)x\(height) pixels"
        case .modelMissing(let message): "face model missing (\(code)): \(message)"
        case .internalError(let message): "face engine internal error (\(code)): \(message)"
        }
    }
}
