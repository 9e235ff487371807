internal import CPostgres
import Foundation
import Synchronization

/// What the session knew about the server-side transaction after its last command. It decides
/// whether a connection found dead may be replaced without telling the caller.
enum SessionState: UInt8 {
    /// No transaction open: a dead connection is replaced before the next statement is sent.
    case idle
    /// Inside BEGIN … COMMIT: losing the connection lost the transaction, so every further statement fails.
    case inTransaction
    /// The connection died inside a transaction; statements fail until the lease ends.
    case lost
}

/// One batch of a streamed result.
struct StreamBatch: Sendable {
    var rows: [PostgresRow]
    var isLast: Bool
}

/// Owns one libpq connection (`PGconn`) and its cancel handle.
///
/// Every method except `requestCancel` blocks and runs only on the owning connection's serial queue;
/// that queue is the only thread touching `connection`, which is why `@unchecked Sendable` is safe.
/// The cancel handle is shared with other threads under `cancelSlot`'s lock.
final class LibpqSession: @unchecked Sendable {
    private struct CancelSlot {
        /// The `PGcancel` handle as an address (0 for none), so the lock can hold it across threads.
        var handle: UInt = 0
        /// Ticket of the statement now on the wire, 0 when none.
        var running: UInt64 = 0
        /// Ticket whose task was cancelled before its statement was sent.
        var cancelledBeforeStart: UInt64 = 0
    }

    private let configuration: PostgresConfiguration
    private var connection: OpaquePointer?
    private var streamColumns: ResultColumns?
    /// The server announced it is closing this connection (a FATAL notice while idle).
    private var serverIsClosing = false
    private(set) var state: SessionState = .idle {
        didSet { publishedState.store(state.rawValue, ordering: .relaxed) }
    }
    /// `state`, readable from any thread so a lease can end without a hop when nothing needs cleaning.
    let publishedState = Atomic<UInt8>(SessionState.idle.rawValue)
    private let cancelSlot = Mutex(CancelSlot())
    private let tickets = Atomic<UInt64>(0)

    init(configuration: PostgresConfiguration) {
        self.configuration = configuration
    }

    deinit {
        disconnect()
    }

    // MARK: Connecting

    func connect() -> PostgresError? {
        disconnect()
        let parameters = configuration.connectionParameters
        let keywords = parameters.map { UnsafePointer(strdup($0.0)) } + [nil]
        let values = parameters.map { UnsafePointer(strdup($0.1)) } + [nil]
        defer {
            for pointer in keywords + values { free(UnsafeMutablePointer(mutating: pointer)) }
        }
        let candidate: OpaquePointer? = keywords.withUnsafeBufferPointer { keywordBuffer in
            values.withUnsafeBufferPointer { valueBuffer in
                PQconnectdbParams(keywordBuffer.baseAddress, valueBuffer.baseAddress, 0)
            }
        }
        guard let candidate else {
            return PostgresError(kind: .connection, message: "libpq could not allocate a connection")
        }
        guard PQstatus(candidate) == CONNECTION_OK else {
            let message = Self.clean(String(cString: PQerrorMessage(candidate)))
            PQfinish(candidate)
            return PostgresError(kind: .connection, message: message.isEmpty ? "connection failed" : message)
        }
        // Notices are not errors and stay off stderr, except a FATAL one: a server that shuts down
        // sends it to idle clients just before closing, and libpq hands it here as a notice.
        // The receiver runs inside libpq calls on this session's queue and never outlives the session.
        _ = PQsetNoticeReceiver(
            candidate,
            { context, result in
                guard let context, let result, let severity = PQresultErrorField(result, Int32(UInt8(ascii: "V"))),
                    String(cString: severity) == "FATAL"
                else { return }
                Unmanaged<LibpqSession>.fromOpaque(context).takeUnretainedValue().serverIsClosing = true
            }, Unmanaged.passUnretained(self).toOpaque())
        serverIsClosing = false
        connection = candidate
        let cancel = UInt(bitPattern: PQgetCancel(candidate))
        cancelSlot.withLock { $0.handle = cancel }
        state = .idle
        return nil
    }

