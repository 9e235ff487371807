import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import HTTPServer
import Synchronization

/// Starts a server on an ephemeral port with the given routes.
func startServer(
    _ configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    onRequest: (@Sendable (HTTPRequestRecord) -> Void)? = nil,
    routes: (Router) -> Void
) throws -> HTTPServer {
    var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
    configure(&configuration)
    let router = Router()
    routes(router)
    let server = HTTPServer(configuration: configuration, router: router, onRequest: onRequest)
    try server.start()
    return server
}

/// Runs blocking client code on a thread of its own, so it never occupies the cooperative pool the
/// server's handlers need.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.stackSize = 1 << 20
        thread.start()
    }
}

struct ClientError: Error, CustomStringConvertible {
    var description: String
}

/// A response read off a raw socket.
struct RawResponse: Sendable {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    /// Payloads of the chunks as framed on the wire (empty when the response was not chunked).
    var chunks: [[UInt8]]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A blocking TCP connection with a receive timeout, for requests URLSession will not send
/// (half-sent headers, lying Content-Length) and for observing chunk framing.
final class RawConnection: @unchecked Sendable {
    // @unchecked: used by one thread at a time (the test's client thread).
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, receiveTimeout: Double = 15) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError(description: "socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // No close here on failure: a class whose stored properties are set runs deinit when init throws.
        guard connected == 0 else { throw ClientError(description: "connect failed: errno \(errno)") }
        var timeout = timeval(tv_sec: Int(receiveTimeout), tv_usec: Int(receiveTimeout.truncatingRemainder(dividingBy: 1) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw ClientError(description: "send failed: errno \(errno)") }
            offset += sent
        }
    }

    /// Reads more bytes into the buffer; false at end of stream. Throws on timeout or reset.
    @discardableResult
    func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count == 0 { return false }
        guard count > 0 else {
            let code = errno
            throw ClientError(description: code == EAGAIN ? "receive timed out" : "receive failed: errno \(code)")
        }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    /// Waits until the peer closes; true if it did (false if data arrived instead).
    func waitForClose() throws -> (closed: Bool, received: [UInt8]) {
        while try fill() {}
        return (true, buffer)
    }

    func readLine() throws -> String {
        while true {
            if let index = findCRLF() {
                let line = String(decoding: buffer[0..<index], as: UTF8.self)
                buffer.removeFirst(index + 2)
                return line
            }
            guard try fill() else { throw ClientError(description: "connection closed mid-line") }
        }
    }

    func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { throw ClientError(description: "connection closed mid-body") }
        }
        let bytes = Array(buffer[0..<count])
        buffer.removeFirst(count)
        return bytes
    }

    func readHead() throws -> (status: Int, headers: [(String, String)]) {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw ClientError(description: "bad status line \(statusLine)") }
        var headers: [(String, String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return (status, headers)
    }

    /// Reads one chunk of a chunked body; nil at the terminating zero-size chunk.
    func readChunk() throws -> [UInt8]? {
        let sizeLine = try readLine()
        guard let size = Int(sizeLine.split(separator: ";")[0], radix: 16) else {
            throw ClientError(description: "bad chunk size \(sizeLine)")
        }
        if size == 0 {
            while try !readLine().isEmpty {}
            return nil
        }
        let data = try readExactly(size)
        _ = try readExactly(2)
        return data
    }

    func readResponse(head: Bool = false) throws -> RawResponse {
        let (status, headers) = try readHead()
        var response = RawResponse(status: status, headers: headers, body: [], chunks: [])
        if head { return response }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            while let chunk = try readChunk() {
                response.chunks.append(chunk)
                response.body += chunk
            }
        } else if let length = response.header("Content-Length").flatMap({ Int($0) }) {
            response.body = try readExactly(length)
        }
        return response
    }

    private func findCRLF() -> Int? {
        guard buffer.count >= 2 else { return nil }
        for i in 0..<(buffer.count - 1) where buffer[i] == 0x0D && buffer[i + 1] == 0x0A {
            return i
        }
        return nil
    }
}

/// A URLSession client for ordinary requests.
struct TestClient {
    let port: Int
    let session: URLSession

