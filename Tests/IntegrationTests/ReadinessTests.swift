import AuthGateway
import Crypto
import FaceGateTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ServiceKit
import Testing

/// Admin endpoints tell the truth: not ready while a dependency is away, ready once it is back.
@Suite(.serialized) struct ReadinessTests {
    /// Broker TLS and SASL reach librdkafka from their named variables, and a misspelt protocol stops the
    /// service at start instead of connecting in plain text.
    @Test func kafkaSecurityComesFromNamedVariables() throws {
        let keys = ServiceKeys.generate(for: ["t"] + ServiceKeys.platformServices)
        let base = ["FACEGATE_DATABASE_URL": "postgres://x@127.0.0.1/x", "FACEGATE_KAFKA_BROKERS": "127.0.0.1:9092",
                    "FACEGATE_SERVICE_KEY": keys.seeds["t"]!, "FACEGATE_SERVICE_PUBLIC_KEYS": keys.publicKeys]
        let secured = try CommonConfiguration(serviceName: "t", defaultAdminPort: 0, environment: Environment(base.merging([
            "FACEGATE_KAFKA_SECURITY_PROTOCOL": "sasl_ssl", "FACEGATE_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
            "FACEGATE_KAFKA_SASL_USERNAME": "gateway", "FACEGATE_KAFKA_SASL_PASSWORD": "secret", "FACEGATE_KAFKA_SSL_CA_LOCATION": "/etc/ca.pem",
        ]) { _, new in new }))
        #expect(secured.kafkaSecurity == ["security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "gateway",
                                          "sasl.password": "secret", "ssl.ca.location": "/etc/ca.pem"])
        #expect(try CommonConfiguration(serviceName: "t", defaultAdminPort: 0, environment: Environment(base)).kafkaSecurity.isEmpty)
        #expect(throws: ConfigurationError.self) {
            try CommonConfiguration(serviceName: "t", defaultAdminPort: 0,
                                    environment: Environment(base.merging(["FACEGATE_KAFKA_SECURITY_PROTOCOL": "sasl_tls"]) { _, new in new }))
        }
    }

    /// The gateway may hold the operator key's SHA-256 instead of the key (`make run` gives it nothing else); a malformed
    /// hash stops it at start with the variable named.
    @Test func theGatewayTakesTheOperatorKeysHashInsteadOfTheKey() async throws {
        let database = try await TestDatabase.create()
        defer { Task { await database.drop() } }
        var environment = try TestStack(database: database).environment(for: "auth-gateway")
        let key = environment.removeValue(forKey: "FACEGATE_ADMIN_KEY")!
        environment["FACEGATE_ADMIN_KEY_SHA256"] = Hex.encode(SHA256.hash(Array(key.utf8)))
        let configuration = try GatewayConfiguration(environment: Environment(environment))
        #expect(configuration.bootstrapAdminKeyHash == SHA256.hash(Array(key.utf8)))
        environment["FACEGATE_ADMIN_KEY_SHA256"] = "not-a-hash"
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration(environment: Environment(environment)) }
    }

    /// With PostgreSQL away, a call that needs it is the documented 503 (a client may retry), never a 500.
    @Test func aCallWithTheDatabaseAwayIs503() async throws {
        let database = try await TestDatabase.create()
        var environment = try TestStack(database: database).environment(for: "auth-gateway")
        environment["FACEGATE_DATABASE_URL"] = "postgres://facegate_gateway@127.0.0.1:\(Self.freePort())/facegate"
        let gateway = try AuthGateway(configuration: try GatewayConfiguration(environment: Environment(environment)))
        let run = Task { _ = try? await gateway.group.run(handleSignals: false) }
        var port = 0
        for _ in 0..<100 where port == 0 {
            port = gateway.httpPort
            try await Task.sleep(for: .milliseconds(50))
        }
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/access-tokens")!)
        request.httpMethod = "POST"
        request.setValue("Basic " + Data("\(UUID().uuidString.lowercased()):secret".utf8).base64EncodedString(), forHTTPHeaderField: "Authorization")
        let answer = try? await URLSession.shared.data(for: request)
        gateway.group.requestStop(reason: "test")
        await run.value
        await database.drop()
        #expect((answer?.1 as? HTTPURLResponse)?.statusCode == 503)
        #expect(answer.map { String(decoding: $0.0, as: UTF8.self) }?.contains("SERVICE_UNAVAILABLE") == true)
    }

    /// The local broker keeps nothing: after it restarts, the services recreate their topics, rejoin their groups
    /// and answer again without being restarted; a login while it is away is 503 within the request deadline.
    @Test func servicesAnswerAgainAfterTheBrokerRestartsEmpty() async throws {
        let brokerPort = Self.freePort()
        var broker = try PrivateBroker(port: brokerPort)
        defer { broker.stop() }
        try await TestStack.with(extra: ["FACEGATE_KAFKA_BROKERS": "127.0.0.1:\(brokerPort)", "FACEGATE_REQUEST_TIMEOUT_SECONDS": "3"]) { stack in
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "E1", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: user, photo: "obama.jpg").status == 201)
            let token = try await stack.accessToken(app)
            #expect(try await stack.faceLogin(token, device: "phone", photo: "obama2.jpg").status == 200)

            broker.stop()
            let started = ContinuousClock.now
            let away = try await stack.faceLogin(token, device: "phone", photo: "obama2.jpg")
            #expect(away.status == 503 && away.errorCode == "SERVICE_UNAVAILABLE")
            #expect(ContinuousClock.now - started < .seconds(5), "answered within the 3 s deadline and a margin")

            broker = try PrivateBroker(port: brokerPort)
            let restarted = ContinuousClock.now
            var reply = away
            while reply.status == 503, ContinuousClock.now - restarted < .seconds(90) {
                try await Task.sleep(for: .seconds(1))
                reply = try await stack.faceLogin(token, device: "phone", photo: "obama3.jpg")
            }
            #expect(reply.status == 200, "face login answers again after the broker restart: \(reply.status) \(reply.errorCode ?? "")")
            // Enrollment goes through the other direction (gallery changes) and must work again too.
            let biden = try await stack.createUser(app, employeeNumber: "E2", name: "Joe Biden")
            #expect(try await stack.enroll(app, user: biden, photo: "biden.jpg").status == 201)
            var found = false
            for _ in 0..<20 where !found {
                found = try await stack.faceLogin(token, device: "phone-2", photo: "biden.jpg").status == 200
                if !found { try await Task.sleep(for: .milliseconds(500)) }
            }
            #expect(found, "a face enrolled after the restart is found")
        }
    }

    /// A private broker on a port of our own, stopped by its pid.
    final class PrivateBroker {
        let process: ChildProcess
        init(port: Int) throws {
            process = try ChildProcess(try TestEnvironment.value("FACEGATE_TANSU"),
                                       ["broker", "--listener-url", "tcp://127.0.0.1:\(port)", "--advertised-listener-url", "tcp://127.0.0.1:\(port)"])
        }
        /// The broker ignores SIGTERM and keeps nothing on disk.
        func stop() { process.stop(signal: SIGKILL) }
    }

    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func get(_ url: String) async throws -> (Int, String) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    @Test func gatewayIsNotReadyUntilTheBrokerAppearsThenRecovers() async throws {
        let database = try await TestDatabase.create()
        let brokerPort = Self.freePort()
        var broker: PrivateBroker?
        do {
            let stack = try TestStack(database: database, extra: ["FACEGATE_KAFKA_BROKERS": "127.0.0.1:\(brokerPort)"])
            let gateway = try AuthGateway(configuration: try GatewayConfiguration(environment: Environment(stack.environment(for: "auth-gateway"))))
            let run = Task { _ = try? await gateway.group.run(handleSignals: false) }
            // The process serves its admin endpoints and says why it is not ready.
            var port = 0
            for _ in 0..<100 where port == 0 {
                port = gateway.admin.port
                try await Task.sleep(for: .milliseconds(50))
            }
            let admin = "http://127.0.0.1:\(port)"
            #expect(try await Self.get(admin + "/healthz").0 == 200)
            try await Task.sleep(for: .seconds(2))
            let (status, body) = try await Self.get(admin + "/readyz")
            #expect(status == 503)
            #expect(body.contains("\"kafka\":false"))
            #expect(body.contains("\"postgres\":true"))

            broker = try PrivateBroker(port: brokerPort)
            var ready = false
            let deadline = ContinuousClock.now + .seconds(60)
            while !ready, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(500))
                ready = try await Self.get(admin + "/readyz").0 == 200
            }
            #expect(ready, "the gateway became ready once the broker was up")
            let metrics = try await Self.get(admin + "/metrics").1
            #expect(metrics.contains("# TYPE facegate_http_requests_total counter"))
            // What an operator's dashboards and alerts read (deploy/prometheus).
            for line in ["facegate_ready 1", "facegate_readiness_check{check=\"kafka\"} 1", "facegate_build_info{service=\"auth-gateway\"",
                         "# TYPE process_cpu_seconds_total counter", "process_resident_memory_bytes ", "facegate_db_pool_capacity ",
                         "facegate_db_pool_in_use ", "facegate_db_pool_waiting 0"] {
                #expect(metrics.contains(line), "\(line) in /metrics")
            }
            gateway.group.requestStop(reason: "test")
            await run.value
        } catch {
            broker?.stop()
            await database.drop()
            throw error
        }
        broker?.stop()
        await database.drop()
    }
}