    /// The connection's socket, -1 when there is none.
    var socket: Int32 { connection.map { PQsocket($0) } ?? -1 }

    func disconnect() {
        cancelSlot.withLock { slot in
            if let handle = OpaquePointer(bitPattern: slot.handle) { PQfreeCancel(handle) }
            slot.handle = 0
        }
        if let connection { PQfinish(connection) }
        connection = nil
        streamColumns = nil
    }

    /// Makes sure a live connection is there before a statement is sent. A connection the server
    /// closed while idle (restart, idle timeout, admin kill) is replaced here, so the statement is
    /// sent exactly once on the new one; inside a transaction the loss is reported instead.
    private func prepareToSend() -> PostgresError? {
        guard let connection else {
            if state != .idle { return lostInTransaction() }
            return connect()
        }
        // libpq's socket is non-blocking: this reads whatever the server sent while we were idle and
        // parses it, so the FATAL message or EOF of a server shutdown is seen before anything is sent.
        if PQstatus(connection) == CONNECTION_OK && PQconsumeInput(connection) == 1 {
            _ = PQisBusy(connection)
            if PQstatus(connection) == CONNECTION_OK && !serverIsClosing { return nil }
        }
        if state != .idle {
            disconnect()
            return lostInTransaction()
        }
        return connect()
    }

    private func lostInTransaction() -> PostgresError {
        state = .lost
        return PostgresError(
            kind: .connection, message: "the connection to the server was lost inside a transaction")
    }

    // MARK: Statements

    func newTicket() -> UInt64 {
        tickets.add(1, ordering: .relaxed).newValue
    }

    /// Runs one parameterised statement and returns its complete result.
    func execute(_ query: PostgresQuery, ticket: UInt64) -> Result<PostgresRows, PostgresError> {
        if let error = send(query, ticket: ticket) { return .failure(error) }
        return collect(query).map(PostgresRows.init)
    }

    /// Runs SQL text that may hold several statements, without parameters (simple query protocol).
    /// Only for trusted scripts such as migrations.
    func executeScript(_ sql: String) -> Result<Void, PostgresError> {
        if let error = prepareToSend() { return .failure(error) }
        guard let connection, PQsendQuery(connection, sql) == 1 else { return .failure(connectionError()) }
        return collect(nil).map { _ in () }
    }

