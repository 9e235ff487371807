import FaceGateCore
import Foundation
import HTTPServer

/// What a request carries besides its credentials: photos, frames, the device label, path ids.
extension HTTPRequest {
    static let livenessFrameCount = 2...12

    func uuidParameter(_ name: String) throws -> UUID {
        guard let text = pathParameters[name], let id = UUID(uuidString: text) else {
            throw APIError(.notFound, "no such \(name)")
        }
        return id
    }

    /// `X-Device-Id`: 1–128 printable ASCII characters.
    func deviceId() throws -> String {
        guard let value = headers["X-Device-Id"], (1...128).contains(value.utf8.count),
              value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw APIError(.invalidRequest, "X-Device-Id is required: 1–128 printable ASCII characters")
        }
        return value
    }

    var isMultipart: Bool { (headers["Content-Type"] ?? "").lowercased().hasPrefix("multipart/form-data") }

    /// The image of a request: a raw `image/jpeg` / `image/png` body or the multipart field `image`,
    /// checked by its magic bytes (the matcher decodes it under the pixel cap).
    func image() throws -> Data {
        let contentType = (headers["Content-Type"] ?? "").lowercased()
        let bytes: [UInt8]
        if isMultipart {
            guard let part = try multipartParts().first(where: { $0.name == "image" }) else {
                throw APIError(.invalidRequest, "the multipart body has no field named image")
            }
            bytes = part.body
        } else if contentType.hasPrefix("image/jpeg") || contentType.hasPrefix("image/png") {
            bytes = body
        } else {
            throw APIError(.imageFormatError, "send the photo as image/jpeg, image/png or multipart/form-data with a field named image")
        }
        guard Self.isJPEGOrPNG(bytes) else { throw APIError(.imageFormatError, "the image is not a JPEG or PNG file") }
        return Data(bytes)
    }

    static func isJPEGOrPNG(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: [0xFF, 0xD8, 0xFF]) || bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
    }

    /// The multipart fields `challengeId` (text) and `frame` (repeated, in capture order, 2–12 JPEG/PNG
    /// files). Not multipart, no challenge, or a wrong count → `INVALID_REQUEST`; a frame that is not a
    /// JPEG or PNG → `IMAGE_FORMAT_ERROR`.
    func livenessFrames() throws -> (challengeId: String, frames: [Data]) {
        let (challengeId, frames) = try livenessFrames(challengeRequired: true)
        return (challengeId!, frames)
    }

    /// As `livenessFrames()`; without `challengeRequired` a missing `challengeId` is nil.
    /// Without `challengeRequired` (the app's liveness is off) one frame is a whole selfie, as the kiosk SDK
    /// takes it: a single `frame` field, or one image as the body.
    func livenessFrames(challengeRequired: Bool) throws -> (challengeId: String?, frames: [Data]) {
        let contentType = (headers["Content-Type"] ?? "").lowercased()
        if !challengeRequired, contentType.hasPrefix("image/") {
            return (nil, [try image()])
        }
        guard isMultipart else {
            throw APIError(.invalidRequest, "send the frames as multipart/form-data: a challengeId field and \(Self.livenessFrameCount.lowerBound)–\(Self.livenessFrameCount.upperBound) frame fields")
        }
        let parts: [MultipartPart]
        do {
            parts = try multipartParts()
        } catch {
            throw APIError(.invalidRequest, "the multipart body is malformed")
        }
        let challengeId = parts.first { $0.name == "challengeId" }
            .map { String(decoding: $0.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
            .flatMap { $0.isEmpty ? nil : $0 }
        if challengeRequired, challengeId == nil {
            throw APIError(.invalidRequest, "the challengeId field is missing; get one from GET /v1/liveness/challenges")
        }
        if let challengeId, challengeId.utf8.count > 128 {
            throw APIError(.invalidRequest, "the challengeId is too long")
        }
        let frames = parts.filter { $0.name == "frame" }.map(\.body)
        let allowed = challengeRequired ? Self.livenessFrameCount : 1...Self.livenessFrameCount.upperBound
        guard allowed.contains(frames.count) else {
            throw APIError(.invalidRequest, "send \(allowed.lowerBound)–\(allowed.upperBound) frame fields in capture order; got \(frames.count)")
        }
        for (index, frame) in frames.enumerated() where !Self.isJPEGOrPNG(frame) {
            throw APIError(.imageFormatError, "frame \(index) is not a JPEG or PNG file")
        }
        return (challengeId, frames.map { Data($0) })
    }
}

// MARK: - Multipart forms, as the OpenAPI document describes them

/// A file field of a multipart form.
struct FilePart: DocumentedScalar {
    static var scalarSchema: DocumentValue { ["type": "string", "format": "binary"] }
    static var placeholder: FilePart { FilePart() }
}

/// One photo (`HTTPRequest.image()`).
struct ImageUpload: Decodable, DocumentedSchema {
    var image: FilePart
}

/// An enrollment photo, and which of its faces to enroll.
struct EnrollmentUpload: Decodable, DocumentedSchema {
    var image: FilePart
    var faceBox: String?
}

/// A login photo, or a liveness burst (`HTTPRequest.livenessFrames`).
struct FaceLoginUpload: Decodable, DocumentedSchema {
    var image: FilePart?
    var challengeId: String?
    var frame: [FilePart]?
}

/// A photo and the user it claims to be.
struct VerifyUpload: Decodable, DocumentedSchema {
    var image: FilePart
    var userId: UUID?
    var employeeNumber: String?
}

/// A kiosk's frames: a liveness burst, or one photo when the app's kiosk liveness is off.
struct KioskFrames: Decodable, DocumentedSchema {
    var challengeId: String?
    var frame: [FilePart]?
}
