internal import CKafka
import Foundation
import Synchronization

/// One in-flight record: completed exactly once, by the delivery report, a synchronous produce failure,
/// or cancellation of the waiting task (whichever comes first). Either resumes a continuation
/// (`send`) or calls a handler (`enqueue`).
final class DeliveryCompletion: Sendable {
    typealias Outcome = Result<(partition: Int32, offset: Int64), KafkaError>

    private enum State {
        case idle
        case waiting(CheckedContinuation<Outcome, Never>)
        case handler(@Sendable (Outcome) -> Void)
        case done(Outcome?)  // nil once handed over
    }

    private let state: Mutex<State>

    init() {
        state = Mutex(.idle)
    }

    init(handler: @escaping @Sendable (Outcome) -> Void) {
        state = Mutex(.handler(handler))
    }

    /// Installs the continuation; returns false (and resumes it at once) if already completed.
    func install(_ continuation: CheckedContinuation<Outcome, Never>) -> Bool {
        let early: Outcome? = state.withLock { state in
            switch state {
            case .idle:
                state = .waiting(continuation)
                return nil
            case .done(let outcome):
                state = .done(nil)
                return outcome ?? .failure(.cancelled)
            case .waiting, .handler:
                preconditionFailure("continuation installed twice")
            }
        }
        if let early {
            continuation.resume(returning: early)
            return false
        }
        return true
    }

    func complete(_ outcome: Outcome) {
        enum Delivery {
            case none
            case resume(CheckedContinuation<Outcome, Never>)
            case call(@Sendable (Outcome) -> Void)
        }
        let delivery: Delivery = state.withLock { state in
            switch state {
            case .idle:
                state = .done(outcome)
                return .none
            case .waiting(let continuation):
                state = .done(nil)
                return .resume(continuation)
            case .handler(let handler):
                state = .done(nil)
                return .call(handler)
            case .done:
                return .none
            }
        }
        switch delivery {
        case .none: break
        case .resume(let continuation): continuation.resume(returning: outcome)
        case .call(let handler): handler(outcome)
        }
    }
}

