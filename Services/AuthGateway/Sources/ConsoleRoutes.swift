import Crypto
import Foundation
import HTTPServer
import ServiceKit

/// The web console for auditors and operators: static files served at `/console/`. They call the public
/// API with the key the person signs in with; the gateway gives them no privilege of their own.
///
/// The files are read once at start-up from `FACEGATE_CONSOLE_DIR` (default: `Services/AuthGateway/Console`
/// of the source tree this binary was built from, which is what `make run` and the tests use; the image
/// sets the variable). Only the flat set of files found there is served, looked up by exact name, so a
/// path cannot reach outside it.
struct ConsoleFiles: Sendable {
    struct File: Sendable {
        var bytes: [UInt8]
        var contentType: String
        var etag: String
    }

    let directory: String
    let files: [String: File]

    /// The Console folder next to this service's sources.
    static var sourceTreeDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Console").path
    }

    static let contentTypes = [
        "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "ico": "image/x-icon", "json": "application/json", "txt": "text/plain; charset=utf-8",
    ]

    init(directory: String) {
        self.directory = directory
        var files: [String: File] = [:]
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where Self.isServableName(name) {
            let ext = String(name[name.index(after: name.lastIndex(of: ".")!)...]).lowercased()
            guard let type = Self.contentTypes[ext], let data = FileManager.default.contents(atPath: directory + "/" + name) else { continue }
            let bytes = Array(data)
            let etag = "\"" + Base64URL.encode(Array(SHA256.hash(bytes).prefix(12))) + "\""
            files[name] = File(bytes: bytes, contentType: type, etag: etag)
        }
        self.files = files
    }

    /// Plain file names only: letters, digits, `-`, `_` and one extension; nothing hidden, no separators.
    static func isServableName(_ name: String) -> Bool {
        guard (1...100).contains(name.utf8.count), let dot = name.lastIndex(of: "."), dot != name.startIndex,
              name[name.index(after: dot)...].count > 0 else { return false }
        return name.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x5F || byte == 0x2E
        } && !name.contains("..")
    }

    /// Everything may come only from this origin; the kiosk page alone may use the camera.
    static func securityHeaders(for name: String) -> [(String, String)] {
        let camera = name == "kiosk.html" ? "camera=(self)" : "camera=()"
        return [
            ("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; media-src 'self' blob:; "
                + "connect-src 'self'; font-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"),
            ("Permissions-Policy", "\(camera), microphone=(), geolocation=(), payment=(), usb=()"),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
            ("X-Frame-Options", "DENY"),
            ("Cross-Origin-Opener-Policy", "same-origin"),
            ("Cross-Origin-Resource-Policy", "same-origin"),
        ]
    }

    func response(for name: String, request: HTTPRequest) -> HTTPResponse {
        guard Self.isServableName(name), let file = files[name] else {
            return .json(["error": ["code": "NOT_FOUND", "message": files.isEmpty
                ? "the console is not installed here (set FACEGATE_CONSOLE_DIR)" : "no such console file"]], status: 404)
        }
        // No fingerprinted names, so every load revalidates: a new deployment is picked up at once, and an
        // unchanged file costs a 304.
        var headers = [("Cache-Control", "no-cache"), ("ETag", file.etag)] + Self.securityHeaders(for: name)
        if let tags = request.headers["If-None-Match"], tags.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == file.etag }) {
            return HTTPResponse(status: 304, headers: headers)
        }
        headers.insert(("Content-Type", file.contentType), at: 0)
        return HTTPResponse(status: 200, headers: headers, body: .bytes(file.bytes))
    }
}

/// The web console's static files, from `FACEGATE_CONSOLE_DIR` (or the source tree).
struct ConsoleRoutes: RouteCollection {
    let console: ConsoleFiles

    private let notModified = Answer.content("Not modified (If-None-Match)", [], status: 304)

    func boot(_ routes: APIRoutes) {
        let console = console
        routes.add("GET", "/console", "redirectToConsole", "Redirects to /console/", tag: .console,
                   answers: [.content("Location: /console/", [], status: 301)]) { _ in
            HTTPResponse(status: 301, headers: [("Location", "/console/"), ("Cache-Control", "no-cache")])
        }
        routes.add("GET", "/console/", "getConsole",
                   "The web console for auditors and operators (static page; it calls this API with the key signed in with)", tag: .console,
                   answers: [.content("The page", [("text/html", ["type": "string"])]), notModified], errors: [.notFound],
                   because: [.notFound: "the console is not installed"]) { request in console.response(for: "index.html", request: request) }
        routes.add("GET", "/console/{file}", "getConsoleFile", "A file of the web console (HTML, CSS, JavaScript, images)", tag: .console,
                   answers: [.content("The file", [
                       ("text/html", ["type": "string"]), ("text/css", ["type": "string"]), ("text/javascript", ["type": "string"]),
                       ("application/json", [:]), ("text/plain", ["type": "string"]), ("image/svg+xml", ["type": "string"]),
                       ("image/png", ["type": "string", "contentMediaType": "image/png"]),
                       ("image/x-icon", ["type": "string", "contentMediaType": "image/x-icon"]),
                   ]), notModified], errors: [.notFound]) { request in
            console.response(for: request.pathParameters["file"] ?? "", request: request)
        }
    }
}
