import Foundation
import HTTPServer
import Synchronization
import Testing

@Suite struct RoutingTests {
    struct Echo: Codable {
        var route: String
        var parameters: [String: String]
        var query: [String: String]
        var method: String
    }

    static func echo(_ request: HTTPRequest) -> HTTPResponse {
        .json(Echo(route: request.routeTemplate, parameters: request.pathParameters, query: request.query, method: request.method))
    }

    @Test func routesRequestsToHandlersWithDecodedPathParameters() async throws {
        let server = try startServer { router in
            router.add("GET", "/v1/apps/{appId}/users/{userId}") { Self.echo($0) }
            router.add("GET", "/v1/apps/{appId}/users") { Self.echo($0) }
            router.add("GET", "/v1/audit/transactions.csv") { Self.echo($0) }
        }
        let client = TestClient(port: server.port)

        let one = try await client.send("GET", "/v1/apps/app%201/users/a%2Fb?limit=10&q=caf%C3%A9+au+lait&flag")
        #expect(one.status == 200)
        #expect(one.headers["content-type"] == "application/json")
        let echo = try JSONDecoder().decode(Echo.self, from: Data(one.body))
        #expect(echo.route == "/v1/apps/{appId}/users/{userId}")
        #expect(echo.parameters == ["appId": "app 1", "userId": "a/b"])
        #expect(echo.query == ["limit": "10", "q": "café au lait", "flag": ""])

        let list = try await client.send("GET", "/v1/apps/x/users")
        #expect(try JSONDecoder().decode(Echo.self, from: Data(list.body)).route == "/v1/apps/{appId}/users")
        let csv = try await client.send("GET", "/v1/audit/transactions.csv")
        #expect(csv.status == 200)
        await server.shutdown()
    }

    @Test func literalSegmentWinsOverParameter() async throws {
        let server = try startServer { router in
            router.add("GET", "/v1/kiosk/sessions/{interviewId}") { Self.echo($0) }
            router.add("GET", "/v1/kiosk/sessions/current") { Self.echo($0) }
        }
        let client = TestClient(port: server.port)
        let literal = try await client.send("GET", "/v1/kiosk/sessions/current")
        #expect(try JSONDecoder().decode(Echo.self, from: Data(literal.body)).route == "/v1/kiosk/sessions/current")
        let parameter = try await client.send("GET", "/v1/kiosk/sessions/abc")
        #expect(try JSONDecoder().decode(Echo.self, from: Data(parameter.body)).parameters == ["interviewId": "abc"])
        await server.shutdown()
    }

    @Test func unknownPathIsAnswered404WithTheErrorEnvelope() async throws {
        let server = try startServer { router in
            router.add("GET", "/v1/apps") { _ in .noContent }
        }
        let client = TestClient(port: server.port)
        for path in ["/nope", "/v1/apps/extra", "/v1/apps/", "/"] {
            let response = try await client.send("GET", path)
            #expect(response.status == 404, "\(path)")
            #expect(response.headers["content-type"] == "application/json")
            #expect(try decodeError(response.body).code == "NOT_FOUND")
        }
        await server.shutdown()
    }

    @Test func knownPathWithOtherMethodIsAnswered405WithAllow() async throws {
        let server = try startServer { router in
            router.add("GET", "/v1/apps/{appId}") { _ in .noContent }
            router.add("PATCH", "/v1/apps/{appId}") { _ in .noContent }
        }
        let client = TestClient(port: server.port)
        let response = try await client.send("DELETE", "/v1/apps/a1")
        #expect(response.status == 405)
        #expect(response.headers["allow"] == "GET, HEAD, PATCH")
        #expect(try decodeError(response.body).code == "METHOD_NOT_ALLOWED")
        await server.shutdown()
    }

    @Test func headIsAnsweredByTheGetRouteWithoutABody() async throws {
        let server = try startServer { router in
            router.add("GET", "/v1/thing") { _ in .text("twelve bytes") }
        }
        let port = server.port
        let response = try await onOwnThread {
            let connection = try RawConnection(port: port)
            try connection.send("HEAD /v1/thing HTTP/1.1\r\nHost: test\r\n\r\n")
            let head = try connection.readResponse(head: true)
            // The next response on the same connection starts right away: HEAD sent no body bytes.
            try connection.send("GET /v1/thing HTTP/1.1\r\nHost: test\r\n\r\n")
            let get = try connection.readResponse()
            return (head, get)
        }
        #expect(response.0.status == 200)
        #expect(response.0.header("Content-Length") == "12")
        #expect(response.1.status == 200)
        #expect(response.1.text == "twelve bytes")
        await server.shutdown()
    }

