import Foundation
import HTTPServer
import Synchronization
import Testing

@Suite struct ConcurrencyTests {
    @Test func thousandSlowRequestsAreInFlightAtOnceOnAFewThreads() async throws {
        let count = 1000
        let inFlight = Atomic<Int>(0)
        let peakInFlight = Atomic<Int>(0)
        let allArrived = Gate()
        let server = try startServer({ configuration in
            configuration.perIPConnectionLimit = 4096
            configuration.maxConnections = 4096
            // The test is about requests in flight, not idle timeouts. On a loaded machine (make test runs six jobs on
            // two cores) 275 of the thousand were once closed unanswered after their request went out, which is what the
            // default 30 s idle timeout does to connections the server has not got to.
            configuration.connectionTimeoutSeconds = 300
        }) { router in
            router.add("GET", "/slow") { _ in
                let now = inFlight.add(1, ordering: .relaxed).newValue
                peakInFlight.max(now, ordering: .relaxed)
                if now == count { allArrived.open() }
                await allArrived.wait()
                try await Task.sleep(for: .milliseconds(200))
                inFlight.subtract(1, ordering: .relaxed)
                return .text("done")
            }
        }
        let threadsBefore = processThreadCount()
        let port = server.port
        async let statuses = onOwnThread { try concurrentGets(port: port, path: "/slow", count: count) }
        // Every handler waits until all of them are running; if the server spent a thread per
        // request, or serialised handlers, this point would be reached with far more threads or never.
        _ = await eventually(timeout: .seconds(90)) { peakInFlight.load(ordering: .relaxed) == count }
        let threadsDuring = processThreadCount()
        allArrived.open()
        let results = try await statuses
        let peak = peakInFlight.load(ordering: .relaxed)

        #expect(peak == count)
        #expect(results.filter { $0 == 200 }.count == count)
        #expect(threadsBefore > 0)
        // Other suites run in parallel in this process and start threads of their own, hence the slack;
        // a thread per request would add a thousand.
        #expect(threadsDuring - threadsBefore < 150, "threads before \(threadsBefore), with \(count) in flight \(threadsDuring)")
        print("threads before \(threadsBefore), with \(peak) requests in flight \(threadsDuring)")
        await server.shutdown()
    }

    @Test func clientThatStallsMidHeadersIsDisconnectedAfterTheTimeout() async throws {
        let server = try startServer({ $0.connectionTimeoutSeconds = 2 }) { router in
            router.add("GET", "/x") { _ in .noContent }
        }
        let port = server.port
        let (closed, received, elapsed) = try await onOwnThread { () -> (Bool, [UInt8], Duration) in
            let connection = try RawConnection(port: port, receiveTimeout: 20)
            let started = ContinuousClock.now
            try connection.send("GET /x HTTP/1.1\r\nHost: te")
            let (closed, received) = try connection.waitForClose()
            return (closed, received, ContinuousClock.now - started)
        }
        #expect(closed)
        #expect(received.isEmpty)
        #expect(elapsed >= .seconds(1), "closed after \(elapsed), before the timeout could have run out")
        await server.shutdown()
    }

    @Test func gracefulShutdownWaitsForTheRequestInFlight() async throws {
        let entered = Gate()
        let release = Gate()
        let server = try startServer { router in
            router.add("POST", "/v1/face-login") { _ in
                entered.open()
                await release.wait()
                return .text("finished")
            }
        }
        let port = server.port
        async let response = onOwnThread { () -> RawResponse in
            let connection = try RawConnection(port: port, receiveTimeout: 30)
            try connection.send("POST /v1/face-login HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\nhi")
            return try connection.readResponse()
        }
        await entered.wait()
        let shutdownFinished = Atomic<Bool>(false)
        let shutdown = Task {
            await server.shutdown(gracePeriod: .seconds(30))
            shutdownFinished.store(true, ordering: .relaxed)
        }
        // New connections are refused while the old request is still running.
        #expect(await eventually { !canConnect(port: port) })
        let finishedEarly = shutdownFinished.load(ordering: .relaxed)
        #expect(!finishedEarly)

        release.open()
        let answer = try await response
        #expect(answer.status == 200)
        #expect(answer.text == "finished")
        #expect(answer.header("Connection")?.lowercased() == "close")
        await shutdown.value
        let finished = shutdownFinished.load(ordering: .relaxed)
        #expect(finished)
    }

    /// libmicrohttpd 0.9.75 aborts the process ("Failed to remove listen FD from epoll set") when its quiesce call and a
    /// busy epoll worker both take the listening socket out of the epoll set: a full test run once hit it in
    /// `gracefulShutdownWaitsForTheRequestInFlight`, and this loop at 2,000 rounds hit it within 23 s. Shutdown no longer
    /// quiesces (`HTTPServer.stopListening`); 2,000 rounds then passed twice. 200 rounds here keep it cheap.
    @Test func shutdownUnderTrafficNeverAbortsTheProcess() async throws {
        for _ in 0..<200 {
            let server = try startServer({ $0.threadCount = 4 }) { router in
                router.add("GET", "/x") { _ in .text("x") }
            }
            let port = server.port
            let stop = Flag()
            let clients = (0..<3).map { _ in
                Task.detached {
                    try? await onOwnThread {
                        while !stop.isSet {
                            guard let connection = try? RawConnection(port: port, receiveTimeout: 2) else { continue }
                            try? connection.send("GET /x HTTP/1.1\r\nHost: test\r\n\r\n")
                            _ = try? connection.readResponse()
                        }
                    }
                }
            }
            try await Task.sleep(for: .milliseconds(5))
            await server.shutdown(gracePeriod: .milliseconds(200))
            #expect(!canConnect(port: port))
            stop.set()
            for client in clients { await client.value }
        }
    }

    @Test func shutdownAnswers503WhenAHandlerOutlastsTheGracePeriod() async throws {
        let entered = Gate()
        let never = Gate()
        let server = try startServer { router in
            router.add("GET", "/stuck") { _ in
                entered.open()
                await never.wait()
                return .text("too late")
            }
        }
        let port = server.port
        async let response = onOwnThread { () -> RawResponse in
            let connection = try RawConnection(port: port, receiveTimeout: 30)
            try connection.send("GET /stuck HTTP/1.1\r\nHost: test\r\n\r\n")
            return try connection.readResponse()
        }
        await entered.wait()
        await server.shutdown(gracePeriod: .milliseconds(300))
        let answer = try await response
        #expect(answer.status == 503)
        #expect(try decodeError(answer.body).code == "SERVICE_UNAVAILABLE")
        never.open()
    }

    @Test func droppingARunningServerAnswersInFlightRequestsAndStops() async throws {
        let entered = Gate()
        let never = Gate()
        var server: HTTPServer? = try startServer { router in
            router.add("GET", "/stuck") { _ in
                entered.open()
                await never.wait()
                return .text("too late")
            }
        }
        let port = try #require(server?.port)
        async let response = onOwnThread { () -> RawResponse in
            let connection = try RawConnection(port: port, receiveTimeout: 30)
            try connection.send("GET /stuck HTTP/1.1\r\nHost: test\r\n\r\n")
            return try connection.readResponse()
        }
        await entered.wait()
        server = nil
        let answer = try await response
        #expect(answer.status == 503)
        #expect(!canConnect(port: port))
        never.open()
    }
}

private final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}
