import Foundation
import Glibc

/// The integration tests' HTTP client: HTTP/1.1 to 127.0.0.1, one request per connection (`Connection: close`), with
/// blocking socket calls on a thread of its own. Foundation's URLSession on Linux re-arms dispatch sources for libcurl
/// all the while a request waits: in a profile of a whole `make test`, the test processes' dispatch threads, busy
/// mostly with that, had 13% of the samples. The SDK's tests still go through URLSession (FaceGateClient), as apps do.
public enum LoopbackHTTP {
    public struct Response: Sendable {
        public var status: Int
        /// Lower-case names; repeated fields joined with ", ".
        public var headers: [String: String]
        public var body: Data
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// `timeout` bounds each wait for the peer (connect, each send and each receive), as URLRequest's does.
    public static func send(port: Int, method: String, path: String, headers: [(String, String)], body: Data?,
                            timeout: TimeInterval) async throws -> Response {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try exchange(port: port, method: method, path: path, headers: headers, body: body, timeout: timeout) })
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    private static func exchange(port: Int, method: String, path: String, headers: [(String, String)], body: Data?,
                                 timeout: TimeInterval) throws -> Response {
        let socket = try connect(port: port, timeout: timeout)
        defer { close(socket) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if body != nil || method == "POST" || method == "PUT" { head += "Content-Length: \(body?.count ?? 0)\r\n" }
        head += "\r\n"
        // A server may answer and close before it read the whole body (a refused credential, a body too large): the
        // answer is still there to read, so a failed send is only reported when no answer follows.
        var sendError: Failure?
        do { try sendAll(socket, Data(head.utf8) + (body ?? Data())) } catch let error as Failure { sendError = error }
        let received = receiveUntilClosed(socket)
        guard !received.bytes.isEmpty else { throw sendError ?? received.error ?? Failure(description: "the server closed without an answer") }
        return try parse(received.bytes)
    }

    private static func connect(port: Int, timeout: TimeInterval) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var wait = timeval(tv_sec: Int(timeout), tv_usec: Int(timeout.truncatingRemainder(dividingBy: 1) * 1e6))
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(socket)
            throw Failure(description: "connect to 127.0.0.1:\(port): errno \(code)")
        }
        return socket
    }

    private static func sendAll(_ socket: Int32, _ bytes: Data) throws {
        try bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < buffer.count {
                let sent = Glibc.send(socket, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                guard sent > 0 else { throw Failure(description: "send: errno \(errno)") }
                offset += sent
            }
        }
    }

    private static func receiveUntilClosed(_ socket: Int32) -> (bytes: [UInt8], error: Failure?) {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count == 0 { return (bytes, nil) }
            guard count > 0 else {
                let code = errno
                if code == EINTR { continue }
                return (bytes, Failure(description: code == EAGAIN ? "timed out waiting for the answer" : "receive: errno \(code)"))
            }
            bytes += chunk[0..<count]
        }
    }

    private static func parse(_ bytes: [UInt8]) throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.indices.dropLast(3).first(where: { bytes[$0..<$0 + 4].elementsEqual(separator) }) else {
            throw Failure(description: "an answer without a complete head (\(bytes.count) bytes)")
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure(description: "bad status line \(lines[0])") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        var body = Array(bytes[(end + 4)...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" {
            body = try dechunk(body)
        } else if let length = headers["content-length"].flatMap({ Int($0) }) {
            guard body.count >= length else { throw Failure(description: "the answer ended after \(body.count) of \(length) bytes") }
            body = Array(body[..<length])
        }
        return Response(status: status, headers: headers, body: Data(body))
    }

    private static func dechunk(_ framed: [UInt8]) throws -> [UInt8] {
        var body: [UInt8] = []
        var index = 0
        while true {
            guard let lineEnd = framed[index...].indices.dropLast().first(where: { framed[$0] == 13 && framed[$0 + 1] == 10 }),
                  let size = Int(String(decoding: framed[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? "", radix: 16) else {
                throw Failure(description: "a broken chunk at byte \(index)")
            }
            if size == 0 { return body }
            let start = lineEnd + 2
            guard framed.count >= start + size + 2 else { throw Failure(description: "the answer ended inside a chunk") }
            body += framed[start..<start + size]
            index = start + size + 2
        }
    }
}