    @Test func requestIdIsEchoedWhenSaneAndGeneratedOtherwise() async throws {
        let seen = Mutex<[String]>([])
        let server = try startServer { router in
            router.add("GET", "/id") { request in
                seen.withLock { $0.append(request.requestId) }
                return .noContent
            }
        }
        let client = TestClient(port: server.port)
        let echoed = try await client.send("GET", "/id", headers: ["X-Request-Id": "req-123.abc"])
        #expect(echoed.headers["x-request-id"] == "req-123.abc")

        let tooLong = String(repeating: "x", count: 129)
        let replaced = try await client.send("GET", "/id", headers: ["X-Request-Id": tooLong])
        let generated = try #require(replaced.headers["x-request-id"])
        #expect(generated != tooLong)
        #expect(UUID(uuidString: generated) != nil)

        let absent = try await client.send("GET", "/id")
        #expect(UUID(uuidString: try #require(absent.headers["x-request-id"])) != nil)
        #expect(seen.withLock { $0 } == ["req-123.abc", generated, absent.headers["x-request-id"]!])

        let notFound = try await client.send("GET", "/missing", headers: ["X-Request-Id": "nf-1"])
        #expect(notFound.headers["x-request-id"] == "nf-1")
        await server.shutdown()
    }

    @Test func unexpectedErrorsBecome500WithoutDetails() async throws {
        struct DatabaseExploded: Error { var secret = "password=hunter2" }
        let server = try startServer { router in
            router.add("POST", "/boom") { _ in throw DatabaseExploded() }
        }
        let client = TestClient(port: server.port)
        let response = try await client.send("POST", "/boom", body: Array("{}".utf8))
        #expect(response.status == 500)
        let error = try decodeError(response.body)
        #expect(error.code == "INTERNAL")
        #expect(!String(decoding: response.body, as: UTF8.self).contains("hunter2"))
        #expect(!String(decoding: response.body, as: UTF8.self).contains("DatabaseExploded"))
        await server.shutdown()
    }

    @Test func thrownHTTPErrorsKeepStatusCodeTransactionAndHeaders() async throws {
        let server = try startServer { router in
            router.add("POST", "/limited") { _ in throw HTTPError.tooManyRequests(retryAfterSeconds: 30) }
            router.add("POST", "/face") { _ in
                throw HTTPError.unprocessable(code: "NO_FACE", message: "No face in the image", transactionId: "tx-9")
            }
        }
        let client = TestClient(port: server.port)
        let limited = try await client.send("POST", "/limited", body: [])
        #expect(limited.status == 429)
        #expect(limited.headers["retry-after"] == "30")
        #expect(try decodeError(limited.body).code == "RATE_LIMITED")
        #expect(try decodeError(limited.body).transactionId == nil)
        #expect(!String(decoding: limited.body, as: UTF8.self).contains("transactionId"))

        let face = try await client.send("POST", "/face", body: [])
        #expect(face.status == 422)
        let error = try decodeError(face.body)
        #expect(error.code == "NO_FACE")
        #expect(error.transactionId == "tx-9")
        await server.shutdown()
    }

    @Test func routesAreListedInRegistrationOrder() {
        let router = Router()
        router.add("POST", "/v1/apps") { _ in .noContent }
        router.add("get", "/v1/apps/{appId}") { _ in .noContent }
        #expect(router.routes.map { "\($0.method) \($0.pattern)" } == ["POST /v1/apps", "GET /v1/apps/{appId}"])
    }

    @Test func reportsEachFinishedRequestWithItsRouteTemplate() async throws {
        let records = Mutex<[HTTPRequestRecord]>([])
        let server = try startServer(onRequest: { record in records.withLock { $0.append(record) } }) { router in
            router.add("GET", "/v1/apps/{appId}") { _ in .text("ok") }
        }
        let client = TestClient(port: server.port)
        _ = try await client.send("GET", "/v1/apps/secret-app-id", headers: ["X-Request-Id": "r1"])
        _ = try await client.send("GET", "/v1/unknown/path", headers: ["X-Request-Id": "r2"])
        #expect(await eventually { records.withLock { $0.count } == 2 })
        let byId = Dictionary(uniqueKeysWithValues: records.withLock { $0 }.map { ($0.requestId, $0) })
        #expect(byId["r1"]?.routeTemplate == "/v1/apps/{appId}")
        #expect(byId["r1"]?.status == 200)
        #expect(byId["r1"]?.method == "GET")
        #expect(byId["r1"]?.remoteAddress == "127.0.0.1")
        #expect(byId["r2"]?.routeTemplate == "unmatched")
        #expect(byId["r2"]?.status == 404)
        await server.shutdown()
    }

    @Test func startFailsWhenThePortIsTaken() async throws {
        let first = try startServer { _ in }
        let second = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: first.port), router: Router())
        #expect {
            try second.start()
        } throws: { error in
            guard let error = error as? HTTPServerError else { return false }
            return error.kind == .bindFailed && error.code == EADDRINUSE && error.isRetriable
        }
        await first.shutdown()
    }
}
