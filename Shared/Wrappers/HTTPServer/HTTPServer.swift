internal import CMicroHTTPD
import Glibc
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd.
///
/// A few daemon threads (`threadCount`) do all socket work; each request's handler runs as a Swift task
/// while its connection is suspended, so waiting handlers cost no threads. Bodies are read fully
/// (up to the route's cap) before the handler runs.
public final class HTTPServer: Sendable {
    public let configuration: HTTPServerConfiguration
    private let dispatcher: RequestDispatcher
    private let lifecycle = Mutex(Lifecycle.idle)
    private let boundPort = Atomic<Int>(0)

    private struct Daemon {
        let handle: OpaquePointer
        let listenSocket: Int32
        let sweeper: Task<Void, Never>
        let retainedDispatcher: Unmanaged<RequestDispatcher>
    }

    private enum Lifecycle {
        case idle
        case running(Daemon)
        case stopped
    }

    /// `onRequest` is called once per finished request on a daemon thread; keep it short (count, log).
    public init(configuration: HTTPServerConfiguration, router: Router, onRequest: (@Sendable (HTTPRequestRecord) -> Void)? = nil) {
        self.configuration = configuration
        self.dispatcher = RequestDispatcher(router: router, configuration: configuration, onRequest: onRequest)
    }

    deinit {
        if case .running(let daemon) = lifecycle.withLock({ $0 }) {
            // Nobody awaited shutdown: answer what is in flight with 503 and stop.
            stop(daemon, drained: false)
        }
    }

