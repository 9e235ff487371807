internal import CMicroHTTPD
import Glibc
import Synchronization

/// Feeds an `AsyncStream` into a chunked libmicrohttpd response.
///
/// The daemon pulls bytes through `read`; when none are buffered it suspends the connection and
/// the stream's consumer resumes it once the producer yields (so an idle stream costs no polling).
/// The consumer stops pulling while more than `highWater` bytes wait for the client, and is
/// cancelled when the daemon releases the response (client gone, request over, server stopping).
final class ResponseStreamPump: @unchecked Sendable {
    // @unchecked: `connection` is used only for suspend/resume, each guarded by the `connectionSuspended`
    // flag in `state` so that exactly one resume follows each suspend; all other mutable state is in `state`.
    static let highWater = 256 << 10
    static let lowWater = 64 << 10

    private struct State {
        var chunks: [[UInt8]] = []
        var headIndex = 0
        var headOffset = 0
        var pendingBytes = 0
        /// The producer finished: end the response once the buffer is drained.
        var finished = false
        /// The client went away or the server is stopping: end the response with an error.
        var failed = false
        /// `read` suspended the connection for lack of data; whoever clears this resumes it.
        var connectionSuspended = false
        /// The daemon let go of the response; the connection must not be touched any more.
        var released = false
        var drainWaiter: CheckedContinuation<Void, Never>?
        var consumer: Task<Void, Never>?
    }

    private let connection: OpaquePointer
    private let socket: Int32
    private let registry: StreamRegistry
    private let state = Mutex(State())

    init(connection: OpaquePointer, registry: StreamRegistry) {
        self.connection = connection
        self.socket = cmhd_connection_fd(connection)
        self.registry = registry
        if !registry.insert(self) {
            state.withLock { $0.failed = true }  // the server is stopping: end at once, never suspend
        }
    }

    func start(_ stream: AsyncStream<[UInt8]>) {
        let task = Task { [self] in
            for await chunk in stream {
                if chunk.isEmpty { continue }
                guard offer(chunk) else { break }
                await waitUntilDrained()
            }
            producerFinished()
        }
        let keep = state.withLock { state -> Bool in
            guard !state.released else { return false }
            state.consumer = task
            return true
        }
        if !keep { task.cancel() }
    }

    /// Daemon thread: copies buffered bytes, or ends the response, or suspends until data arrives.
    func read(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        var drained: CheckedContinuation<Void, Never>?
        let result = state.withLock { state -> Int in
            if state.failed { return MHD_CONTENT_READER_END_WITH_ERROR }
            if state.pendingBytes > 0 {
                var written = 0
                while written < capacity, state.headIndex < state.chunks.count {
                    let count = state.chunks[state.headIndex].withUnsafeBytes { chunk in
                        let count = min(capacity - written, chunk.count - state.headOffset)
                        UnsafeMutableRawPointer(buffer + written)
                            .copyMemory(from: chunk.baseAddress! + state.headOffset, byteCount: count)
                        return count
                    }
                    written += count
                    state.headOffset += count
                    if state.headOffset == state.chunks[state.headIndex].count {
                        state.chunks[state.headIndex] = []
                        state.headIndex += 1
                        state.headOffset = 0
                    }
                }
                state.pendingBytes -= written
                if state.headIndex == state.chunks.count {
                    state.chunks.removeAll(keepingCapacity: true)
                    state.headIndex = 0
                } else if state.headIndex >= 64 {
                    state.chunks.removeFirst(state.headIndex)
                    state.headIndex = 0
                }
                if state.pendingBytes <= Self.lowWater {
                    drained = state.drainWaiter
                    state.drainWaiter = nil
                }
                return written
            }
            if state.finished { return MHD_CONTENT_READER_END_OF_STREAM }
            // Suspend while holding the lock so a producer cannot resume before this suspend.
            state.connectionSuspended = true
            MHD_suspend_connection(connection)
            return 0
        }
        drained?.resume()
        return result
    }

