import Crypto
import FaceGateCore
import FaceGateTestSupport
import Foundation
import KafkaClient
import ServiceKit
import Testing

/// Anyone who can reach the broker tries to climb the Kafka wall: messages must be signed by a service
/// allowed on their topic, untouched since, not replayed, and a reply must come from the service the job
/// went to. Real broker, real matcher and ctid-verifier.
@Suite(.serialized) struct MessageAuthenticationTests {
    @Test func forgedTamperedMisplacedAndReplayedMessagesAreRefused() async throws {
        try await TestStack.with(withMatcher: false, withCTID: true, extra: ["FACEGATE_REQUEST_TIMEOUT_SECONDS": "3"]) { stack in
            let prefix = stack.environment["FACEGATE_TOPIC_PREFIX"]!
            let faceJobs = prefix + "face.jobs.v1"
            let app = try await stack.createApp()
            let victim = try await stack.createUser(app, employeeNumber: "V1", name: "Barack Obama")
            let appId = try #require(UUID(uuidString: app.id))
            let producer = try KafkaProducer(configuration: KafkaConfiguration(brokers: try TestEnvironment.value("FACEGATE_TEST_KAFKA_BROKERS"),
                                                                               clientId: "forger"))
            defer { producer.close() }
            func signer(_ service: String) throws -> MessageAuthenticator {
                MessageAuthenticator(keys: try ServiceKeys(service: service, seed: Array(Data(base64Encoded: stack.serviceKeys.seeds[service]!)!),
                                                           publicKeys: stack.serviceKeys.publicKeys),
                                     topics: Topics(prefix: prefix), metrics: MetricsRegistry())
            }

            // A forged reply races the (absent) matcher: unsigned, or signed by a service the job did not go to. A reader
            // of the broker cannot open the job (it is sealed to the matcher); this forger is handed the matcher's key to
            // learn where the answer goes, as an insider would, and still has only other keys to sign with.
            let matcherKeys = try signer("matcher-worker")
            let forger = Task {
                let jobs = try KafkaConsumer(configuration: KafkaConfiguration(brokers: try TestEnvironment.value("FACEGATE_TEST_KAFKA_BROKERS"),
                                                                                clientId: "forger-reader"), groupId: nil)
                defer { jobs.close() }
                let partitions = try await KafkaAdmin.partitionCount(topic: faceJobs, configuration: KafkaConfiguration(
                    brokers: try TestEnvironment.value("FACEGATE_TEST_KAFKA_BROKERS"), clientId: "forger-admin"))
                try jobs.assign((0..<partitions).map { (KafkaTopicPartition(topic: faceJobs, partition: Int32($0)), KafkaOffset.beginning) })
                let ctid = try signer("ctid-verifier")
                for try await message in jobs.messages() {
                    #expect((try? MessageEnvelope<FaceJob>.decode(message.value)) == nil, "a job is not readable on the broker")
                    let job = try MessageEnvelope<FaceJob>.decode(try matcherKeys.open(message).get())
                    guard job.payload.kind == .identify, let replyTo = job.replyTo else { continue }
                    let lie = FaceJobResult(outcome: .match, candidates: [FaceCandidate(userId: UUID(uuidString: victim)!, templateId: UUID(), distance: 0.1)])
                    let reply = MessageEnvelope(type: "face.identify.result", correlationId: job.correlationId, appId: job.appId,
                                                deadline: job.deadline, replyTo: nil, payload: lie)
                    let record = replyRecord(to: ReplyAddress(topic: replyTo.topic, partition: replyTo.partition), correlationId: job.correlationId,
                                             value: try reply.encoded())
                    _ = try await producer.send(record)
                    _ = try await producer.send(ctid.sign(record))
                    // Signed with the matcher's own key, but answering under another job's reply type.
                    let mislabelled = MessageEnvelope(type: "face.verify.result", correlationId: job.correlationId, appId: job.appId,
                                                      deadline: job.deadline, replyTo: nil, payload: lie)
                    _ = try await producer.send(matcherKeys.sign(replyRecord(to: ReplyAddress(topic: replyTo.topic, partition: replyTo.partition),
                                                                             correlationId: job.correlationId, value: try mislabelled.encoded())))
                    return true
                }
                return false
            }
            let token = try await stack.accessToken(app)
            let login = try await stack.faceLogin(token, device: "intruder-phone", photo: "biden.jpg")
            #expect(login.status == 503, "\(String(decoding: login.body, as: UTF8.self))")
            #expect(login.errorCode == "SERVICE_UNAVAILABLE")
            #expect(try await forger.value)

            // Now a matcher, and the victim's real enrollment.
            let matcher = try ServiceProcess("matcher-worker", environment: stack.environment(for: "matcher-worker"), name: "matcher-walls")
            defer { matcher.terminate() }
            try await matcher.waitFor("all services started", timeout: .seconds(60))
            // (The first jobs may wait out this stack's 3 s deadline while the new member joins the group.)
            var enrolled = 0
            for _ in 0..<10 where enrolled != 201 { enrolled = try await stack.enroll(app, user: victim, photo: "obama.jpg").status }
            #expect(enrolled == 201)

            // Enroll jobs putting the intruder's face on the victim: unsigned, signed by the kiosk's key on a topic the
            // kiosk may not use, and signed by the gateway's key then altered.
            let intruderFace = try TestEnvironment.image("biden.jpg")
            let enroll = MessageEnvelope(type: "face.enroll", correlationId: UUID().wire, appId: app.id, deadline: Date().addingTimeInterval(60),
                                         replyTo: ReplyTo(topic: prefix + "replies.auth-gateway.v1", partition: 0),
                                         payload: FaceJob(appId: appId, .enroll(FaceJob.Enrollment(image: intruderFace, userId: UUID(uuidString: victim)!))))
            let unsigned = KafkaRecord(topic: faceJobs, key: Array(enroll.correlationId.utf8), value: try enroll.encoded())
            _ = try await producer.send(unsigned)
            _ = try await producer.send(try signer("kiosk-orchestrator").sign(KafkaRecord(topic: prefix + "ctid.jobs.v1", key: unsigned.key, value: unsigned.value)))
            var tampered = try signer("auth-gateway").sign(unsigned)
            tampered.value = try MessageEnvelope(type: "face.enroll", correlationId: UUID().wire, appId: app.id, deadline: Date().addingTimeInterval(60),
                                                 replyTo: enroll.replyTo, payload: enroll.payload).encoded()
            _ = try await producer.send(tampered)
            // A job sending its answer outside the platform's reply topics.
            var elsewhere = enroll
            elsewhere.replyTo = ReplyTo(topic: "attacker.inbox", partition: 0)
            _ = try await producer.send(try signer("auth-gateway").sign(KafkaRecord(topic: faceJobs, key: unsigned.key, value: try elsewhere.encoded())))
            // A job whose envelope names another job than its payload.
            let mislabelled = MessageEnvelope(type: "face.verify", correlationId: UUID().wire, appId: app.id, deadline: Date().addingTimeInterval(60),
                                              replyTo: enroll.replyTo, payload: enroll.payload)
            _ = try await producer.send(try signer("auth-gateway").sign(KafkaRecord(topic: faceJobs, key: unsigned.key, value: try mislabelled.encoded())))

            // A replay of the gateway's own, genuine enrollment job for the victim.
            let genuine = try await Self.read(faceJobs) { message in
                (try? matcherKeys.open(message).get()).flatMap { try? MessageEnvelope<FaceJob>.decode($0) }?.payload.kind == .enroll
            }
            _ = try await producer.send(KafkaRecord(topic: faceJobs, key: genuine.key, value: genuine.value, headers: genuine.headers))
            // Its photo is not in the topic: only the sealed value is, which no other service's key opens.
            let photo = Data(try TestEnvironment.image("obama.jpg")).base64EncodedString()
            #expect(!String(decoding: genuine.value, as: UTF8.self).contains(photo.prefix(64)), "the enrollment photo is readable in face.jobs")
            #expect(!String(decoding: genuine.value, as: UTF8.self).contains("face.enroll"), "the job's envelope is readable in face.jobs")
            for service in ["auth-gateway", "ctid-verifier", "kiosk-orchestrator"] {
                guard case .failure(let refusal) = try signer(service).open(genuine) else {
                    Issue.record("\(service)'s key opened a job sealed to the matcher")
                    continue
                }
                #expect(refusal.reason == "unreadable")
            }
            // A job the gateway sealed to the ctid-verifier, signed again for face.jobs: the matcher cannot open it.
            let sealedElsewhere = try signer("auth-gateway").sign(KafkaRecord(topic: prefix + "ctid.jobs.v1", key: unsigned.key, value: try enroll.encoded()))
            _ = try await producer.send(try signer("auth-gateway").sign(KafkaRecord(topic: faceJobs, key: unsigned.key, value: sealedElsewhere.value)))

            let refusals = [
                (faceJobs, "unsigned"), (prefix + "ctid.jobs.v1", "producer-not-allowed"), (faceJobs, "bad-signature"),
                (faceJobs, "without a platform reply topic"), (faceJobs, "of type face.verify carries a face.enroll payload"),
                (faceJobs, "replayed"), (faceJobs, "unreadable"),
            ]
            for (topic, reason) in refusals {
                let dead = try await Self.read(topic + ".dlq") { message in
                    String(decoding: message.header(DeadLetterHeader.error) ?? [], as: UTF8.self).contains(reason)
                }
                #expect(dead.value.isEmpty, "dead letters keep no payload")
            }
            // None of them put the intruder's face on anyone.
            let intruder = try await stack.faceLogin(token, device: "intruder-phone-2", photo: "biden.jpg")
            #expect(intruder.errorCode == "NO_MATCH_FACE")
        }
    }

    /// The first message of `topic` (every partition, from the beginning) that `matches`, within 20 s.
    static func read(_ topic: String, where matches: (KafkaMessage) -> Bool) async throws -> KafkaMessage {
        let configuration = KafkaConfiguration(brokers: try TestEnvironment.value("FACEGATE_TEST_KAFKA_BROKERS"), clientId: "walls-reader")
        let consumer = try KafkaConsumer(configuration: configuration, groupId: nil)
        defer { consumer.close() }
        let deadline = ContinuousClock.now + .seconds(20)
        var partitions = 0
        while partitions == 0 && ContinuousClock.now < deadline {
            partitions = (try? await KafkaAdmin.partitionCount(topic: topic, configuration: configuration)) ?? 0
            if partitions == 0 { try await Task.sleep(for: .milliseconds(200)) }
        }
        try consumer.assign((0..<partitions).map { (KafkaTopicPartition(topic: topic, partition: Int32($0)), KafkaOffset.beginning) })
        while ContinuousClock.now < deadline {
            if let message = try consumer.poll(timeoutMilliseconds: 200), matches(message) { return message }
        }
        throw TestSetupError("no matching message on \(topic) within 20 s")
    }
}