    /// Binds and starts serving. Throws when the address cannot be bound (port taken: `.bindFailed`, `EADDRINUSE`).
    public func start() throws(HTTPServerError) {
        try validate(configuration)
        try lifecycle.withLock { state throws(HTTPServerError) in
            guard case .idle = state else { throw HTTPServerError(.alreadyStarted, "start() was already called") }
            let (listenSocket, port) = try Self.bindListeningSocket(host: configuration.host, port: configuration.port)
            let retained = Unmanaged.passRetained(dispatcher)
            let flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            let handle = cmhd_start_daemon(
                UInt32(flags), listenSocket, UInt32(configuration.threadCount),
                UInt32(configuration.connectionTimeoutSeconds), UInt32(configuration.perIPConnectionLimit),
                UInt32(configuration.maxConnections), UInt32(configuration.connectionMemoryBytes),
                daemonAccessHandler, retained.toOpaque(), daemonRequestCompleted, retained.toOpaque())
            guard let handle else {
                close(listenSocket)
                retained.release()
                throw HTTPServerError(.daemonStartFailed, "libmicrohttpd refused to start")
            }
            let sweeper = Task { [dispatcher] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    dispatcher.sweepHungUpStreams()
                }
            }
            boundPort.store(port, ordering: .releasing)
            state = .running(Daemon(handle: handle, listenSocket: listenSocket, sweeper: sweeper, retainedDispatcher: retained))
        }
    }

    /// Version of the libmicrohttpd the process runs with.
    public static var libraryVersion: String {
        MHD_get_version().map { String(cString: $0) } ?? "unknown"
    }

    /// The bound port (the ephemeral one when configured with 0); 0 before `start()`.
    public var port: Int { boundPort.load(ordering: .acquiring) }

    /// Stops accepting connections, lets in-flight requests and streams finish for up to `gracePeriod`
    /// (responses sent meanwhile carry `Connection: close`), answers what is left with 503, then stops.
    public func shutdown(gracePeriod: Duration = .seconds(10)) async {
        let daemon = lifecycle.withLock { state -> Daemon? in
            guard case .running(let daemon) = state else { return nil }
            state = .stopped
            return daemon
        }
        guard let daemon else { return }
        dispatcher.draining.store(true, ordering: .relaxed)
        let placeholder = Self.stopListening(daemon.listenSocket)
        await waitForOpenRequests(until: .now + gracePeriod)
        dispatcher.abandonAll()
        await waitForOpenRequests(until: .now + .seconds(1))
        stop(daemon, drained: true)
        if placeholder >= 0 { close(placeholder) }
    }

    /// Closes the listening socket under the daemon's feet: new connections are refused at once, and the kernel drops
    /// the socket from every epoll set it was in. `MHD_quiesce_daemon` would do this, but in libmicrohttpd 0.9.75 it
    /// races a busy epoll worker removing the same socket and aborts the process ("Failed to remove listen FD from epoll
    /// set"; `shutdownUnderTrafficNeverAbortsTheProcess` reached it within 2,000 shutdowns). The socket's descriptor
    /// number is taken over by one end of a socket pair that is never written (`dup2` closes and replaces in one step),
    /// so the daemon, which still owns that number, polls nothing and closes it when it stops. Returns the pair's other
    /// end, to close after the daemon stops; -1 when no pair could be made (out of descriptors), and then the server goes on
    /// accepting while it drains, answering each request with `Connection: close`.
    private static func stopListening(_ listenSocket: Int32) -> Int32 {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else { return -1 }
        dup2(ends[0], listenSocket)
        close(ends[0])
        return ends[1]
    }

    private func waitForOpenRequests(until deadline: ContinuousClock.Instant) async {
        while dispatcher.openRequests.load(ordering: .relaxed) > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    private func stop(_ daemon: Daemon, drained: Bool) {
        daemon.sweeper.cancel()
        if !drained {
            dispatcher.draining.store(true, ordering: .relaxed)
            dispatcher.abandonAll()
            let deadline = ContinuousClock.now + .seconds(1)
            while dispatcher.openRequests.load(ordering: .relaxed) > 0, ContinuousClock.now < deadline {
                usleep(5_000)
            }
        }
        MHD_stop_daemon(daemon.handle)
        daemon.retainedDispatcher.release()
    }

    private func validate(_ configuration: HTTPServerConfiguration) throws(HTTPServerError) {
        func check(_ condition: Bool, _ message: String) throws(HTTPServerError) {
            if !condition { throw HTTPServerError(.invalidConfiguration, message) }
        }
        try check((0...65535).contains(configuration.port), "port \(configuration.port) is outside 0...65535")
        try check((1...64).contains(configuration.threadCount), "threadCount must be 1...64")
        try check(configuration.maxBodyBytes >= 0, "maxBodyBytes must not be negative")
        try check((1...86_400).contains(configuration.connectionTimeoutSeconds), "connectionTimeoutSeconds must be 1...86400")
        try check(configuration.perIPConnectionLimit >= 1, "perIPConnectionLimit must be at least 1")
        try check((1...1_000_000).contains(configuration.maxConnections), "maxConnections must be 1...1000000")
        try check((8 << 10...16 << 20).contains(configuration.connectionMemoryBytes), "connectionMemoryBytes must be 8 KiB...16 MiB")
    }

    /// Binds and listens ourselves (rather than letting the daemon do it) to report the exact `errno`
    /// and learn the port chosen for port 0.
    private static func bindListeningSocket(host: String, port: Int) throws(HTTPServerError) -> (socket: Int32, port: Int) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            throw HTTPServerError(.addressResolutionFailed, "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var lastError: Int32 = 0
        var candidate: UnsafeMutablePointer<addrinfo>? = list
        while let info = candidate {
            candidate = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { lastError = errno; continue }
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0, listen(fd, 4096) == 0 else {
                lastError = errno
                close(fd)
                continue
            }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0 else {
                lastError = errno
                close(fd)
                continue
            }
            let boundPort: UInt16 = withUnsafeBytes(of: storage) { raw in
                Int32(raw.load(as: sockaddr.self).sa_family) == AF_INET6
                    ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
                    : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
            }
            return (fd, Int(boundPort))
        }
        throw HTTPServerError(.bindFailed, code: lastError, "cannot listen on \(host):\(port)")
    }
}
