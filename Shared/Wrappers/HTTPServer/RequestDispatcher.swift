internal import CMicroHTTPD
import Foundation
import Glibc
import Synchronization

/// State of one request, owned by the daemon through the access handler's per-request pointer
/// (retained on the first call, released by the completion callback).
final class RequestContext: @unchecked Sendable {
    // @unchecked: every `var` is read and written only by the daemon thread serving this connection
    // (libmicrohttpd runs one connection's callbacks on one thread); `handoff` is the only state the
    // handler task touches, and it is a Mutex.
    enum Phase {
        /// The route's admission runs before the body is read; the connection is suspended meanwhile.
        case admitting
        case receiving
        case handling
        case responded
    }

    struct Handoff {
        /// The connection is suspended waiting for the handler; whoever clears this resumes it.
        var waiting = false
        /// The admission has decided (a refusal is in `response`, what an admission learned in `admitted`).
        var admissionDecided = false
        var admitted: (any Sendable)?
        var response: HTTPResponse?
        var task: Task<Void, Never>?
    }

    let connection: OpaquePointer
    let started: ContinuousClock.Instant
    var request: HTTPRequest
    var handler: HTTPHandler?
    var bodyLimit = 0
    var phase = Phase.receiving
    var status: Int?
    /// The answer's `traceresponse` header, for the request's record.
    var traceResponse: String?
    var abortedOversized = false
    let handoff = Mutex(Handoff())

    init(connection: OpaquePointer, request: HTTPRequest) {
        self.connection = connection
        self.started = .now
        self.request = request
    }
}

/// The Swift side of the daemon: turns access-handler calls into handler tasks and responses.
final class RequestDispatcher: Sendable {
    let router: Router
    let configuration: HTTPServerConfiguration
    let onRequest: (@Sendable (HTTPRequestRecord) -> Void)?
    /// Set when shutdown begins: responses then carry `Connection: close`.
    let draining = Atomic<Bool>(false)
    /// Requests whose headers arrived and whose completion was not reported yet.
    let openRequests = Atomic<Int>(0)
    let streams = StreamRegistry()
    private let suspended = Mutex(SuspendedRequests())

    /// Requests whose connection is suspended while their handler runs. Once `stopping` is set no
    /// connection is suspended any more: the daemon must never be stopped with one suspended.
    private struct SuspendedRequests {
        var stopping = false
        var contexts: [ObjectIdentifier: RequestContext] = [:]
    }

    init(router: Router, configuration: HTTPServerConfiguration, onRequest: (@Sendable (HTTPRequestRecord) -> Void)?) {
        self.router = router
        self.configuration = configuration
        self.onRequest = onRequest
    }

    // MARK: access handler

    /// First call for a request: headers are in, the body (if any) is not.
    func begin(connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?) -> RequestContext {
        openRequests.add(1, ordering: .relaxed)
        let method = method.map { String(cString: $0) } ?? "GET"
        let path = url.map { String(cString: $0) } ?? "/"
        let headers = HTTPHeaders(Self.values(of: connection, kind: .HEADER_KIND))
        var query: [String: String] = [:]
        for (name, value) in Self.values(of: connection, kind: .GET_ARGUMENT_KIND) {
            let key = percentDecode(name, plusAsSpace: true)
            if query[key] == nil {
                query[key] = percentDecode(value, plusAsSpace: true)
            }
        }
        let requestId = headers["X-Request-Id"].flatMap { Self.isSaneRequestId($0) ? $0 : nil }
            ?? UUID().uuidString.lowercased()
        let request = HTTPRequest(
            method: method, path: path, query: query, headers: headers, body: [], pathParameters: [:],
            remoteAddress: Self.remoteAddress(of: connection), requestId: requestId, routeTemplate: "unmatched")
        return RequestContext(connection: connection, request: request)
    }

