import FaceGateCore
import FaceGateTestSupport
import Foundation
import Testing

/// Whole onboarding flows with generated documents: real portraits pasted on ID cards rendered by
/// ImageMagick in OCR-B, read back by tesseract; selfie bursts made from the real photos doing the
/// challenge's actions; the real matcher deciding.
@Suite(.serialized, .sharedStack(withKiosk: true)) struct KioskOnboardingTests {
    static let obamaCard = IDCard.td1(documentNumber: "D23145890", surname: "OBAMA", givenNames: "BARACK HUSSEIN", nationality: "USA",
                                      birthDate: "1961-08-04", sex: "M", expiryDate: "2034-01-20",
                                      portrait: (try? IDCard.testPhoto("obama2.jpg")) ?? URL(fileURLWithPath: "/"))

    @Test func unknownFaceIsOnboardedThenRecognisedAtTheNextVisit() async throws {
        try await TestStack.with(withKiosk: true) { stack in
            let app = try await stack.createApp()
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let session = try await kiosk.start()
            let selfie = try await kiosk.liveSelfie(session, photo: "obama.jpg")
            #expect(selfie.string("state") == "idFront", "\(selfie.json)")
            #expect(try await kiosk.document(session, step: "id-front", image: try kiosk.front(Self.obamaCard)).string("state") == "idBack")
            let back = try await kiosk.document(session, step: "id-back", image: try kiosk.back(Self.obamaCard))
            #expect(back.string("state") == "completed", "\(back.json)")
            let result = try #require(back.json["result"] as? [String: Any])
            #expect(result["success"] as? Bool == true)
            #expect(result["existingUser"] as? Bool == false)
            #expect(result["name"] as? String == "Barack Hussein Obama")
            let customer = try #require(result["customerUUID"] as? String)
            #expect(result["token"] is String, "the finished session hands over the identity token")

            let events = try await kiosk.events(session)
            #expect(events.map(\.name) == ["selfieScanCompleted", "idFrontCompleted", "idBackCompleted", "idProcessed",
                                           "faceMatchCompleted", "kioskFlowCompleted"])
            let ocr = try #require(events[3].data["ocrData"] as? [String: Any])
            // The screen's fields only: no document number or birth date travels in an event.
            #expect(ocr["surname"] as? String == "OBAMA")
            #expect(ocr["documentNumber"] == nil && ocr["birthDate"] == nil)
            #expect(ocr["expiryDate"] as? String == "2034-01-20")
            #expect(ocr["nationality"] as? String == "USA")
            #expect(events[5].data["token"] == nil, "no identity token in an event")
            let distance = try #require(events[4].data["distance"] as? Double)
            #expect(distance < Double(FaceModel.defaultForNewApps.defaultThreshold))
            let users = try await stack.call("GET", "/v1/apps/\(app.id)/users", bearer: stack.adminKey)
            let listed = try #require(users.json["items"] as? [[String: Any]])
            #expect(listed.map { $0["userId"] as? String } == [customer])
            #expect(listed.first?["employeeNumber"] as? String == "USA-D23145890")

            // The next visit: the same face is an existing customer at the selfie.
            let visit = try await kiosk.start()
            let again = try await kiosk.liveSelfie(visit, photo: "obama.jpg")
            #expect(again.string("state") == "completed")
            let known = try #require(again.json["result"] as? [String: Any])
            #expect(known["existingUser"] as? Bool == true)
            #expect(known["customerUUID"] as? String == customer)

            // Kiosk login names the session that onboarded the customer.
            let challenge = try await kiosk.challenge()
            let frames = try SyntheticFrames.burst(photo: try IDCard.testPhoto("obama.jpg"), actions: challenge.actions, seed: 7)
            let login = try await kiosk.login(frames: frames, challengeId: challenge.id)
            #expect(login.json["success"] as? Bool == true, "\(login.json)")
            #expect(login.string("customerUUID") == customer)
            #expect(login.string("interviewId") == session.id)
            #expect(login.json["interviewToken"] is NSNull, "the onboarding session's token is not handed to whoever matches the face")
            #expect(!String(decoding: login.body, as: UTF8.self).contains(session.token))
            #expect(login.string("firstName") == "Barack")

            // Erasing the customer erases the sessions that hold their document data.
            #expect(try await stack.call("DELETE", "/v1/apps/\(app.id)/users/\(customer)", bearer: stack.adminKey).status == 204)
            let left = try await stack.database.pool.query("SELECT count(*)::int AS n FROM kiosk_sessions WHERE customer_id = \(UUID(uuidString: customer)!)")
            #expect(try left.first?.decode("n", as: Int.self) == 0)
            #expect(try await kiosk.get(session).status != 200)

            // After the run, no topic and no table holds a photo, and the erased customer's document number and birth date
            // are nowhere: job messages were sealed, and the session that held the document is gone.
            let scan = try await PrivacyScan.scan(stack, secrets: ["D23145890", "1961-08-04", "Barack Hussein"])
            #expect(scan.findings.isEmpty, "\(scan.findings.prefix(20))")
            // The scan read the run's traffic (jobs, replies, events, audit) and its rows, not an empty broker.
            #expect(scan.messages >= 30 && scan.rows >= 40, "\(scan.messages) messages and \(scan.rows) rows read")
        }
    }

    /// A finished session is erased with its events after the retention period.
    @Test func finishedSessionsAreErasedAfterTheirRetention() async throws {
        try await TestStack.with(withMatcher: false, withKiosk: true,
                                 extra: ["FACEGATE_KIOSK_RETENTION_SECONDS": "1", "KIOSK_SWEEP_SECONDS": "1"]) { stack in
            let app = try await stack.createApp()
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let session = try await kiosk.start()
            #expect(try await kiosk.cancel(session).status < 300)
            let id = UUID(uuidString: session.id)!
            var remaining = 1
            for _ in 0..<40 where remaining > 0 {
                try await Task.sleep(for: .milliseconds(250))
                remaining = try await stack.database.pool.query("""
                    SELECT (SELECT count(*) FROM kiosk_sessions WHERE id = \(id)) + (SELECT count(*) FROM kiosk_events WHERE session_id = \(id)) AS n
                    """).first?.decode("n", as: Int.self) ?? 1
            }
            #expect(remaining == 0)
        }
    }

    @Test func aDifferentFaceThanTheDocumentsCreatesNoCustomer() async throws {
        try await TestStack.with(withKiosk: true) { stack in
            let app = try await stack.createApp()
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let session = try await kiosk.start()
            #expect(try await kiosk.liveSelfie(session, photo: "biden.jpg").string("state") == "idFront")
            _ = try await kiosk.document(session, step: "id-front", image: try kiosk.front(Self.obamaCard))
            let back = try await kiosk.document(session, step: "id-back", image: try kiosk.back(Self.obamaCard))
            #expect(back.string("state") == "failed")
            let events = try #require(back.json["events"] as? [[String: Any]])
            #expect(events.compactMap { $0["event"] as? String } == ["idBackCompleted", "idProcessed", "faceMatchCompleted", "kioskFlowCompleted"])
            #expect((events[2]["data"] as? [String: Any])?["error"] as? String == "FACE_MISMATCH")
            #expect((events[3]["data"] as? [String: Any])?["success"] as? Bool == false)
            let users = try await stack.call("GET", "/v1/apps/\(app.id)/users", bearer: stack.adminKey)
            #expect((users.json["items"] as? [Any])?.isEmpty == true)
            let audit = try await stack.call("GET", "/v1/audit/transactions?appId=\(app.id)&kind=kiosk.onboarding", bearer: stack.adminKey)
            #expect((audit.json["items"] as? [[String: Any]])?.first?["outcome"] as? String == "FACE_MISMATCH")
            #expect((audit.json["items"] as? [[String: Any]])?.first?["actor"] as? [String: String] == ["type": "kiosk", "id": kiosk.kiosk.id],
                    "the orchestrator's rows name the kiosk")
        }
    }

    @Test func badDocumentsFailTheirStepAndLeaveTheSessionUsable() async throws {
        try await TestStack.with(withKiosk: true) { stack in
            let app = try await stack.createApp()
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let session = try await kiosk.start()
            #expect(try await kiosk.liveSelfie(session, photo: "obama.jpg").string("state") == "idFront")
            #expect(try await kiosk.document(session, step: "id-front", image: try kiosk.front(Self.obamaCard)).string("state") == "idBack")

            func failure(_ reply: TestStack.Reply) -> String? {
                ((reply.json["events"] as? [[String: Any]])?.last?["data"] as? [String: Any])?["error"] as? String
            }
            let unreadable = try await kiosk.document(session, step: "id-back", image: try KioskDriver.blankCard())
            #expect(unreadable.string("state") == "idBack")
            #expect(failure(unreadable) == "DOCUMENT_UNREADABLE")

            var broken = Self.obamaCard
            broken.brokenCheckDigit = true
            let badDigit = try await kiosk.document(session, step: "id-back", image: try kiosk.back(broken))
            #expect(badDigit.string("state") == "idBack")
            #expect(failure(badDigit) == "DOCUMENT_UNREADABLE")

            var expired = Self.obamaCard
            expired.document.expiryDate = "2021-03-31"
            let old = try await kiosk.document(session, step: "id-back", image: try kiosk.back(expired))
            #expect(old.string("state") == "idFront", "another document must be scanned from its front")
            #expect(failure(old) == "DOCUMENT_EXPIRED")

            // A valid document still completes the session.
            _ = try await kiosk.document(session, step: "id-front", image: try kiosk.front(Self.obamaCard))
            #expect(try await kiosk.document(session, step: "id-back", image: try kiosk.back(Self.obamaCard)).string("state") == "completed")
        }
    }

    @Test func aReplayedStillIsASpoofAndTheApprovalRulesAreTheApps() async throws {
        try await TestStack.with(withKiosk: true) { stack in
            let app = try await stack.createApp(extra: ["kioskApproval": ["minimumAge": 70]])
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let session = try await kiosk.start()
            let challenge = try await kiosk.challenge()
            let still = try SyntheticFrames.replayedStill(photo: try IDCard.testPhoto("obama.jpg"), count: 5)
            let spoof = try await kiosk.selfie(session, frames: still, challengeId: challenge.id)
            #expect(spoof.string("state") == "selfie")
            let event = try #require((spoof.json["events"] as? [[String: Any]])?.first?["data"] as? [String: Any])
            #expect(event["spoofAttempt"] as? Bool == true)
            #expect(event["error"] as? String == "SPOOF_DETECTED")

            #expect(try await kiosk.liveSelfie(session, photo: "obama.jpg").string("state") == "idFront")
            _ = try await kiosk.document(session, step: "id-front", image: try kiosk.front(Self.obamaCard))
            let back = try await kiosk.document(session, step: "id-back", image: try kiosk.back(Self.obamaCard))
            #expect(back.string("state") == "failed")
            let last = try #require((back.json["events"] as? [[String: Any]])?.last?["data"] as? [String: Any])
            #expect(last["error"] as? String == "APPROVAL_DENIED")
        }
    }

    /// The orchestrator as a real process, killed with SIGKILL while the back's command is between
    /// stages (OCR committed, the face match waiting for a matcher): its replacement resumes the
    /// command and the session completes with every step exactly once.
    @Test func aKilledOrchestratorsSessionCompletesAfterTheRestart() async throws {
        try await TestStack.with(withMatcher: false, extra: ["FACEGATE_REQUEST_TIMEOUT_SECONDS": "60"]) { stack in
            func env(_ service: String) -> [String: String] { stack.environment(for: service).merging(["FACEGATE_ADMIN_PORT": "0"]) { $1 } }
            let firstMatcher = try ServiceProcess("matcher-worker", environment: env("matcher-worker"), name: "matcher-1")
            defer { firstMatcher.terminate() }
            let victim = try ServiceProcess("kiosk-orchestrator", environment: env("kiosk-orchestrator"), name: "orchestrator-1")
            defer { victim.kill() }
            try await firstMatcher.waitFor("all services started", timeout: .seconds(60))
            try await victim.waitFor("all services started", timeout: .seconds(60))

            let app = try await stack.createApp()
            let kiosk = try await KioskDriver(stack: stack, app: app)
            let session = try await kiosk.start()
            #expect(try await kiosk.liveSelfie(session, photo: "obama.jpg").string("state") == "idFront")
            #expect(try await kiosk.document(session, step: "id-front", image: try kiosk.front(Self.obamaCard)).string("state") == "idBack")

            // No matcher: the back is read and committed, then the face match waits.
            firstMatcher.terminate()
            let back = try kiosk.back(Self.obamaCard)
            let pending = Task { try await kiosk.document(session, step: "id-back", image: back) }
            let id = UUID(uuidString: session.id)!
            let deadline = ContinuousClock.now + .seconds(60)
            var state = ""
            while ContinuousClock.now < deadline, state != "faceMatch" {
                try await Task.sleep(for: .milliseconds(100))
                state = try await stack.database.pool.query("SELECT state FROM kiosk_sessions WHERE id = \(id)").first?.decode("state", as: String.self) ?? ""
            }
            #expect(state == "faceMatch")
            victim.kill()

            let matcher = try ServiceProcess("matcher-worker", environment: env("matcher-worker"), name: "matcher-2")
            defer { matcher.terminate() }
            let successor = try ServiceProcess("kiosk-orchestrator", environment: env("kiosk-orchestrator"), name: "orchestrator-2")
            defer { successor.terminate() }
            while ContinuousClock.now < deadline + .seconds(60), state != "completed" {
                try await Task.sleep(for: .milliseconds(200))
                state = try await stack.database.pool.query("SELECT state FROM kiosk_sessions WHERE id = \(id)").first?.decode("state", as: String.self) ?? ""
            }
            #expect(state == "completed", "\(successor.output.suffix(3000))")
            _ = try? await pending.value
            let events = try await kiosk.events(session)
            #expect(events.map(\.name) == ["selfieScanCompleted", "idFrontCompleted", "idBackCompleted", "idProcessed",
                                           "faceMatchCompleted", "kioskFlowCompleted"])
            let customers = try await stack.database.pool.query("SELECT count(*) AS n FROM users WHERE app_id = \(UUID(uuidString: app.id)!)")
            #expect(try customers.first?.decode("n", as: Int.self) == 1)
            let templates = try await stack.database.pool.query("SELECT count(*) AS n FROM face_templates WHERE app_id = \(UUID(uuidString: app.id)!)")
            #expect(try templates.first?.decode("n", as: Int.self) == 1)
        }
    }
}

