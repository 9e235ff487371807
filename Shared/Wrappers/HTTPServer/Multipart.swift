/// A header value of the form `token; name=value; name="quoted value"` (Content-Type, Content-Disposition).
struct MediaType {
    /// The leading token, lower-cased (`multipart/form-data`, `form-data`).
    var type: String
    /// Parameter names lower-cased, values unquoted.
    var parameters: [String: String]

    init?(parsing text: String) {
        let bytes = Array(text.utf8)
        var index = 0
        func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
        }
        func token() -> String {
            let start = index
            while index < bytes.count, bytes[index] != 0x3B, bytes[index] != 0x3D { index += 1 }
            var end = index
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            return String(decoding: bytes[start..<end], as: UTF8.self)
        }
        skipSpace()
        let type = token().lowercased()
        guard !type.isEmpty else { return nil }
        self.type = type
        self.parameters = [:]
        while index < bytes.count {
            guard bytes[index] == 0x3B else { return nil }  // ';'
            index += 1
            skipSpace()
            if index == bytes.count { break }
            let name = token().lowercased()
            guard index < bytes.count, bytes[index] == 0x3D, !name.isEmpty else { return nil }  // '='
            index += 1
            skipSpace()
            var value: [UInt8] = []
            if index < bytes.count, bytes[index] == 0x22 {  // quoted-string
                index += 1
                var closed = false
                while index < bytes.count {
                    let c = bytes[index]
                    index += 1
                    if c == 0x5C, index < bytes.count {  // backslash escape
                        value.append(bytes[index])
                        index += 1
                    } else if c == 0x22 {
                        closed = true
                        break
                    } else {
                        value.append(c)
                    }
                }
                guard closed else { return nil }
                skipSpace()
            } else {
                while index < bytes.count, bytes[index] != 0x3B { value.append(bytes[index]); index += 1 }
                while let last = value.last, last == 0x20 || last == 0x09 { value.removeLast() }
            }
            if parameters[name] == nil {
                parameters[name] = String(decoding: value, as: UTF8.self)
            }
        }
    }
}

/// `multipart/form-data` (RFC 7578) over a body already in memory. Every scan starts where the
/// previous one stopped, so the work is linear in the body size (times the boundary length, at most 70).
enum MultipartParser {
    static let maxParts = 1_000
    static let maxPartHeaderBytes = 16 << 10

    static func parse(body: [UInt8], boundary: String) throws(HTTPError) -> [MultipartPart] {
        let boundaryBytes = Array(boundary.utf8)
        guard (1...70).contains(boundaryBytes.count) else {
            throw .badRequest("multipart boundary must be 1 to 70 characters")
        }
        let dashBoundary: [UInt8] = [0x2D, 0x2D] + boundaryBytes
        let delimiter: [UInt8] = [0x0D, 0x0A] + dashBoundary
        let result: Result<[MultipartPart], HTTPError> = body.withUnsafeBufferPointer { buffer in
            do throws(HTTPError) {
                return .success(try parse(buffer, dashBoundary: dashBoundary, delimiter: delimiter))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private static func parse(
        _ body: UnsafeBufferPointer<UInt8>, dashBoundary: [UInt8], delimiter: [UInt8]
    ) throws(HTTPError) -> [MultipartPart] {
        // The first boundary may open the body or follow a preamble.
        var position: Int
        if hasPrefix(body, at: 0, dashBoundary) {
            position = 0
        } else if let found = find(delimiter, in: body, from: 0) {
            position = found + 2
        } else {
            throw .badRequest("multipart body does not contain its boundary")
        }
        var parts: [MultipartPart] = []
        while true {
            var cursor = position + dashBoundary.count
            if hasPrefix(body, at: cursor, [0x2D, 0x2D]) {
                return parts  // closing delimiter; anything after it is epilogue
            }
            while cursor < body.count, body[cursor] == 0x20 || body[cursor] == 0x09 { cursor += 1 }
            guard hasPrefix(body, at: cursor, crlf) else {
                throw .badRequest(cursor >= body.count
                    ? "multipart body ends without its final boundary"
                    : "multipart boundary line is not followed by CRLF")
            }
            cursor += 2
            guard parts.count < maxParts else {
                throw .badRequest("multipart body has more than \(maxParts) parts")
            }

            // Part headers end at an empty line.
            let headerEnd: Int
            let contentStart: Int
            if hasPrefix(body, at: cursor, crlf) {
                headerEnd = cursor
                contentStart = cursor + 2
            } else {
                let window = UnsafeBufferPointer(rebasing: body[cursor..<min(body.count, cursor + maxPartHeaderBytes)])
                guard let found = find(crlfcrlf, in: window, from: 0) else {
                    throw .badRequest(window.count == maxPartHeaderBytes
                        ? "multipart part headers are too large"
                        : "multipart body ends without its final boundary")
                }
                headerEnd = cursor + found
                contentStart = headerEnd + 4
            }
            var part = try partHeaders(UnsafeBufferPointer(rebasing: body[cursor..<headerEnd]))

            guard let contentEnd = find(delimiter, in: body, from: contentStart) else {
                throw .badRequest("multipart body ends without its final boundary")
            }
            part.body = Array(body[contentStart..<contentEnd])
            parts.append(part)
            position = contentEnd + 2
        }
    }

    private static func partHeaders(_ block: UnsafeBufferPointer<UInt8>) throws(HTTPError) -> MultipartPart {
        var name: String?
        var filename: String?
        var contentType: String?
        var lineStart = 0
        while lineStart < block.count {
            let lineEnd = find(crlf, in: block, from: lineStart) ?? block.count
            let line = block[lineStart..<lineEnd]
            lineStart = lineEnd + 2
            guard let colon = line.firstIndex(of: 0x3A) else {
                throw .badRequest("multipart part header line without ':'")
            }
            let field = String(decoding: line[line.startIndex..<colon], as: UTF8.self)
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self)
            if asciiCaseInsensitiveEquals(field, "Content-Disposition") {
                guard let disposition = MediaType(parsing: value), disposition.type == "form-data" else {
                    throw .badRequest("multipart part has a Content-Disposition other than form-data")
                }
                name = disposition.parameters["name"]
                filename = disposition.parameters["filename"]
            } else if asciiCaseInsensitiveEquals(field, "Content-Type") {
                contentType = value.trimmingSpaces()
            }
        }
        guard let name else {
            throw .badRequest("multipart part without a Content-Disposition name")
        }
        return MultipartPart(name: name, filename: filename, contentType: contentType, body: [])
    }

    private static let crlf: [UInt8] = [0x0D, 0x0A]
    private static let crlfcrlf: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A]

    private static func hasPrefix(_ buffer: UnsafeBufferPointer<UInt8>, at offset: Int, _ prefix: [UInt8]) -> Bool {
        guard offset >= 0, offset + prefix.count <= buffer.count else { return false }
        for i in 0..<prefix.count where buffer[offset + i] != prefix[i] {
            return false
        }
        return true
    }

    /// Offset of the first `needle` at or after `start`.
    static func find(_ needle: [UInt8], in haystack: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard let first = needle.first, haystack.count >= needle.count else { return nil }
        var i = max(start, 0)
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == first, hasPrefix(haystack, at: i, needle) {
                return i
            }
            i += 1
        }
        return nil
    }
}

extension String {
    func trimmingSpaces() -> String {
        var view = Substring(self)
        while let c = view.first, c == " " || c == "\t" { view.removeFirst() }
        while let c = view.last, c == " " || c == "\t" { view.removeLast() }
        return String(view)
    }
}