    /// Daemon thread: the response was destroyed.
    func released() {
        let (waiter, consumer) = state.withLock { state in
            state.released = true
            state.chunks = []
            state.pendingBytes = 0
            defer { state.drainWaiter = nil; state.consumer = nil }
            return (state.drainWaiter, state.consumer)
        }
        waiter?.resume()
        consumer?.cancel()
        registry.remove(self)
    }

    /// Ends the response with an error (client gone, or the server is stopping) and stops the producer.
    func fail() {
        var resume = false
        let (waiter, consumer) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Task<Void, Never>?) in
            guard !state.released else { return (nil, nil) }
            state.failed = true
            if state.connectionSuspended {
                state.connectionSuspended = false
                resume = true
            }
            defer { state.drainWaiter = nil }
            return (state.drainWaiter, state.consumer)
        }
        waiter?.resume()
        consumer?.cancel()
        if resume { MHD_resume_connection(connection) }
    }

    /// While a stream waits for its producer the daemon does not watch the socket, so a client that
    /// hung up would go unnoticed until the next chunk. Returns true when the peer is gone.
    func peerHasGone() -> Bool {
        state.withLock { state in
            guard state.connectionSuspended, !state.released, socket >= 0 else { return false }
            var descriptor = pollfd(fd: socket, events: Int16(pollReadHangUp), revents: 0)
            guard poll(&descriptor, 1, 0) == 1 else { return false }
            return Int32(descriptor.revents) & (pollReadHangUp | Int32(POLLHUP) | Int32(POLLERR)) != 0
        }
    }

    private func offer(_ chunk: [UInt8]) -> Bool {
        var resume = false
        let accepted = state.withLock { state -> Bool in
            guard !state.released, !state.failed else { return false }
            state.chunks.append(chunk)
            state.pendingBytes += chunk.count
            if state.connectionSuspended {
                state.connectionSuspended = false
                resume = true
            }
            return true
        }
        if resume { MHD_resume_connection(connection) }
        return accepted
    }

    private func waitUntilDrained() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let proceed = state.withLock { state -> Bool in
                if state.pendingBytes <= Self.highWater || state.released || state.failed { return true }
                state.drainWaiter = continuation
                return false
            }
            if proceed { continuation.resume() }
        }
    }

    private func producerFinished() {
        var resume = false
        state.withLock { state in
            state.finished = true
            if state.connectionSuspended, !state.released {
                state.connectionSuspended = false
                resume = true
            }
        }
        if resume { MHD_resume_connection(connection) }
    }
}

/// `POLLRDHUP` (peer closed its end) is a GNU extension the Glibc module does not export.
private let pollReadHangUp: Int32 = 0x2000

func streamPumpRead(_ context: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> Int {
    guard let context, let buffer else { return MHD_CONTENT_READER_END_WITH_ERROR }
    return Unmanaged<ResponseStreamPump>.fromOpaque(context).takeUnretainedValue().read(into: buffer, capacity: capacity)
}

func streamPumpRelease(_ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    Unmanaged<ResponseStreamPump>.fromOpaque(context).takeRetainedValue().released()
}

/// The streams a server is currently sending, for the hang-up sweep and for shutdown.
final class StreamRegistry: Sendable {
    private let state = Mutex<(stopping: Bool, pumps: [ObjectIdentifier: ResponseStreamPump])>((false, [:]))

    /// False once the server is stopping.
    func insert(_ pump: ResponseStreamPump) -> Bool {
        state.withLock { state in
            guard !state.stopping else { return false }
            state.pumps[ObjectIdentifier(pump)] = pump
            return true
        }
    }

    func remove(_ pump: ResponseStreamPump) {
        _ = state.withLock { $0.pumps.removeValue(forKey: ObjectIdentifier(pump)) }
    }

    var all: [ResponseStreamPump] {
        state.withLock { Array($0.pumps.values) }
    }

    /// Refuses new streams and returns the current ones.
    func stopAll() -> [ResponseStreamPump] {
        state.withLock { state in
            state.stopping = true
            return Array(state.pumps.values)
        }
    }
}