extension KioskDriver {
    struct Challenge {
        var id: String
        var actions: [LivenessAction]
    }

    func challenge() async throws -> Challenge {
        let reply = try await stack.call("GET", "/v1/liveness/challenges", bearer: accessToken, kiosk: kiosk)
        guard reply.status == 200, let id = reply.string("challengeId"), let names = reply.json["actions"] as? [String] else {
            throw TestSetupError("no liveness challenge: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        }
        return Challenge(id: id, actions: names.compactMap(LivenessAction.init(rawValue:)))
    }

    /// A selfie burst made from `photo` doing what a fresh challenge asks (blinks need open, unshadowed
    /// eyes: obama.jpg, obama3.jpg, biden.jpg).
    /// A live burst for the session's selfie step. The synthetic turn is missed at some jitter seeds (seen once
    /// in a full run: "TURN_RIGHT not seen"), as a real person's turn sometimes is: like the kiosk SDK, the
    /// driver tries once more with a fresh challenge; a second refusal is the answer.
    func liveSelfie(_ session: Session, photo: String) async throws -> TestStack.Reply {
        var reply: TestStack.Reply
        var attempt = 0
        repeat {
            attempt += 1
            let challenge = try await challenge()
            let frames = try SyntheticFrames.burst(photo: try IDCard.testPhoto(photo), actions: challenge.actions, seed: .random(in: 1...1_000_000))
            reply = try await selfie(session, frames: frames, challengeId: challenge.id)
        } while attempt < 2 && reply.string("state") == "selfie"
        return reply
    }

    func login(frames: [Data], challengeId: String) async throws -> TestStack.Reply {
        let (body, contentType) = Self.multipart(fields: ["challengeId": challengeId], files: frames.map { ("frame", $0) })
        return try await stack.call("POST", "/v1/kiosk/login", bearer: accessToken, body: body, contentType: contentType, kiosk: kiosk)
    }

    func front(_ card: IDCard) throws -> Data { try Self.render { try card.renderFront(to: $0) } }
    func back(_ card: IDCard) throws -> Data { try Self.render { try card.renderBack(to: $0) } }

    static func render(_ draw: (URL) throws -> Void) throws -> Data {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("card-\(UUID().uuidString).jpg")
        defer { try? FileManager.default.removeItem(at: url) }
        try draw(url)
        return try Data(contentsOf: url)
    }
}