    /// Runs parameterised statements as one libpq pipeline — `begin` (when given) and each setting with
    /// `set_config(name, value, true)`, the statements, then COMMIT (with `commit`) — in one round trip instead of one per
    /// command. When a statement fails, the server skips the rest and the transaction is left failed, to be rolled back
    /// when the lease ends (`prepareForReuse`).
    func executePipeline(
        begin: String?, settings: [(name: String, value: String)], _ queries: [PostgresQuery], commit: Bool, ticket: UInt64
    ) -> Result<[PostgresRows], PostgresError> {
        guard let first = queries.first else { return .success([]) }
        if let error = queries.dropFirst().lazy.compactMap(unsendable).first { return .failure(error) }
        let begins = begin == nil ? 0 : 1 + settings.count
        if var error = send(first, ticket: ticket, { sendPipeline(begin: begin, settings: settings, queries, commit: commit) }) {
            error.wasNotSent = true
            return .failure(error)
        }
        defer { cancelSlot.withLock { $0.running = 0 } }
        guard let connection else { return .failure(connectionError()) }
        // One result (or an error, or PGRES_PIPELINE_ABORTED after an earlier error) per command, each ended by NULL,
        // then the pipeline's sync.
        let statements = begins..<(begins + queries.count)
        var rows: [ResultHandle?] = Array(repeating: nil, count: queries.count)
        var failure: PostgresError?
        for command in 0..<(statements.upperBound + (commit ? 1 : 0)) {
            while let result = PQgetResult(connection) {
                let status = PQresultStatus(result)
                let statement = statements.contains(command) ? command - statements.lowerBound : nil
                if status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE || status == PGRES_NONFATAL_ERROR {
                    if failure == nil { failure = error(from: result, query: statement.map { queries[$0] }) }
                    PQclear(result)
                } else if let statement, status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
                    rows[statement] = ResultHandle(result)
                } else {
                    PQclear(result)
                }
            }
        }
        while let sync = PQgetResult(connection) { PQclear(sync) }
        if PQpipelineStatus(connection) != PQ_PIPELINE_OFF && PQexitPipelineMode(connection) != 1 { disconnect() }
        updateState()
        if let failure { return .failure(markingBrokenConnection(failure)) }
        var answers: [PostgresRows] = []
        for handle in rows {
            guard let handle else { return .failure(connectionError()) }
            answers.append(PostgresRows(handle))
        }
        return .success(answers)
    }

    private func sendPipeline(begin: String?, settings: [(name: String, value: String)], _ queries: [PostgresQuery], commit: Bool) -> Bool {
        guard let connection, PQenterPipelineMode(connection) == 1 else { return false }
        func command(_ sql: String, _ parameters: [String] = []) -> Bool {
            var pointers: [UnsafeMutablePointer<CChar>?] = parameters.map { strdup($0) }
            defer { pointers.forEach { free($0) } }
            return pointers.withUnsafeMutableBufferPointer { buffer in
                buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { values in
                    PQsendQueryParams(connection, sql, Int32(parameters.count), nil, values.baseAddress, nil, nil, 1) == 1
                }
            }
        }
        let begun = begin.map { command($0) && settings.allSatisfy { command("SELECT set_config($1, $2, true)", [$0.name, $0.value]) } } ?? true
        let sent = begun && queries.allSatisfy(sendParameterised) && (!commit || command("COMMIT")) && PQpipelineSync(connection) == 1
        // A pipeline half sent cannot be taken back: the connection goes, and is replaced before the next statement.
        if !sent && PQstatus(connection) == CONNECTION_OK { disconnect() }
        return sent
    }

    /// Sends a statement; when the send itself fails on a connection the server already closed, the
    /// statement cannot have run, so it is sent once more on a fresh connection.
    private func send(_ query: PostgresQuery, ticket: UInt64) -> PostgresError? {
        send(query, ticket: ticket) { sendParameterised(query) }
    }

    /// Why the protocol cannot carry `query`, if it cannot.
    private func unsendable(_ query: PostgresQuery) -> PostgresError? {
        if query.binds.count > Int(UInt16.max) {
            return PostgresError(kind: .invalidQuery, message: "a statement takes at most 65535 parameters, got \(query.binds.count)")
        }
        if query.binds.hasOversizedValue {
            return PostgresError(kind: .invalidQuery, message: "a parameter value is larger than the protocol allows (2 GB)")
        }
        return nil
    }

    private func send(_ query: PostgresQuery, ticket: UInt64, _ transmit: () -> Bool) -> PostgresError? {
        if let error = unsendable(query) { return error }
        let cancelled = cancelSlot.withLock { slot in
            if slot.cancelledBeforeStart == ticket { return true }
            slot.running = ticket
            return false
        }
        if cancelled {
            return PostgresError(kind: .cancelled, message: "the task was cancelled before the statement was sent")
        }
        if let error = prepareToSend() { return finished(error) }
        if transmit() { return nil }
        if connection.map({ PQstatus($0) == CONNECTION_BAD }) ?? true, state == .idle {
            if let error = connect() { return finished(error) }
            if transmit() { return nil }
        }
        return finished(connectionError())
    }

    private func finished(_ error: PostgresError) -> PostgresError {
        cancelSlot.withLock { $0.running = 0 }
        return error
    }

    private func sendParameterised(_ query: PostgresQuery) -> Bool {
        guard let connection else { return false }
        let binds = query.binds
        let formats = [Int32](repeating: 1, count: binds.count)
        // Empty values still need a non-null pointer, or libpq would send NULL; a one-byte buffer gives them one.
        let bytes = binds.bytes.isEmpty ? [0] : binds.bytes
        return bytes.withUnsafeBufferPointer { storage in
            // Pointers into `storage` live only for this call; libpq copies the values into its send buffer.
            let values: [UnsafePointer<CChar>?] = zip(binds.offsets, binds.lengths).map { offset, length in
                guard length >= 0 else { return nil }
                return UnsafeRawPointer(storage.baseAddress! + offset).assumingMemoryBound(to: CChar.self)
            }
            return PQsendQueryParams(
                connection, query.sql, Int32(binds.count), binds.types, values, binds.lengths, formats,
                1) == 1
        }
    }

    /// Reads every result of the statement in flight; returns the last, or the first error.
    private func collect(_ query: PostgresQuery?) -> Result<ResultHandle, PostgresError> {
        defer { cancelSlot.withLock { $0.running = 0 } }
        guard let connection else { return .failure(connectionError()) }
        var last: ResultHandle?
        var failure: PostgresError?
        while let result = PQgetResult(connection) {
            let status = PQresultStatus(result)
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
                PQclear(result)
                disconnect()
                failure = failure ?? PostgresError(kind: .invalidQuery, message: "COPY is not supported by this client")
                break
            }
            if status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE || status == PGRES_NONFATAL_ERROR {
                if failure == nil { failure = error(from: result, query: query) }
                PQclear(result)
            } else {
                last = ResultHandle(result)
            }
        }
        updateState()
        if let failure { return .failure(markingBrokenConnection(failure)) }
        guard let last else { return .failure(connectionError()) }
        return .success(last)
    }

    private func updateState() {
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            if state == .inTransaction { state = .lost }
            return
        }
        switch PQtransactionStatus(connection) {
        case PQTRANS_IDLE: state = .idle
        case PQTRANS_INTRANS, PQTRANS_INERROR, PQTRANS_ACTIVE: state = .inTransaction
        default: state = state == .inTransaction ? .lost : .idle
        }
    }

    // MARK: Streaming

    /// Sends a statement whose rows will be fetched one batch at a time (libpq single-row mode).
    func startStream(_ query: PostgresQuery, ticket: UInt64) -> Result<Void, PostgresError> {
        if let error = send(query, ticket: ticket) { return .failure(error) }
        streamColumns = nil
        if let connection { _ = PQsetSingleRowMode(connection) }
        return .success(())
    }

    /// Up to `limit` rows; `isLast` once the statement finished. On error the stream is already drained.
    func nextBatch(limit: Int) -> Result<StreamBatch, PostgresError> {
        guard let connection else {
            finishStream()
            return .failure(connectionError())
        }
        var rows: [PostgresRow] = []
        rows.reserveCapacity(limit)
        while rows.count < limit {
            guard let result = PQgetResult(connection) else {
                finishStream()
                return .success(StreamBatch(rows: rows, isLast: true))
            }
            let status = PQresultStatus(result)
            if status == PGRES_SINGLE_TUPLE {
                let columns = streamColumns ?? ResultColumns(result)
                streamColumns = columns
                rows.append(PostgresRow(result: ResultHandle(result), columns: columns, rowIndex: 0))
            } else if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK || status == PGRES_EMPTY_QUERY {
                PQclear(result)
            } else {
                let isCopy = status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH
                let failure =
                    isCopy
                    ? PostgresError(kind: .invalidQuery, message: "COPY is not supported by this client")
                    : error(from: result, query: nil)
                PQclear(result)
                if isCopy { disconnect() } else { drain() }
                finishStream()
                return .failure(markingBrokenConnection(failure))
            }
        }
        return .success(StreamBatch(rows: rows, isLast: false))
    }

    /// Stops a stream whose consumer gave up: asks the server to cancel, then discards what is still coming.
    func abandonStream() {
        let cancelled = cancelSlot.withLock { slot -> Bool in
            guard let handle = OpaquePointer(bitPattern: slot.handle) else { return false }
            var buffer = [CChar](repeating: 0, count: 256)
            return PQcancel(handle, &buffer, Int32(buffer.count)) == 1
        }
        if !cancelled { disconnect() }
        drain()
        finishStream()
    }

    private func drain() {
        guard let connection else { return }
        while let result = PQgetResult(connection) {
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
                disconnect()
                return
            }
        }
    }

    private func finishStream() {
        streamColumns = nil
        cancelSlot.withLock { $0.running = 0 }
        updateState()
    }

    // MARK: Leases and cancellation

    /// Leaves the session fit for the next borrower: an open transaction is rolled back, a lost one forgotten.
    func prepareForReuse() {
        switch state {
        case .idle: return
        case .lost: state = .idle
        case .inTransaction:
            guard let connection else {
                state = .idle
                return
            }
            let result = PQexec(connection, "ROLLBACK")
            let ok = result.map { PQresultStatus($0) == PGRES_COMMAND_OK } ?? false
            PQclear(result)
            if !ok { disconnect() }
            state = .idle
        }
    }

    /// Called from any thread: cancels the statement with this ticket if it is running, or stops it
    /// from being sent if it has not started yet.
    func requestCancel(_ ticket: UInt64) {
        // PQcancel opens a connection of its own; keep that off the cancelling thread.
        DispatchQueue.global().async { [self] in
            cancelSlot.withLock { slot in
                // Not running: either finished (tickets are never reused, so marking it is harmless)
                // or still queued behind another statement, which must then not be sent.
                guard slot.running == ticket else {
                    slot.cancelledBeforeStart = ticket
                    return
                }
                guard let handle = OpaquePointer(bitPattern: slot.handle) else { return }
                var buffer = [CChar](repeating: 0, count: 256)
                _ = PQcancel(handle, &buffer, Int32(buffer.count))
            }
        }
    }

    // MARK: Notifications

    /// Waits up to `timeoutMilliseconds` for the server to send something; answers the notifications (LISTEN) that came,
    /// possibly none, or the connection's failure.
    func awaitNotifications(timeoutMilliseconds: Int32) -> Result<[PostgresNotification], PostgresError> {
        guard let connection, PQstatus(connection) == CONNECTION_OK else { return .failure(connectionError()) }
        var descriptor = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, timeoutMilliseconds) > 0, PQconsumeInput(connection) != 1 || serverIsClosing {
            return .failure(markingBrokenConnection(connectionError()))
        }
        var received: [PostgresNotification] = []
        while let notification = PQnotifies(connection) {
            received.append(PostgresNotification(channel: String(cString: notification.pointee.relname),
                                                 payload: String(cString: notification.pointee.extra)))
            PQfreemem(notification)
        }
        return .success(received)
    }

    // MARK: Errors

    /// A statement error after which the connection is gone is (also) a connection failure.
    private func markingBrokenConnection(_ error: PostgresError) -> PostgresError {
        guard connection.map({ PQstatus($0) == CONNECTION_BAD }) ?? true else { return error }
        var error = error
        error.isConnectionFailure = true
        error.isRetriable = true
        return error
    }

    private func connectionError() -> PostgresError {
        let message = connection.map { Self.clean(String(cString: PQerrorMessage($0))) } ?? ""
        return PostgresError(kind: .connection, message: message.isEmpty ? "the connection to the server was lost" : message)
    }

    private func error(from result: OpaquePointer, query: PostgresQuery?) -> PostgresError {
        func field(_ code: Character) -> String? {
            guard let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        let sqlState = field("C")
        let message = field("M") ?? Self.clean(String(cString: PQresultErrorMessage(result)))
        var error = PostgresError(
            kind: sqlState == nil ? .connection : .server, message: message.isEmpty ? "statement failed" : message,
            sqlState: sqlState,
            isConnectionFailure: sqlState == nil || sqlState!.hasPrefix("08") || sqlState!.hasPrefix("57P"))
        error.severity = field("V") ?? field("S")
        error.detail = field("D")
        error.hint = field("H")
        error.schemaName = field("s")
        error.tableName = field("t")
        error.columnName = field("c")
        error.constraintName = field("n")
        if let file = field("F") {
            error.serverLocation = "\(file):\(field("L") ?? "?") \(field("R") ?? "")"
        }
        error.query = query?.sql
        return error
    }

    /// libpq messages end in a newline and indent continuation lines with tabs.
    static func clean(_ message: String) -> String {
        message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: " ")
    }
}