    func afterHeaders(_ context: RequestContext) -> MHD_Result {
        if suspended.withLock({ $0.stopping }) {
            return queue(Self.stoppingResponse, for: context)
        }
        // RFC 9112 §6.3: a message with both Content-Length and Transfer-Encoding is a request-smuggling vector, and a
        // Content-Length that is not one decimal number has no meaning; both are refused before any body is read.
        let lengths = context.request.headers.values(for: "Content-Length")
        let declaredLength = lengths.first
        let transferEncoding = context.request.headers["Transfer-Encoding"]
        if declaredLength != nil, transferEncoding != nil {
            return queue(HTTPError.badRequest("a request may carry Content-Length or Transfer-Encoding, not both").response, for: context)
        }
        if let declaredLength, lengths.count > 1 || declaredLength.isEmpty || !declaredLength.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            return queue(HTTPError.badRequest("Content-Length must be one decimal number, sent once").response, for: context)
        }
        if let declaredLength, UInt64(declaredLength) == nil {
            return queue(HTTPError.payloadTooLarge(limit: configuration.maxBodyBytes).response, for: context)
        }
        switch router.lookup(method: context.request.method, path: context.request.path) {
        case .notFound:
            return queue(HTTPError.notFound().response, for: context)
        case .methodNotAllowed(let allowed):
            return queue(HTTPError.methodNotAllowed(allowed: allowed).response, for: context)
        case .matched(let route, let parameters):
            context.handler = route.handler
            context.request.pathParameters = parameters
            context.request.routeTemplate = route.pattern
            context.bodyLimit = route.maxBodyBytes ?? configuration.maxBodyBytes
            if let declared = context.request.headers["Content-Length"].flatMap({ UInt64($0) }) {
                guard declared <= UInt64(context.bodyLimit) else {
                    // Answered before a byte of the body is read; the daemon then closes the connection.
                    return queue(HTTPError.payloadTooLarge(limit: context.bodyLimit).response, for: context)
                }
                context.request.body.reserveCapacity(Int(declared))
            }
            // Any Transfer-Encoding announces a body, whatever its coding: the credentials are checked before it is read.
            let hasBody = transferEncoding != nil || declaredLength.map { UInt64($0) != 0 } ?? false
            if let admission = route.admission, hasBody {
                return admit(context, with: admission)
            }
            return .YES
        }
    }

    /// Suspends the connection while `admission` looks at the request line and headers; the next call (after the
    /// resume) reads the body, or sends the refusal and leaves the body unread.
    private func admit(_ context: RequestContext, with admission: @escaping HTTPAdmission) -> MHD_Result {
        let request = context.request
        return suspend(context, into: .admitting) { [self] in
            switch await admission(request) {
            case .admit(let what):
                context.handoff.withLock { $0.admitted = what }
                deliver(nil, to: context, decidingAdmission: true)
            case .refuse(let refusal):
                deliver(refusal, to: context, decidingAdmission: true)
            }
        }
    }

    /// Later calls: body pieces, the end of the body, or the call after a handler resumed the connection.
    func proceed(_ context: RequestContext, uploadData: UnsafePointer<CChar>?, uploadDataSize: UnsafeMutablePointer<Int>) -> MHD_Result {
        if context.phase == .admitting {
            let (decided, refusal, admitted) = context.handoff.withLock { ($0.admissionDecided, $0.response.take(), $0.admitted.take()) }
            if let refusal {
                // The admission's refusal, or shutdown's 503: sent with the body unread; the daemon then closes the connection.
                suspended.withLock { $0.contexts[ObjectIdentifier(context)] = nil }
                return queue(refusal, for: context)
            }
            guard decided else { return .YES }
            suspended.withLock { $0.contexts[ObjectIdentifier(context)] = nil }
            context.request.admitted = admitted
            // The daemon repeats the headers call after a resume from it (no body yet): the body comes next.
            context.phase = .receiving
            return .YES
        }
        switch context.phase {
        case .receiving:
            let size = uploadDataSize.pointee
            if size > 0 {
                guard let uploadData else { return .NO }
                guard context.request.body.count + size <= context.bodyLimit else {
                    // A chunked body grew past the cap. The daemon cannot queue a response in the middle of
                    // a body, so the connection is closed instead of reading the rest.
                    context.abortedOversized = true
                    return .NO
                }
                context.request.body.append(contentsOf: UnsafeRawBufferPointer(start: uploadData, count: size))
                uploadDataSize.pointee = 0
                return .YES
            }
            return dispatch(context)
        case .handling:
            let response = context.handoff.withLock { $0.response.take() }
            guard let response else { return .YES }
            suspended.withLock { $0.contexts[ObjectIdentifier(context)] = nil }
            return queue(response, for: context)
        case .responded, .admitting:
            return .YES
        }
    }

    private func dispatch(_ context: RequestContext) -> MHD_Result {
        guard let handler = context.handler else { return .NO }
        let request = context.request
        context.request.body = []
        return suspend(context, into: .handling) { [self] in
            let response: HTTPResponse
            do {
                response = try await handler(request)
            } catch let error as HTTPError {
                response = error.response
            } catch {
                response = HTTPError.internalError.response
            }
            deliver(response, to: context)
        }
    }

    /// Suspends the connection and runs `work` off the daemon's thread; `work` resumes it through `deliver`. While
    /// suspended the request is registered, so that shutdown can answer it.
    private func suspend(_ context: RequestContext, into phase: RequestContext.Phase, _ work: @escaping @Sendable () async -> Void) -> MHD_Result {
        let admitted = suspended.withLock { suspended -> Bool in
            guard !suspended.stopping else { return false }
            suspended.contexts[ObjectIdentifier(context)] = context
            return true
        }
        guard admitted else { return queue(Self.stoppingResponse, for: context) }
        context.phase = phase
        context.handoff.withLock { $0.waiting = true }
        MHD_suspend_connection(context.connection)
        let task = Task { await work() }
        context.handoff.withLock { handoff in
            if handoff.waiting { handoff.task = task }
        }
        return .YES
    }

    /// Hands a response (or an admission's verdict: nil admits) to a suspended connection; ignored when the
    /// connection was already answered (shutdown gave up on the handler) or is gone.
    private func deliver(_ response: HTTPResponse?, to context: RequestContext, decidingAdmission: Bool = false) {
        let resume = context.handoff.withLock { handoff -> Bool in
            guard handoff.waiting else { return false }
            handoff.waiting = false
            handoff.response = response
            handoff.admissionDecided = handoff.admissionDecided || decidingAdmission
            handoff.task = nil
            return true
        }
        if resume { MHD_resume_connection(context.connection) }
    }

    // MARK: responses

    private func queue(_ response: HTTPResponse, for context: RequestContext) -> MHD_Result {
        context.phase = .responded
        var response = response
        if !(100...599).contains(response.status) {
            response = HTTPError.internalError.response
        }
        let handle: OpaquePointer?
        switch response.body {
        case .bytes(let bytes):
            handle = bytes.withUnsafeBytes { raw in
                MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
            }
        case .stream(let stream):
            // Unknown size: the daemon sends it chunked (HTTP/1.1) and releases the pump when done.
            let pump = ResponseStreamPump(connection: context.connection, registry: streams)
            let retained = Unmanaged.passRetained(pump)
            handle = MHD_create_response_from_callback(UInt64.max, 32 << 10, streamPumpRead, retained.toOpaque(), streamPumpRelease)
            if handle == nil {
                retained.release()
                pump.released()
            } else {
                pump.start(stream)
            }
        }
        guard let handle else { return .NO }
        defer { MHD_destroy_response(handle) }
        for (name, value) in response.headers where Self.isSendable(name: name, value: value) {
            _ = MHD_add_response_header(handle, name, value)
        }
        _ = MHD_add_response_header(handle, "X-Request-Id", context.request.requestId)
        if draining.load(ordering: .relaxed) {
            _ = MHD_add_response_header(handle, "Connection", "close")
        }
        context.status = response.status
        context.traceResponse = response.headers.first { asciiCaseInsensitiveEquals($0.0, "traceresponse") }?.1
        return MHD_queue_response(context.connection, UInt32(response.status), handle)
    }

    // MARK: completion and shutdown

    /// The daemon is done with a request (sent, failed, timed out or stopping).
    func finish(_ context: RequestContext, termination: MHD_RequestTerminationCode) {
        let task = context.handoff.withLock { handoff -> Task<Void, Never>? in
            handoff.waiting = false
            defer { handoff.task = nil }
            return handoff.task
        }
        task?.cancel()
        suspended.withLock { $0.contexts[ObjectIdentifier(context)] = nil }
        openRequests.subtract(1, ordering: .relaxed)
        guard let onRequest else { return }
        let status = context.status ?? (context.abortedOversized ? 413 : 499)
        onRequest(HTTPRequestRecord(
            method: context.request.method, routeTemplate: context.request.routeTemplate, status: status,
            duration: .now - context.started, requestId: context.request.requestId,
            remoteAddress: context.request.remoteAddress, traceResponse: context.traceResponse))
    }

    /// Answers every request still waiting on its handler with 503, ends every stream, and from now on
    /// answers new requests with 503 at once, so that no connection stays or becomes suspended
    /// (the daemon must not be stopped with suspended connections).
    func abandonAll() {
        let waiting = suspended.withLock { suspended in
            suspended.stopping = true
            return Array(suspended.contexts.values)
        }
        let unavailable = Self.stoppingResponse
        for context in waiting {
            let (resume, task) = context.handoff.withLock { handoff -> (Bool, Task<Void, Never>?) in
                guard handoff.waiting else { return (false, nil) }
                handoff.waiting = false
                handoff.response = unavailable
                defer { handoff.task = nil }
                return (true, handoff.task)
            }
            task?.cancel()
            if resume { MHD_resume_connection(context.connection) }
        }
        for pump in streams.stopAll() {
            pump.fail()
        }
    }

    private static var stoppingResponse: HTTPResponse {
        HTTPError.serviceUnavailable("Server is shutting down").response
    }

    /// Ends streams whose client hung up while the stream was idle.
    func sweepHungUpStreams() {
        for pump in streams.all where pump.peerHasGone() {
            pump.fail()
        }
    }

    // MARK: helpers

    private final class PairCollector {
        var pairs: [(String, String)] = []
    }

    private static func values(of connection: OpaquePointer, kind: MHD_ValueKind) -> [(String, String)] {
        let collector = PairCollector()
        withExtendedLifetime(collector) {
            _ = MHD_get_connection_values_n(connection, kind, collectPair, Unmanaged.passUnretained(collector).toOpaque())
        }
        return collector.pairs
    }

    private static let collectPair: MHD_KeyValueIteratorN = { context, _, key, keySize, value, valueSize in
        guard let context else { return .NO }
        let collector = Unmanaged<PairCollector>.fromOpaque(context).takeUnretainedValue()
        func text(_ pointer: UnsafePointer<CChar>?, _ size: Int) -> String {
            guard let pointer, size > 0 else { return "" }
            return String(decoding: UnsafeRawBufferPointer(start: pointer, count: size), as: UTF8.self)
        }
        collector.pairs.append((text(key, keySize), text(value, valueSize)))
        return .YES
    }

    private static func remoteAddress(of connection: OpaquePointer) -> String {
        guard let address = cmhd_client_address(connection) else { return "unknown" }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                var raw = ipv4.pointee.sin_addr
                _ = inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
            }
        case AF_INET6:
            address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
                var raw = ipv6.pointee.sin6_addr
                _ = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
            }
        default:
            return "unknown"
        }
        let result = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return result.hasPrefix("::ffff:") && result.contains(".") ? String(result.dropFirst(7)) : result
    }

    static func isSaneRequestId(_ value: String) -> Bool {
        let utf8 = value.utf8
        return (1...128).contains(utf8.count) && utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    /// Header names must be tokens and values free of control characters (no response splitting);
    /// framing headers are the daemon's to write.
    private static func isSendable(name: String, value: String) -> Bool {
        guard !name.isEmpty,
              name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x3A }),
              value.utf8.allSatisfy({ $0 >= 0x20 ? $0 != 0x7F : $0 == 0x09 })
        else { return false }
        for reserved in ["Content-Length", "Transfer-Encoding", "X-Request-Id", "Date"] where asciiCaseInsensitiveEquals(name, reserved) {
            return false
        }
        return true
    }
}

// MARK: daemon callbacks (C function pointers; the server pointer travels as an unretained context)

func daemonAccessHandler(
    _ context: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadDataSize: UnsafeMutablePointer<Int>?, _ requestPointer: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let context, let connection, let uploadDataSize, let requestPointer else { return .NO }
    let dispatcher = Unmanaged<RequestDispatcher>.fromOpaque(context).takeUnretainedValue()
    if let existing = requestPointer.pointee {
        let request = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()
        return dispatcher.proceed(request, uploadData: uploadData, uploadDataSize: uploadDataSize)
    }
    let request = dispatcher.begin(connection: connection, url: url, method: method)
    requestPointer.pointee = Unmanaged.passRetained(request).toOpaque()
    return dispatcher.afterHeaders(request)
}

func daemonRequestCompleted(
    _ context: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ requestPointer: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ termination: MHD_RequestTerminationCode
) {
    guard let context, let requestPointer, let existing = requestPointer.pointee else { return }
    requestPointer.pointee = nil
    let dispatcher = Unmanaged<RequestDispatcher>.fromOpaque(context).takeUnretainedValue()
    let request = Unmanaged<RequestContext>.fromOpaque(existing).takeRetainedValue()
    dispatcher.finish(request, termination: termination)
}
