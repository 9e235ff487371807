import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// One message of a `text/event-stream` (the WHATWG Server-Sent Events format).
struct ServerSentEvent: Sendable, Equatable {
    var id: String?
    var event: String
    var data: String
}

/// Incremental Server-Sent Events parser: feed it bytes as they arrive, get whole messages back.
/// Lines end in LF, CR or CRLF (a CRLF split across two chunks counts once); `:` lines are comments;
/// `data` lines join with LF; a message is dispatched at a blank line; a message without data is dropped.
struct ServerSentEventParser {
    private var line: [UInt8] = []
    private var skipLeadingLF = false
    private var dataLines: [String] = []
    private var sawData = false
    private var eventName = ""
    /// The stream's last event id so far (persists across messages, as the spec says).
    private(set) var lastEventId: String?
    private var pendingId: String?
    /// A `retry:` the server asked for, in milliseconds.
    private(set) var retry: Int?

    mutating func feed(_ bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
        var messages: [ServerSentEvent] = []
        for byte in bytes {
            if skipLeadingLF {
                skipLeadingLF = false
                if byte == 0x0A { continue }
            }
            switch byte {
            case 0x0A:
                if let message = endLine() { messages.append(message) }
            case 0x0D:
                skipLeadingLF = true
                if let message = endLine() { messages.append(message) }
            default:
                line.append(byte)
            }
        }
        return messages
    }

    private mutating func endLine() -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty { return dispatch() }
        if line.first == UInt8(ascii: ":") { return nil }
        let field: String
        var value: String
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            field = String(decoding: line[..<colon], as: UTF8.self)
            var start = colon + 1
            if start < line.endIndex, line[start] == UInt8(ascii: " ") { start += 1 }
            value = String(decoding: line[start...], as: UTF8.self)
        } else {
            field = String(decoding: line, as: UTF8.self)
            value = ""
        }
        switch field {
        case "event": eventName = value
        case "data":
            dataLines.append(value)
            sawData = true
        case "id":
            if !value.contains("\u{0}") { pendingId = value }
        case "retry":
            if !value.isEmpty, value.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let milliseconds = Int(value) { retry = milliseconds }
        default:
            value = ""
        }
        return nil
    }

    private mutating func dispatch() -> ServerSentEvent? {
        if let pendingId { lastEventId = pendingId.isEmpty ? nil : pendingId }
        pendingId = nil
        defer {
            dataLines.removeAll()
            sawData = false
            eventName = ""
        }
        guard sawData else { return nil }
        return ServerSentEvent(id: lastEventId, event: eventName.isEmpty ? "message" : eventName, data: dataLines.joined(separator: "\n"))
    }
}

/// The bytes of one streamed HTTP response, as they arrive, read through a URLSession data delegate.
/// A non-2xx answer ends the stream with the server's error (from its error envelope).
final class StreamingResponse: NSObject, URLSessionDataDelegate, @unchecked Sendable {  // mutable state sits in a Mutex; the rest is set in init
    let chunks: AsyncThrowingStream<Data, any Error>
    private let continuation: AsyncThrowingStream<Data, any Error>.Continuation
    private let state = Mutex(ResponseState())
    private let session: Mutex<URLSession?> = Mutex(nil)

    private struct ResponseState {
        var status = 0
        var retryAfter: String?
        var errorBody = Data()
        var task: URLSessionDataTask?
    }

    init(request: URLRequest, idleTimeout: Duration) {
        (chunks, continuation) = AsyncThrowingStream.makeStream(of: Data.self, throwing: (any Error).self)
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = idleTimeout.timeInterval
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        let urlSession = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
        session.withLock { $0 = urlSession }
        let task = urlSession.dataTask(with: request)
        state.withLock { $0.task = task }
        continuation.onTermination = { [weak self] _ in self?.stop() }
        task.resume()
    }

    /// Cancels the request and releases the session (which otherwise holds this delegate).
    func stop() {
        let task = state.withLock { $0.task }
        task?.cancel()
        session.withLock { session in
            session?.invalidateAndCancel()
            session = nil
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let http = response as? HTTPURLResponse
        state.withLock {
            $0.status = http?.statusCode ?? 0
            $0.retryAfter = http?.value(forHTTPHeaderField: "Retry-After")
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let passOn = state.withLock { state -> Bool in
            if (200..<300).contains(state.status) { return true }
            if state.errorBody.count < 64 << 10 { state.errorBody.append(data) }
            return false
        }
        if passOn { continuation.yield(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (status, body, retryAfter) = state.withLock { ($0.status, $0.errorBody, $0.retryAfter) }
        if let error {
            continuation.finish(throwing: Transport.transportError(error))
        } else if !(200..<300).contains(status) {
            continuation.finish(throwing: Transport.error(status: status, body: body, retryAfter: retryAfter))
        } else {
            continuation.finish()
        }
        self.session.withLock { session in
            session?.finishTasksAndInvalidate()
            session = nil
        }
    }
}
