import FaceGateCore
import FaceGateSchema
import Foundation
import JWT
import Glibc
import KafkaClient
import PostgresClient
import Testing

/// The attacks that used to get an identity token for someone else, each tried against a real stack.
/// Requests carry `X-Forwarded-For` from the trusted local proxy, so one test can speak for many addresses.
@Suite(.serialized) struct TakeoverTests {
    static let proxied = ["FACEGATE_TRUSTED_PROXIES": "127.0.0.1", "FACEGATE_ADDRESS_THROTTLE_AFTER": "3"]

    func login(_ stack: TestStack, _ token: String, device: String, photo: String, from address: String) async throws -> TestStack.Reply {
        try await stack.call("POST", "/v1/face-login", bearer: token, body: try TestEnvironment.image(photo), contentType: "image/jpeg",
                             headers: ["X-Device-Id": device, "X-Forwarded-For": address])
    }

    func confirm(_ stack: TestStack, _ token: String, confirmation: String, number: String, device: String,
                 from address: String) async throws -> TestStack.Reply {
        try await stack.call("POST", "/v1/face-login/confirm", bearer: token, json: ["confirmationId": confirmation, "employeeNumber": number],
                             headers: ["X-Device-Id": device, "X-Forwarded-For": address])
    }

    /// Fifty wrong employee numbers sent at once, from ten devices and fifty addresses, for the same
    /// matched user: at most five reach the comparison, the rest wait; the right number from yet another
    /// device waits too, while the user's own phone keeps logging in.
    @Test func parallelEmployeeNumberGuessesAreCountedPerClaimedUser() async throws {
        try await TestStack.with(extra: Self.proxied) { stack in
            let app = try await stack.createApp()
            let victim = try await stack.createUser(app, employeeNumber: "E7001", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: victim, photo: "obama.jpg").status == 201)
            let token = try await stack.accessToken(app)

            // The victim's own phone, bound the usual way.
            let own = try await login(stack, token, device: "own-phone", photo: "obama2.jpg", from: "198.51.100.1")
            let ownConfirmation = try #require(own.string("confirmationId"))
            #expect(try await confirm(stack, token, confirmation: ownConfirmation, number: "E7001", device: "own-phone",
                                      from: "198.51.100.1").string("status") == "SUCCESS")

            // The attacker: the victim's photo from ten fresh devices, one confirmation each.
            var confirmations: [(device: String, id: String)] = []
            for index in 0..<10 {
                let reply = try await login(stack, token, device: "attacker-\(index)", photo: "obama3.jpg", from: "203.0.113.\(index + 1)")
                #expect(reply.string("status") == "CONFIRM_REQUIRED", "\(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
                confirmations.append(("attacker-\(index)", try #require(reply.string("confirmationId"))))
            }
            let codes = try await withThrowingTaskGroup(of: String?.self) { group in
                for guess in 0..<50 {
                    let (device, id) = confirmations[guess % confirmations.count]
                    group.addTask {
                        try await confirm(stack, token, confirmation: id, number: "E\(8000 + guess)", device: device, from: "192.0.2.\(guess + 1)").errorCode
                    }
                }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            let compared = codes.filter { $0 == "EMPLOYEE_NUMBER_MISMATCH" }.count
            #expect(compared >= 1 && compared <= 5, "\(codes)")
            #expect(codes.allSatisfy { $0 == "EMPLOYEE_NUMBER_MISMATCH" || $0 == "RATE_LIMITED" }, "\(codes)")

            // Even the right number, from a device and address never seen, waits now.
            let late = try await login(stack, token, device: "attacker-late", photo: "obama3.jpg", from: "203.0.113.99")
            let lateConfirmation = try #require(late.string("confirmationId"))
            let right = try await confirm(stack, token, confirmation: lateConfirmation, number: "E7001", device: "attacker-late", from: "203.0.113.99")
            #expect(right.status == 429)
            #expect(Int(right.headers["retry-after"] ?? "") ?? 0 > 0)

            // The victim's bound phone is not locked out by the stranger's guesses.
            let mine = try await login(stack, token, device: "own-phone", photo: "obama3.jpg", from: "198.51.100.1")
            #expect(mine.string("status") == "SUCCESS")
            #expect(mine.string("userId") == victim)

            // Every attempt is in the audit trail.
            let audited = try await stack.database.pool.query("""
                SELECT count(*)::int AS n FROM transactions WHERE kind = 'face.login.confirm' AND outcome IN ('EMPLOYEE_NUMBER_MISMATCH', 'RATE_LIMITED')
                """).first?.decode("n", as: Int.self)
            #expect(audited == 51)
        }
    }

    /// A new device id per attempt no longer starts a fresh count: the client address is counted too,
    /// `X-Forwarded-For` is believed only from a trusted proxy, and a face match on a new device does not
    /// wipe the device's failures before the employee number is known.
    @Test func switchingDeviceIdsOrMatchingOnceDoesNotResetTheCount() async throws {
        try await TestStack.with(extra: Self.proxied) { stack in
            let app = try await stack.createApp()
            let user = try await stack.createUser(app, employeeNumber: "E7100", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: user, photo: "obama.jpg").status == 201)
            let token = try await stack.accessToken(app)

            for index in 1...3 {
                #expect(try await login(stack, token, device: "fresh-\(index)", photo: "biden.jpg", from: "203.0.113.50").errorCode == "NO_MATCH_FACE")
            }
            let throttled = try await login(stack, token, device: "fresh-4", photo: "obama2.jpg", from: "203.0.113.50")
            #expect(throttled.status == 429)
            #expect(throttled.errorCode == "RATE_LIMITED")
            // Another address is its own count.
            #expect(try await login(stack, token, device: "fresh-5", photo: "obama2.jpg", from: "203.0.113.51").string("status") == "CONFIRM_REQUIRED")
            // Behind the trusted proxy, the audit trail records the client's address, not the proxy's.
            let audited = try await stack.database.pool.query("""
                SELECT client_ip FROM transactions WHERE device_id = 'fresh-1'
                """).first?.decode("client_ip", as: String.self)
            #expect(audited == "203.0.113.50")

            // One device: four failures, a match (new device: confirmation asked), one more failure; the next waits.
            for attempt in 1...4 {
                #expect(try await login(stack, token, device: "patient", photo: "biden.jpg", from: "203.0.114.\(attempt)").errorCode == "NO_MATCH_FACE")
            }
            #expect(try await login(stack, token, device: "patient", photo: "obama2.jpg", from: "203.0.114.5").string("status") == "CONFIRM_REQUIRED")
            #expect(try await login(stack, token, device: "patient", photo: "biden.jpg", from: "203.0.114.6").errorCode == "NO_MATCH_FACE")
            let waits = try await login(stack, token, device: "patient", photo: "obama2.jpg", from: "203.0.114.7")
            #expect(waits.status == 429)
        }
    }

    /// One address cannot flood the gateway (nor the audit trail with refused credentials): past its rate and burst
    /// it hears 429 RATE_LIMITED with Retry-After, other addresses are not affected, and it is served again after a pause.
    @Test func oneClientAddressIsRateLimited() async throws {
        try await TestStack.with(withMatcher: false, extra: ["FACEGATE_CLIENT_RATE": "2", "FACEGATE_CLIENT_BURST": "4"]) { stack in
            var statuses: [Int] = []
            var limited: TestStack.Reply?
            for _ in 0..<8 {
                let reply = try await stack.call("POST", "/v1/access-tokens", basic: ("00000000-0000-0000-0000-000000000000", "wrong"))
                statuses.append(reply.status)
                if reply.status == 429 { limited = reply }
            }
            #expect(statuses.prefix(4).allSatisfy { $0 == 401 }, "the burst is served: \(statuses)")
            #expect(statuses.filter { $0 == 429 }.count >= 3, "then the rate holds: \(statuses)")
            #expect(limited?.errorCode == "RATE_LIMITED" && limited?.headers["retry-after"] == "1")
            try await Task.sleep(for: .milliseconds(1200))
            #expect(try await stack.call("GET", "/.well-known/jwks.json").status == 200)
        }
    }

    @Test func forwardedForIsIgnoredWithoutATrustedProxy() async throws {
        try await TestStack.with(extra: ["FACEGATE_ADDRESS_THROTTLE_AFTER": "3"]) { stack in
            let app = try await stack.createApp()
            let token = try await stack.accessToken(app)
            for index in 1...3 {
                let reply = try await login(stack, token, device: "spoofer-\(index)", photo: "biden.jpg", from: "203.0.113.\(index)")
                #expect(reply.errorCode == "NO_MATCH_FACE")
            }
            // Claiming yet another address does not help: the connection's address is the one counted.
            let refused = try await login(stack, token, device: "spoofer-4", photo: "biden.jpg", from: "203.0.113.200")
            #expect(refused.errorCode == "RATE_LIMITED")
        }
    }

    /// A message forged on `gallery.changes.v1` names another user for a template, then deletes it: the
    /// matcher takes the template's user from PostgreSQL and keeps it, and the face still belongs to its owner.
    @Test func forgedGalleryChangesCannotRemapOrDropATemplate() async throws {
        try await TestStack.with(extra: ["MATCHER_RECONCILE_SECONDS": "3600"]) { stack in
            let app = try await stack.createApp()
            let owner = try await stack.createUser(app, employeeNumber: "E7200", name: "Barack Obama")
            let intruder = try await stack.createUser(app, employeeNumber: "E7201", name: "Mallory")
            let enrolled = try await stack.enroll(app, user: owner, photo: "obama.jpg")
            let templateId = try #require(enrolled.string("templateId").flatMap(UUID.init(uuidString:)))
            let appId = try #require(UUID(uuidString: app.id))

            let producer = try KafkaProducer(configuration: KafkaConfiguration(brokers: try TestEnvironment.value("FACEGATE_TEST_KAFKA_BROKERS"),
                                                                               clientId: "forger"))
            defer { producer.close() }
            let topic = stack.environment["FACEGATE_TOPIC_PREFIX"]! + "gallery.changes.v1"
            for change in [GalleryChange(operation: .upsert, appId: appId, userId: UUID(uuidString: intruder)!, templateId: templateId, changeSeq: 1 << 40),
                           GalleryChange(operation: .delete, appId: appId, userId: UUID(uuidString: intruder)!, templateId: templateId, changeSeq: 1 << 41)] {
                _ = try await producer.send(KafkaRecord(topic: topic, key: Array(templateId.wire.utf8), value: try FaceGateJSON.encode(change)))
            }
            // The matcher follows the topic within milliseconds; give it ample time to obey if it would.
            let matcher = try #require(stack.matcher)
            for _ in 0..<30 {
                try await Task.sleep(for: .milliseconds(100))
                #expect(matcher.templateCount == 1)
            }
            let token = try await stack.accessToken(app)
            let login = try await stack.faceLogin(token, device: "phone", photo: "obama2.jpg")
            let confirmation = try #require(login.string("confirmationId"), "\(String(decoding: login.body, as: UTF8.self))")
            let confirmed = try await stack.call("POST", "/v1/face-login/confirm", bearer: token,
                                                 json: ["confirmationId": confirmation, "employeeNumber": "E7200"], headers: ["X-Device-Id": "phone"])
            #expect(confirmed.string("userId") == owner)
        }
    }

    /// The running services are logged in with their own roles: not the owner, not a superuser, not
    /// exempt from row-level security (what those roles may not do: AuditTests).
    @Test func runningServicesAreLoggedInWithTheirOwnRoles() async throws {
        try await TestStack.with(withCTID: true, withKiosk: true) { stack in
            let app = try await stack.createApp()
            _ = try await stack.accessToken(app)  // one transaction at least
            let connected = try await stack.database.pool.query("""
                SELECT DISTINCT a.usename::text AS role, r.rolsuper, r.rolbypassrls
                FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename
                WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.usename <> current_user
                """)
            var roles: Set<String> = []
            for row in connected {
                roles.insert(try row.decode("role", as: String.self))
                #expect(try row.decode("rolsuper", as: Bool.self) == false)
                #expect(try row.decode("rolbypassrls", as: Bool.self) == false)
            }
            #expect(roles == Set(Schema.serviceLogins.values), "\(roles)")
        }
    }

    /// An interview token never travels in a URL: a browser's EventSource spends a single-use ticket; and the
    /// token dies with its session (read grace of 10 minutes past the expiry, then 410).
    @Test func kioskSessionTokensStayOutOfURLsAndDieWithTheirSession() async throws {
        try await TestStack.with(withMatcher: false, withKiosk: true) { stack in
            let app = try await stack.createApp()
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let session = try await kiosk.start()
            let path = "/v1/kiosk/sessions/\(session.id)"
            let cancelled = try await kiosk.cancel(session)
            #expect(cancelled.status == 204)

            let inURL = try await stack.call("GET", path + "/events?interviewToken=\(session.token)")
            #expect(inURL.status == 401)
            #expect(try await stack.call("GET", path + "?interviewToken=\(session.token)").status == 401)

            // Only the kiosk that opened the session gets a ticket.
            #expect(try await stack.call("POST", path + "/event-tickets", headers: ["X-Interview-Token": session.token]).errorCode == "KIOSK_NOT_REGISTERED")
            let issued = try await stack.call("POST", path + "/event-tickets", headers: ["X-Interview-Token": session.token], kiosk: kiosk.kiosk)
            #expect(issued.status == 201)
            let ticket = try #require(issued.string("ticket"))
            let stream = try await stack.call("GET", path + "/events?ticket=\(ticket)")
            #expect(stream.status == 200)
            #expect(KioskDriver.parseEvents(String(decoding: stream.body, as: UTF8.self)).map(\.name) == ["userCancelledSession"])
            #expect(try await stack.call("GET", path + "/events?ticket=\(ticket)").status == 401, "a ticket opens one stream")
            #expect(try await stack.call("POST", path + "/event-tickets", headers: ["X-Interview-Token": "forged"]).status == 401)

            // Within the grace after expiry the kiosk can still read how it ended; past it the token is dead.
            let id = try #require(UUID(uuidString: session.id))
            _ = try await stack.database.pool.query("UPDATE kiosk_sessions SET expires_at = now() - interval '1 minute' WHERE id = \(id)")
            #expect(try await kiosk.get(session).status == 200)
            _ = try await stack.database.pool.query("UPDATE kiosk_sessions SET expires_at = now() - interval '11 minutes' WHERE id = \(id)")
            let dead = try await kiosk.get(session)
            #expect(dead.status == 410)
            #expect(dead.errorCode == "SESSION_EXPIRED")
            #expect(try await stack.call("POST", path + "/event-tickets", headers: ["X-Interview-Token": session.token], kiosk: kiosk.kiosk).status == 410)
        }
    }

    /// Open event streams are capped per client address: one more is 429 with Retry-After, and a stream that ended
    /// gives its place back.
    @Test func openEventStreamsAreCappedPerClient() async throws {
        try await TestStack.with(withMatcher: false, withKiosk: true, extra: ["FACEGATE_EVENT_STREAMS_PER_CLIENT": "2"]) { stack in
            let app = try await stack.createApp()
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let session = try await kiosk.start()
            let path = "/v1/kiosk/sessions/\(session.id)/events"
            let held = try (0..<2).map { _ in
                HeldStream(port: stack.gateway.httpPort, path: path, token: session.token,
                           proof: try DPoP.proof(key: kiosk.kiosk.key, method: "GET", url: stack.baseURL + path))
            }
            #expect(held.map(\.status) == [200, 200])
            let refused = try await stack.call("GET", path, headers: ["X-Interview-Token": session.token], kiosk: kiosk.kiosk)
            #expect(refused.status == 429)
            #expect(refused.errorCode == "RATE_LIMITED")
            #expect(refused.headers["retry-after"] == "5")
            // Cancelling ends the open streams (a final event), and their places come back.
            let cancelled = try await kiosk.cancel(session)
            #expect(cancelled.status == 204)
            var reopened = 0
            for _ in 0..<50 where reopened != 200 {
                reopened = try await stack.call("GET", path, headers: ["X-Interview-Token": session.token], kiosk: kiosk.kiosk).status
                if reopened != 200 { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(reopened == 200)
            held.forEach { $0.close() }
        }
    }
}

/// An HTTP GET on a raw socket, left open after the response head: an event stream a client keeps reading.
final class HeldStream {
    let status: Int
    private let socket: Int32

    /// `proof`: the kiosk's DPoP proof for this GET (its `htu` names `127.0.0.1:port`, the Host sent).
    init(port: Int, path: String, token: String, proof: String) {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.socket = socket
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nX-Interview-Token: \(token)\r\nDPoP: \(proof)\r\nAccept: text/event-stream\r\n\r\n"
        status = RawHTTP.connect(socket, port: port) ? RawHTTP.status(send: request, on: socket, readingUntil: "\r\n\r\n") : 0
    }

    func close() { Glibc.close(socket) }
}