/// Serves librdkafka's main queue (delivery reports, logs, errors) on a thread of its own.
final class RDKafkaPollThread: Sendable {
    private let stopping = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)

    init(client: RDKafkaClient, name: String) {
        let thread = Thread { [self] in
            while !stopping.load(ordering: .acquiring) {
                rd_kafka_poll(client.handle, 100)
            }
            rd_kafka_poll(client.handle, 0)
            exited.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Stops polling and waits (at most one poll interval) for the thread to finish.
    func stop(client: RDKafkaClient) {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        rd_kafka_yield(client.handle)
        exited.wait()
    }
}

/// An idempotent producer. `send` resumes when the broker acknowledged the record (or it failed).
///
/// An idempotent producer whose broker forgets it (a broker that restarts empty answers `UNKNOWN_PRODUCER_ID`)
/// raises a fatal error and refuses every later record. The next record then goes to a fresh librdkafka handle
/// instead; the old one fails what it still holds (each waiting `send` gets its error) and is closed aside.
public final class KafkaProducer: Sendable {
    /// Wrapper defaults; `KafkaConfiguration.properties` overrides them.
    public static let defaultProperties: [String: String] = [
        "enable.idempotence": "true",
        "linger.ms": "0",
        "message.max.bytes": "10485760",
    ]

    /// One librdkafka producer handle and the thread serving its delivery reports.
    final class Handle: Sendable {
        let client: RDKafkaClient
        let poller: RDKafkaPollThread

        init(configuration: KafkaConfiguration) throws(KafkaError) {
            client = try RDKafkaClient(
                kind: .producer,
                properties: configuration.librdkafkaProperties(for: .producer, defaults: KafkaProducer.defaultProperties),
                context: RDKafkaClientContext(configuration: configuration),
                configure: { rd_kafka_conf_set_dr_msg_cb($0, rdkafkaDeliveryReportCallback) })
            poller = RDKafkaPollThread(client: client, name: "kafka-producer-poll")
        }

        /// librdkafka raised a fatal error: this handle produces nothing more.
        var isFatal: Bool { rd_kafka_fatal_error(client.handle, nil, 0) != RD_KAFKA_RESP_ERR_NO_ERROR }

        /// Flushes (up to `timeoutMilliseconds`), fails whatever is still undelivered, stops the delivery-report thread.
        func close(timeoutMilliseconds: Int32) {
            if rd_kafka_flush(client.handle, timeoutMilliseconds) != RD_KAFKA_RESP_ERR_NO_ERROR {
                _ = rd_kafka_purge(client.handle, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT)
                // Serves the purge reports so every waiting send resumes with an error.
                _ = rd_kafka_flush(client.handle, 1_000)
            }
            poller.stop(client: client)
        }
    }

    private let configuration: KafkaConfiguration
    /// The handle records go to, and whether `close()` began. Produce calls happen under this lock, so none
    /// slips in after close has flushed and stopped serving delivery reports.
    private let state: Mutex<(handle: Handle, closed: Bool)>
    /// Applied to every record before it is produced (e.g. to sign it).
    private let interceptor: (@Sendable (KafkaRecord) -> KafkaRecord)?

    public init(configuration: KafkaConfiguration, interceptor: (@Sendable (KafkaRecord) -> KafkaRecord)? = nil) throws(KafkaError) {
        self.configuration = configuration
        self.interceptor = interceptor
        state = Mutex((try Handle(configuration: configuration), false))
    }

    deinit {
        close()
    }

    /// The current handle's client (admin calls that need a producer's connection).
    var client: RDKafkaClient { state.withLock { $0.handle.client } }

    /// Produces `record` and waits for its delivery report. Cancelling the waiting task stops the wait
    /// (throwing `KafkaError.cancelled`); the record may still be delivered.
    public func send(_ record: KafkaRecord) async throws(KafkaError) -> (partition: Int32, offset: Int64) {
        if Task.isCancelled { throw KafkaError.cancelled }
        let completion = DeliveryCompletion()
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard completion.install(continuation) else { return }
                let opaque = Unmanaged.passRetained(completion).toOpaque()
                if let failure = produce(record, opaque: opaque) {
                    // librdkafka did not take the message, so no delivery report will release it.
                    Unmanaged<DeliveryCompletion>.fromOpaque(opaque).release()
                    completion.complete(.failure(failure))
                }
            }
        } onCancel: {
            completion.complete(.failure(.cancelled))
        }
        return try outcome.get()
    }

    /// Produces `record` without waiting: `onDelivery` runs on the delivery-report thread once the broker
    /// acknowledged it or it failed. Throws (without calling `onDelivery`) when librdkafka refuses it at once.
    func enqueue(
        _ record: KafkaRecord, onDelivery: @escaping @Sendable (DeliveryCompletion.Outcome) -> Void
    ) throws(KafkaError) {
        let opaque = Unmanaged.passRetained(DeliveryCompletion(handler: onDelivery)).toOpaque()
        if let failure = produce(record, opaque: opaque) {
            Unmanaged<DeliveryCompletion>.fromOpaque(opaque).release()
            throw failure
        }
    }

    /// Hands `record` to the current handle — a fresh one if the current one raised a fatal error.
    private func produce(_ record: KafkaRecord, opaque: UnsafeMutableRawPointer) -> KafkaError? {
        let intercepted = interceptor?(record) ?? record
        return state.withLock { state -> KafkaError? in
            if state.closed { return KafkaError.closed }
            if state.handle.isFatal, let fresh = try? Handle(configuration: configuration) {
                let old = state.handle
                state.handle = fresh
                old.client.report(level: 4, facility: "FATAL", message: "the producer raised a fatal error; records go to a new producer")
                Thread.detachNewThread { old.close(timeoutMilliseconds: 0) }
            }
            return Self.produce(intercepted, client: state.handle.client, opaque: opaque)
        }
    }

    /// Waits for every outstanding record to be delivered or to fail; false on timeout.
    /// Blocks the calling thread.
    public func flush(timeoutMilliseconds: Int) -> Bool {
        rd_kafka_flush(client.handle, Int32(clamping: timeoutMilliseconds)) == RD_KAFKA_RESP_ERR_NO_ERROR
    }

    /// Flushes (up to 10 s), fails whatever is still undelivered, stops the delivery-report thread.
    /// The C handle is destroyed when the last reference goes away. Idempotent; blocks the caller.
    public func close() {
        let handle = state.withLock { state -> Handle? in
            defer { state.closed = true }
            return state.closed ? nil : state.handle
        }
        handle?.close(timeoutMilliseconds: 10_000)
    }

    /// Calls `rd_kafka_produceva` with every buffer lent only for the duration of the call
    /// (RD_KAFKA_MSG_F_COPY makes librdkafka copy key and value). Returns the synchronous failure, if any.
    private static func produce(
        _ record: KafkaRecord, client: RDKafkaClient, opaque: UnsafeMutableRawPointer
    ) -> KafkaError? {
        var headers: OpaquePointer?
        if !record.headers.isEmpty {
            let list = rd_kafka_headers_new(record.headers.count)
            for header in record.headers {
                header.value.withUnsafeBytes { bytes in
                    _ = rd_kafka_header_add(list, header.key, -1, bytes.baseAddress, bytes.count)
                }
            }
            headers = list
        }
        let error: OpaquePointer? = record.topic.withCString { topic in
            record.value.withUnsafeBytes { value in
                withOptionalBytes(record.key) { key in
                    var arguments: [rd_kafka_vu_t] = [
                        rd_kafka_vu_t(vtype: RD_KAFKA_VTYPE_TOPIC, u: .init(cstr: topic)),
                        rd_kafka_vu_t(
                            vtype: RD_KAFKA_VTYPE_PARTITION, u: .init(i32: record.partition ?? RD_KAFKA_PARTITION_UA)),
                        rd_kafka_vu_t(
                            vtype: RD_KAFKA_VTYPE_VALUE,
                            u: .init(mem: .init(ptr: UnsafeMutableRawPointer(mutating: value.baseAddress), size: value.count))),
                        rd_kafka_vu_t(vtype: RD_KAFKA_VTYPE_MSGFLAGS, u: .init(i: RD_KAFKA_MSG_F_COPY)),
                        rd_kafka_vu_t(vtype: RD_KAFKA_VTYPE_OPAQUE, u: .init(ptr: opaque)),
                    ]
                    if let key {
                        arguments.append(
                            rd_kafka_vu_t(
                                vtype: RD_KAFKA_VTYPE_KEY,
                                u: .init(mem: .init(ptr: UnsafeMutableRawPointer(mutating: key.baseAddress), size: key.count))))
                    }
                    if let headers {
                        arguments.append(rd_kafka_vu_t(vtype: RD_KAFKA_VTYPE_HEADERS, u: .init(headers: headers)))
                    }
                    return arguments.withUnsafeBufferPointer {
                        rd_kafka_produceva(client.handle, $0.baseAddress, $0.count)
                    }
                }
            }
        }
        guard let error else { return nil }
        // On failure the header list was not taken over.
        if let headers { rd_kafka_headers_destroy(headers) }
        return KafkaError(consuming: error)
    }
}

private func withOptionalBytes<T>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> T) -> T {
    guard let bytes else { return body(nil) }
    return bytes.withUnsafeBytes { body($0) }
}