    init(port: Int) {
        self.port = port
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 16
        configuration.timeoutIntervalForRequest = 30
        session = URLSession(configuration: configuration)
    }

    func send(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8]? = nil) async throws -> (status: Int, headers: [String: String], body: [UInt8]) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body { request.httpBody = Data(body) }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw ClientError(description: "not HTTP") }
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            fields[String(describing: name).lowercased()] = String(describing: value)
        }
        return (http.statusCode, fields, Array(data))
    }
}

struct ErrorBody: Decodable {
    struct Inner: Decodable {
        var code: String
        var message: String
        var transactionId: String?
    }
    var error: Inner
}

func decodeError(_ body: [UInt8]) throws -> ErrorBody.Inner {
    try JSONDecoder().decode(ErrorBody.self, from: Data(body)).error
}

/// Threads of this process, from /proc/self/status.
func processThreadCount() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in status.split(separator: "\n") where line.hasPrefix("Threads:") {
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? -1
    }
    return -1
}

/// A one-shot signal a test can await from async code.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    var isOpen: Bool { state.withLock { $0.open } }
}

/// Polls `condition` (every 10 ms) until it holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(10), _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// Sends `count` GET requests at once, each on its own connection, from one thread (non-blocking
/// sockets and poll), and returns the status of each (-1 when a connection failed).
func concurrentGets(port: Int, path: String, count: Int, timeout: Duration = .seconds(120)) throws -> [Int] {
    enum Phase { case connecting, waiting, done }
    struct Slot {
        var fd: Int32
        var phase: Phase
        var received: [UInt8] = []
        var status = -1
        var failure = ""
    }
    let request = Array("GET \(path) HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n".utf8)
    var slots: [Slot] = []
    defer { for slot in slots where slot.phase != .done { close(slot.fd) } }
    for _ in 0..<count {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw ClientError(description: "socket failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 || errno == EINPROGRESS else { throw ClientError(description: "connect failed: errno \(errno)") }
        slots.append(Slot(fd: fd, phase: .connecting))
    }
    let deadline = ContinuousClock.now + timeout
    var buffer = [UInt8](repeating: 0, count: 16384)
    while slots.contains(where: { $0.phase != .done }), ContinuousClock.now < deadline {
        let open = slots.indices.filter { slots[$0].phase != .done }
        var descriptors = open.map { index in
            pollfd(fd: slots[index].fd, events: Int16(slots[index].phase == .connecting ? POLLOUT : POLLIN), revents: 0)
        }
        guard poll(&descriptors, nfds_t(descriptors.count), 1000) >= 0 else { continue }
        for (position, index) in open.enumerated() where descriptors[position].revents != 0 {
            switch slots[index].phase {
            case .connecting:
                let sent = request.withUnsafeBytes { send(slots[index].fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent == request.count {
                    slots[index].phase = .waiting
                } else {
                    slots[index].failure = "send \(sent) errno \(errno) revents \(descriptors[position].revents)"
                    close(slots[index].fd)
                    slots[index].phase = .done
                }
            case .waiting:
                let got = buffer.withUnsafeMutableBytes { recv(slots[index].fd, $0.baseAddress, $0.count, 0) }
                if got > 0 {
                    slots[index].received += buffer[0..<got]
                } else if got == 0 || (errno != EAGAIN && errno != EINTR) {
                    let head = String(decoding: slots[index].received.prefix(64), as: UTF8.self)
                    let parts = head.split(separator: " ")
                    if parts.count >= 2, let status = Int(parts[1]) { slots[index].status = status }
                    else { slots[index].failure = "recv \(got) errno \(errno) after \(slots[index].received.count) bytes" }
                    close(slots[index].fd)
                    slots[index].phase = .done
                }
            case .done:
                break
            }
        }
    }
    for (index, slot) in slots.enumerated() where slot.status != 200 {
        print("slot \(index): phase \(slot.phase) status \(slot.status) \(slot.failure)")
    }
    return slots.map(\.status)
}

/// Whether a fresh TCP connection to the port is accepted.
func canConnect(port: Int) -> Bool {
    (try? RawConnection(port: port)) != nil
}
