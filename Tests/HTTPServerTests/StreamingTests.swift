import Foundation
import HTTPServer
import Synchronization
import Testing

@Suite struct StreamingTests {
    @Test func streamedResponseArrivesChunkedAndInOrder() async throws {
        let server = try startServer { router in
            router.add("GET", "/v1/audit/transactions.csv") { _ in
                let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
                Task {
                    for index in 0..<20 {
                        continuation.yield(Array("row \(index)\n".utf8))
                        try? await Task.sleep(for: .milliseconds(5))
                    }
                    continuation.finish()
                }
                return HTTPResponse(status: 200, headers: [("Content-Type", "text/csv")], body: .stream(stream))
            }
        }
        let port = server.port
        let response = try await onOwnThread { () -> RawResponse in
            let connection = try RawConnection(port: port)
            try connection.send("GET /v1/audit/transactions.csv HTTP/1.1\r\nHost: test\r\nX-Request-Id: csv-1\r\n\r\n")
            return try connection.readResponse()
        }
        #expect(response.status == 200)
        #expect(response.header("Transfer-Encoding")?.lowercased() == "chunked")
        #expect(response.header("Content-Type") == "text/csv")
        #expect(response.header("X-Request-Id") == "csv-1")
        #expect(response.text == (0..<20).map { "row \($0)\n" }.joined())
        // Rows went out as they were produced, each wire chunk holding whole rows.
        #expect(response.chunks.count > 1)
        #expect(response.chunks.allSatisfy { $0.last == UInt8(ascii: "\n") })
        await server.shutdown()
    }

    @Test func eventStreamStaysOpenWhileTheProducerIsSlow() async throws {
        let producer = Mutex<AsyncStream<[UInt8]>.Continuation?>(nil)
        let server = try startServer({ $0.connectionTimeoutSeconds = 1 }) { router in
            router.add("GET", "/v1/kiosk/sessions/{interviewId}/events") { _ in
                let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
                producer.withLock { $0 = continuation }
                return HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")],
                                    body: .stream(stream))
            }
        }
        let port = server.port
        let connection = try RawConnection(port: port, receiveTimeout: 15)
        let head = try await onOwnThread {
            try connection.send("GET /v1/kiosk/sessions/k1/events HTTP/1.1\r\nHost: test\r\n\r\n")
            return try connection.readHead()
        }
        #expect(head.status == 200)
        #expect(await eventually { producer.withLock { $0 != nil } })
        let yield = { (text: String) in _ = producer.withLock { $0?.yield(Array(text.utf8)) } }

        yield("event: selfieScanCompleted\ndata: {}\n\n")
        let first = try await onOwnThread { try connection.readChunk() }
        #expect(first.map { String(decoding: $0, as: UTF8.self) } == "event: selfieScanCompleted\ndata: {}\n\n")

        // Idle for longer than the connection timeout: an open stream is not an idle connection.
        try await Task.sleep(for: .milliseconds(2500))
        yield("event: idFrontCompleted\ndata: {\"n\":2}\n\n")
        let second = try await onOwnThread { try connection.readChunk() }
        #expect(second.map { String(decoding: $0, as: UTF8.self) } == "event: idFrontCompleted\ndata: {\"n\":2}\n\n")

        producer.withLock { $0?.finish() }
        let end = try await onOwnThread { try connection.readChunk() }
        #expect(end == nil)
        await server.shutdown()
    }

    @Test func clientHangingUpCancelsTheStreamConsumer() async throws {
        let terminated = Atomic<Bool>(false)
        let records = Mutex<[HTTPRequestRecord]>([])
        let server = try startServer(onRequest: { record in records.withLock { $0.append(record) } }) { router in
            router.add("GET", "/events") { _ in
                let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
                continuation.onTermination = { _ in terminated.store(true, ordering: .relaxed) }
                continuation.yield(Array("data: hello\n\n".utf8))
                // Then nothing more: only the hang-up can end this stream.
                return HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .stream(stream))
            }
        }
        let port = server.port
        let greeting = try await onOwnThread { () -> [UInt8]? in
            let connection = try RawConnection(port: port)
            try connection.send("GET /events HTTP/1.1\r\nHost: test\r\n\r\n")
            _ = try connection.readHead()
            return try connection.readChunk()
        }  // the connection is closed here
        #expect(greeting == Array("data: hello\n\n".utf8))
        #expect(await eventually(timeout: .seconds(15)) { terminated.load(ordering: .relaxed) })
        #expect(await eventually { records.withLock { $0.count } == 1 })
        await server.shutdown()
    }

    @Test func slowReaderHoldsBackTheProducer() async throws {
        let produced = Atomic<Int>(0)
        let chunk = [UInt8](repeating: 0x78, count: 64 << 10)
        let server = try startServer { router in
            router.add("GET", "/export") { _ in
                let stream = AsyncStream<[UInt8]> {
                    // An export far larger than memory if produced eagerly (16 GiB).
                    guard produced.load(ordering: .relaxed) < 16 << 30 else { return nil }
                    produced.add(chunk.count, ordering: .relaxed)
                    return chunk
                }
                return HTTPResponse(status: 200, headers: [("Content-Type", "text/csv")], body: .stream(stream))
            }
        }
        let port = server.port
        let connection = try RawConnection(port: port)
        let head = try await onOwnThread {
            try connection.send("GET /export HTTP/1.1\r\nHost: test\r\n\r\n")
            return try connection.readHead()
        }
        #expect(head.status == 200)
        // The client reads nothing: production must come to a halt once socket buffers and the
        // server's small queue are full (an eager producer would run on towards 16 GiB).
        var previous = -1
        var stalledAt = produced.load(ordering: .relaxed)
        let deadline = ContinuousClock.now + .seconds(30)
        while stalledAt != previous, ContinuousClock.now < deadline {
            previous = stalledAt
            try await Task.sleep(for: .milliseconds(500))
            stalledAt = produced.load(ordering: .relaxed)
        }
        #expect(stalledAt == previous, "production never stalled")
        #expect(stalledAt < 64 << 20, "produced \(stalledAt) bytes for a client that read none")
        // Reading resumes production.
        let more = try await onOwnThread { () -> Int in
            var total = 0
            while total < 32 << 20, let piece = try connection.readChunk() { total += piece.count }
            return total
        }
        #expect(more >= 32 << 20)
        #expect(produced.load(ordering: .relaxed) > stalledAt)
        await server.shutdown(gracePeriod: .milliseconds(200))
    }
}
