import Dispatch
import Synchronization

/// One connection to the server. Its blocking libpq calls run on a serial queue of its own, never on
/// the caller's thread; statements on one connection run one after another.
///
/// If the server closed the connection while it was idle (a restart, say), the next statement
/// reconnects first and is sent once on the new connection. Inside a transaction a lost connection
/// is reported instead, since the transaction is gone. Session settings made with `SET` do not
/// survive such a reconnect; prefer `SET LOCAL` inside a transaction.
public final class PostgresConnection: Sendable {
    let session: LibpqSession
    private let queue: DispatchQueue
    /// Statements (or pipelines) sent, counted where the pool that opened the connection reads them.
    private let roundTrips: RoundTrips

    init(configuration: PostgresConfiguration, roundTrips: RoundTrips = RoundTrips()) {
        session = LibpqSession(configuration: configuration)
        queue = DispatchQueue(label: "facegate.postgres.connection")
        self.roundTrips = roundTrips
    }

    /// Opens a connection outside any pool.
    public static func connect(configuration: PostgresConfiguration) async throws(PostgresError) -> PostgresConnection {
        let connection = PostgresConnection(configuration: configuration)
        if let error = await connection.onQueue({ $0.connect() }) { throw error }
        return connection
    }

    public func close() async {
        await onQueue { $0.disconnect() }
    }

    /// Runs one parameterised statement and returns all its rows. Cancelling the task cancels the statement.
    public func query(
        _ query: PostgresQuery, file: String = #fileID, line: Int = #line
    ) async throws(PostgresError) -> PostgresRows {
        try await cancellable(file: file, line: line) { $0.execute(query, ticket: $1) }
    }

    /// Runs parameterised statements in one round trip: after `begin` with `settings` SET LOCAL when given, followed by
    /// COMMIT with `commit`.
    func pipeline(
        begin: PostgresQuery?, settings: [(name: String, value: String)], _ queries: [PostgresQuery], commit: Bool, file: String, line: Int
    ) async throws(PostgresError) -> [PostgresRows] {
        try await cancellable(file: file, line: line) {
            $0.executePipeline(begin: begin?.sql, settings: settings, queries, commit: commit, ticket: $1)
        }
    }

    /// Runs `work` on the connection's queue under a fresh ticket; cancelling the task cancels the statement on it.
    private func cancellable<Rows: Sendable>(
        file: String, line: Int, _ work: @escaping @Sendable (LibpqSession, UInt64) -> Result<Rows, PostgresError>
    ) async throws(PostgresError) -> Rows {
        let session = self.session
        let ticket = session.newTicket()
        let started = ContinuousClock.now
        let result = await withTaskCancellationHandler {
            await onQueue { work($0, ticket) }
        } onCancel: {
            session.requestCancel(ticket)
        }
        roundTrips.add(ContinuousClock.now - started)
        do {
            return try result.get()
        } catch {
            throw error.located(file: file, line: line)
        }
    }

    /// Runs one parameterised statement and hands its rows to `body` as they arrive, a batch at a
    /// time, without holding the whole result in memory. The next batch is fetched while `body`
    /// works on the current one. If `body` throws, the statement is cancelled and the error rethrown.
    public func forEachRow(
        _ query: PostgresQuery, file: String = #fileID, line: Int = #line, _ body: (PostgresRow) throws -> Void
    ) async throws {
        let session = self.session
        let ticket = session.newTicket()
        do {
            try await withTaskCancellationHandler {
                try await stream(query, ticket: ticket, body)
            } onCancel: {
                session.requestCancel(ticket)
            }
        } catch let error as PostgresError {
            throw error.located(file: file, line: line)
        }
    }

    static let streamBatchSize = 1_000

    private func stream(_ query: PostgresQuery, ticket: UInt64, _ body: (PostgresRow) throws -> Void) async throws {
        // One round trip, timed to the first batch (the rest is the caller's pace), counted whether or not it fails.
        let started = ContinuousClock.now
        let first = await onQueue { session -> Result<StreamBatch, PostgresError> in
            session.startStream(query, ticket: ticket).flatMap { session.nextBatch(limit: Self.streamBatchSize) }
        }
        roundTrips.add(ContinuousClock.now - started)
        var batch = try first.get()
        while !batch.isLast {
            async let next = onQueue { $0.nextBatch(limit: Self.streamBatchSize) }
            do {
                for row in batch.rows { try body(row) }
            } catch {
                if case .success(let pending) = await next, !pending.isLast {
                    await onQueue { $0.abandonStream() }
                }
                throw error
            }
            batch = try await next.get()
        }
        for row in batch.rows { try body(row) }
    }

    /// Runs trusted SQL text that may hold several statements (simple query protocol, no parameters).
    func executeScript(_ sql: String) async throws(PostgresError) {
        let started = ContinuousClock.now
        defer { roundTrips.add(ContinuousClock.now - started) }
        try await onQueue { $0.executeScript(sql) }.get()
    }

    /// Rolls back a transaction the borrower left open; costs nothing when there is none.
    func prepareForReuse() async {
        guard session.publishedState.load(ordering: .relaxed) != SessionState.idle.rawValue else { return }
        await onQueue { $0.prepareForReuse() }
    }

    func onQueue<T: Sendable>(_ work: @escaping @Sendable (LibpqSession) -> T) async -> T {
        let session = self.session
        return await withUnsafeContinuation { continuation in
            queue.async { continuation.resume(returning: work(session)) }
        }
    }
}

/// A count of round trips to the server and of the time spent in them, shared by a pool's connections.
final class RoundTrips: Sendable {
    private let count = Atomic<Int>(0)
    private let nanoseconds = Atomic<Int>(0)
    func add(_ duration: Duration) {
        count.add(1, ordering: .relaxed)
        nanoseconds.add(Int(duration.components.seconds) * 1_000_000_000 + Int(duration.components.attoseconds / 1_000_000_000),
                        ordering: .relaxed)
    }
    var total: Int { count.load(ordering: .relaxed) }
    var seconds: Double { Double(nanoseconds.load(ordering: .relaxed)) / 1e9 }
}
