import Crypto
import FaceGateCore
import Foundation
import Testing

@Suite struct EnvelopeTests {
    @Test func roundTripsAJobWithItsReplyAddress() throws {
        let job = FaceJob(appId: UUID(), threshold: 0.45, .identify(image: Data([0xFF, 0xD8, 0xFF, 0x00]), topK: 5))
        let envelope = MessageEnvelope(type: job.kind.messageType, correlationId: "c-1", appId: "app", deadline: Date().addingTimeInterval(5),
                                       replyTo: ReplyTo(topic: "replies.auth-gateway.v1", partition: 3), payload: job)
        let decoded = try MessageEnvelope<FaceJob>.decode(try envelope.encoded(), expectingType: "face.identify")
        #expect(decoded.id == envelope.id)
        #expect(decoded.replyTo == ReplyTo(topic: "replies.auth-gateway.v1", partition: 3))
        #expect(decoded.payload.image == Data([0xFF, 0xD8, 0xFF, 0x00]))
        #expect(decoded.payload.threshold == 0.45)
        #expect(!decoded.isExpired())
    }

    @Test func refusesBrokenVersionedAndMistypedEnvelopes() throws {
        #expect(throws: EnvelopeError.self) { try MessageEnvelope<FaceJob>.decode(Array("{not json".utf8)) }
        let envelope = MessageEnvelope(type: "face.detect", correlationId: "c", appId: nil, deadline: Date(), replyTo: nil,
                                       payload: FaceJob(appId: UUID(), .detect(image: Data([1]))))
        let framed = try envelope.encoded()
        #expect(throws: EnvelopeError.unexpectedType("face.detect")) {
            try MessageEnvelope<FaceJob>.decode(framed, expectingType: "face.identify")
        }
        // The same frame with its JSON saying version 2 (the same length, so the frame still holds together).
        let (from, to) = (Array("\"version\":1".utf8), Array("\"version\":2".utf8))
        var versioned = framed
        let at = try #require((0...(framed.count - from.count)).first { Array(framed[$0..<$0 + from.count]) == from })
        versioned.replaceSubrange(at..<at + from.count, with: to)
        #expect(throws: EnvelopeError.unsupportedVersion(2)) { try MessageEnvelope<FaceJob>.decode(versioned) }
    }

    /// Photos, liveness frames and sealed templates travel as bytes beside the JSON: a 180 KB photo adds 180 KB, not
    /// 240 KB of base64. A message without binary fields stays plain JSON, and one written with base64 still reads.
    @Test func binaryFieldsTravelAsBytesBesideTheJSON() throws {
        let photo = Data((0..<180_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let frames = [Data([1, 2, 3]), Data(), photo.prefix(1000)]
        for job in [FaceJob(appId: UUID(), .identify(image: photo, topK: 5)),
                    FaceJob(appId: UUID(), .liveness(FaceJob.Burst(frames: Array(frames), actions: [.blink])))] {
            let envelope = MessageEnvelope(type: job.kind.messageType, correlationId: "c", appId: nil, deadline: Date().addingTimeInterval(5),
                                           replyTo: nil, payload: job)
            let encoded = try envelope.encoded()
            #expect(encoded.starts(with: Array("FGB1".utf8)))
            let binary = job.image.map(\.count) ?? frames.map(\.count).reduce(0, +)
            #expect(encoded.count < binary + 1_000, "\(encoded.count) bytes for \(binary) bytes of binary fields")
            let decoded = try MessageEnvelope<FaceJob>.decode(encoded)
            #expect(decoded.payload.payload == job.payload)
            let legacy = try FaceGateJSON.encode(envelope)
            #expect(legacy.first == UInt8(ascii: "{") && legacy.count > binary * 4 / 3)
            #expect(try MessageEnvelope<FaceJob>.decode(legacy).payload.payload == job.payload)
        }
        struct Note: Codable, Sendable { var text: String }
        let plain = try MessageEnvelope(type: "note", correlationId: "c", appId: nil, deadline: Date(), replyTo: nil, payload: Note(text: "hi")).encoded()
        #expect(plain.first == UInt8(ascii: "{"))
        #expect(try MessageEnvelope<Note>.decode(plain).payload.text == "hi")
    }

    @Test func brokenFramesAreMalformedEnvelopes() throws {
        let envelope = MessageEnvelope(type: "face.detect", correlationId: "c", appId: nil, deadline: Date(), replyTo: nil,
                                       payload: FaceJob(appId: UUID(), .detect(image: Data(repeating: 9, count: 64))))
        let framed = try envelope.encoded()
        func header(_ values: [UInt32]) -> [UInt8] { Array("FGB1".utf8) + values.flatMap { withUnsafeBytes(of: $0.bigEndian, Array.init) } }
        // The frame's own JSON, whose image is attachment 0.
        let length = framed[8..<12].reduce(0) { $0 << 8 | Int($1) }
        let json = Array(framed[12..<12 + length])
        let broken: [(String, [UInt8])] = [
            ("cut inside the photo", Array(framed.dropLast(10))),
            ("cut inside a length", Array(framed.prefix(6))),
            ("bytes after the last part", framed + [0]),
            ("absurd attachment count", header([1_000_000, 2]) + Array("{}".utf8)),
            ("an index with no attachment", header([0, UInt32(json.count)]) + json),
            ("the JSON cut short", header([1, UInt32(json.count - 1)]) + json.dropLast() + header([0]).dropFirst(4)),
        ]
        for (name, bytes) in broken {
            #expect(throws: EnvelopeError.self, "\(name)") { try MessageEnvelope<FaceJob>.decode(bytes) }
        }
    }

    @Test func timestampsAreRFC3339UTCWithMilliseconds() {
        let date = Date(timeIntervalSince1970: 1_764_674_709.5)
        let text = RFC3339.string(from: date)
        #expect(text == "2025-12-02T11:25:09.500Z")
        #expect(RFC3339.date(from: text) == date)
        #expect(RFC3339.date(from: "2025-12-02T11:25:09Z") != nil)
        #expect(RFC3339.date(from: "yesterday") == nil)
    }
}

@Suite struct TransactionChainTests {
    func record(outcome: String = "SUCCESS", detail: [String: String] = [:]) -> TransactionRecord {
        TransactionRecord(id: UUID(uuidString: "6f1d4c1e-8a55-4b36-9d2b-0f6c2a7b9e10")!, appId: UUID(uuidString: "0b8f7a2e-1111-4c3d-8e9f-aaaaaaaaaaaa")!,
                          kind: "face.login", outcome: outcome, userId: nil, deviceId: "phone-1", clientIp: "127.0.0.1", score: 0.31,
                          latencyMs: 42, createdAt: Date(timeIntervalSince1970: 1_764_674_709.123), detail: detail)
    }

    static let key = [UInt8](repeating: 7, count: 32)

    @Test func anyChangedFieldChangesTheHash() {
        let base = record().rowHash(previousHash: TransactionRecord.genesisHash, chainSeq: 1, key: Self.key)
        #expect(base.count == 32)
        #expect(record(outcome: "NO_MATCH_FACE").rowHash(previousHash: TransactionRecord.genesisHash, chainSeq: 1, key: Self.key) != base)
        #expect(record().rowHash(previousHash: TransactionRecord.genesisHash, chainSeq: 2, key: Self.key) != base)
        #expect(record().rowHash(previousHash: [UInt8](repeating: 1, count: 32), chainSeq: 1, key: Self.key) != base)
        #expect(record(detail: ["a": "b"]).rowHash(previousHash: TransactionRecord.genesisHash, chainSeq: 1, key: Self.key) != base)
    }

    /// Without the key, nobody recomputes a keyed row's hash: not from the plain SHA-256, not with another key.
    @Test func theKeyedHashNeedsTheKey() {
        let keyed = record().rowHash(previousHash: TransactionRecord.genesisHash, chainSeq: 1, key: Self.key)
        #expect(record().rowHash(previousHash: TransactionRecord.genesisHash, chainSeq: 1, key: nil) != keyed)
        #expect(record().rowHash(previousHash: TransactionRecord.genesisHash, chainSeq: 1, key: [UInt8](repeating: 8, count: 32)) != keyed)
        #expect(record().rowHash(previousHash: TransactionRecord.genesisHash, chainSeq: 1, key: nil)
                == SHA256.hash(TransactionRecord.genesisHash + record().canonicalBytes(chainSeq: 1)))
    }

    @Test func lengthPrefixesStopFieldsImitatingEachOther() {
        // "ab"+"c" and "a"+"bc" must not hash alike.
        let one = record(detail: ["ab": "c"]).canonicalBytes(chainSeq: 1)
        let two = record(detail: ["a": "bc"]).canonicalBytes(chainSeq: 1)
        #expect(one != two)
    }

    @Test func createdAtIsKeptToTheMillisecond() {
        #expect(record().createdAt.timeIntervalSince1970 == 1_764_674_709.123)
    }

    @Test func hashSurvivesTheMicrosecondRoundTripOfTheDatabase() {
        // A time read back from PostgreSQL may differ from the one written by a fraction of a microsecond.
        let written = record()
        var read = written
        for nudge in [-0.000_000_4, 0.000_000_4, -0.000_000_9] {
            read.createdAt = Date(timeIntervalSince1970: written.createdAt.timeIntervalSince1970 + nudge)
            #expect(read.rowHash(previousHash: TransactionRecord.genesisHash, chainSeq: 1, key: Self.key)
                    == written.rowHash(previousHash: TransactionRecord.genesisHash, chainSeq: 1, key: Self.key))
        }
    }
}

@Suite struct MatchRuleTests {
    let alice = UUID(), bob = UUID()

    func candidate(_ user: UUID, _ distance: Float) -> FaceCandidate { FaceCandidate(userId: user, templateId: UUID(), distance: distance) }

    @Test func matchesWithinThresholdAndRefusesBeyondIt() {
        let rule = MatchRule(threshold: 0.5, margin: 0.06)
        #expect(rule.decide([candidate(alice, 0.3), candidate(bob, 0.8)]).outcome == .match)
        #expect(rule.decide([candidate(alice, 0.55)]).outcome == .noMatchFace)
        #expect(rule.decide([]).outcome == .noMatchFace)
    }

    @Test func nearTieBetweenTwoPeopleIsAmbiguousButNotBetweenTwoTemplatesOfOne() {
        let rule = MatchRule(threshold: 0.5, margin: 0.06)
        #expect(rule.decide([candidate(alice, 0.30), candidate(bob, 0.33)]).outcome == .ambiguousMatch)
        #expect(rule.decide([candidate(alice, 0.30), candidate(alice, 0.31), candidate(bob, 0.45)]).outcome == .match)
    }

    @Test func mergesShardTopKLists() {
        let merged = MatchRule.merge([[candidate(alice, 0.4), candidate(bob, 0.9)], [candidate(bob, 0.2)]], k: 2)
        #expect(merged.map(\.distance) == [0.2, 0.4])
    }

    /// Two shards, each sure on its own; merged, the two people are 0.10 apart. With the matcher's margin
    /// of 0.15 (not the old hard-coded 0.06) that is a near tie, exactly as one shard holding both would say.
    @Test func shardMergeDecidesWithTheShardsRule() {
        let rule = MatchRule(threshold: 0.9, margin: 0.15)
        var first = FaceJobResult(outcome: .match, candidates: [candidate(alice, 0.40)], shardIndex: 0, shardCount: 2)
        var second = FaceJobResult(outcome: .match, candidates: [candidate(bob, 0.50)], shardIndex: 1, shardCount: 2)
        first.rule = rule
        second.rule = rule
        let job = FaceJob(appId: UUID(), threshold: 0.9, .identify(image: Data([1]), topK: 5))
        let merged = FaceJobResult.merged([first, second], for: job)
        #expect(merged.outcome == .ambiguousMatch)
        #expect(merged.outcome == rule.decide(first.candidates + second.candidates).outcome)
        #expect(merged.rule == rule)
    }

    @Test func oneRuleSaysWhatVerifiesWhatIsPossibleAndWhatIsConfident() {
        let rule = MatchRule(model: .sface2021dec)
        let carol = UUID()
        #expect(rule.verifies(1.0) && !rule.verifies(1.0001))
        #expect(rule.possible([candidate(alice, 0.7), candidate(bob, 1.2), candidate(carol, 0.99)]).map(\.userId) == [alice, carol])
        #expect(rule.isConfident(0.94) && !rule.isConfident(0.96), "within 1.0 by at least the margin 0.05")
        let wide = MatchRule(model: .dlibResNetV1, margin: 0.1)
        #expect(wide.isConfident(0.39) && !wide.isConfident(0.41), "within 0.5 by at least the job's margin 0.1")
    }

    /// Shards that report no rule (they predate it) are merged with the job's numbers, and where it has none with the
    /// strictest of the models' defaults: the job does not name the app's model.
    @Test func shardsWithoutARuleAreMergedWithTheJobsNumbersOrTheStrictestDefaults() {
        let first = FaceJobResult(outcome: .match, candidates: [candidate(alice, 0.80)], shardIndex: 0, shardCount: 2)
        let second = FaceJobResult(outcome: .noMatchFace, candidates: [candidate(bob, 0.90)], shardIndex: 1, shardCount: 2)
        var job = FaceJob(appId: UUID(), threshold: 1.0, .identify(image: Data([1]), topK: 5))  // an SFace app's threshold, as the gateway sends it
        let merged = FaceJobResult.merged([first, second], for: job)
        #expect(merged.rule == MatchRule(threshold: 1.0, margin: 0.06), "the widest default margin")
        #expect(merged.outcome == .match, "0.80 against 0.90 is no tie even under the widest margin")
        job.margin = 0.2
        #expect(FaceJobResult.merged([first, second], for: job).outcome == .ambiguousMatch, "the job's own margin wins")
        job = FaceJob(appId: UUID(), .identify(image: Data([1]), topK: 5))
        #expect(FaceJobResult.merged([first, second], for: job).outcome == .noMatchFace, "no threshold: the smallest default, 0.5")
    }
}

@Suite struct SealingTests {
    @Test func templatesOpenOnlyForTheirOwnRowAndKey() throws {
        let sealer = try Sealer(key: SecureRandom.bytes(32))
        let embedding: [Float] = (0..<128).map { Float($0) / 128 - 0.5 }
        let id = UUID()
        let sealed = try sealer.sealTemplate(embedding, templateId: id)
        #expect(try sealer.openTemplate(sealed, templateId: id) == embedding)
        #expect(throws: SealingError.openFailed) { try sealer.openTemplate(sealed, templateId: UUID()) }
        #expect(throws: SealingError.openFailed) { try Sealer(key: SecureRandom.bytes(32)).openTemplate(sealed, templateId: id) }
        var tampered = sealed
        tampered[20] ^= 1
        #expect(throws: SealingError.openFailed) { try sealer.openTemplate(tampered, templateId: id) }
    }

    @Test func refusesAKeyOfTheWrongSize() {
        #expect(throws: SealingError.badKey) { try Sealer(base64Key: Data(repeating: 1, count: 16).base64EncodedString()) }
        #expect(throws: SealingError.badKey) { try Sealer(base64Key: "not base64!") }
    }

    @Test func institutionKeysOpenOnlyWithTheVerifierKeyAndTheirApp() throws {
        let verifier = X25519PrivateKey()
        let appId = UUID()
        let key = SecureRandom.bytes(16)
        let box = try CTIDKeyBox.seal(key, appId: appId, to: verifier.publicKey.rawRepresentation)
        #expect(try CTIDKeyBox.open(box, appId: appId, with: verifier.rawRepresentation) == key)
        #expect(throws: (any Error).self) { try CTIDKeyBox.open(box, appId: UUID(), with: verifier.rawRepresentation) }
        #expect(throws: (any Error).self) { try CTIDKeyBox.open(box, appId: appId, with: X25519PrivateKey().rawRepresentation) }
    }
}

@Suite struct TopicsTests {
    @Test func prefixesEveryTopicAndListsDeadLetters() {
        let topics = Topics(prefix: "t1.")
        #expect(topics.faceJobs == "t1.face.jobs.v1")
        #expect(topics.replies(service: "auth-gateway") == "t1.replies.auth-gateway.v1")
        let names = topics.all.map(\.name)
        #expect(names.contains("t1.face.jobs.v1.dlq"))
        #expect(names.allSatisfy { $0.hasPrefix("t1.") })
        #expect(topics.all.first { $0.name == topics.galleryChanges }?.config["cleanup.policy"] == "compact")
        // Topics whose messages carry photos, portraits or document data are created with a short retention.
        for name in [topics.faceJobs, topics.ctidJobs, topics.kioskCommands, topics.replies(service: "auth-gateway")] {
            #expect(topics.all.first { $0.name == name }?.config["retention.ms"] == "600000", "\(name)")
        }
    }
}

@Suite struct ErrorCodeTests {
    @Test func seedEventCodesKeepTheirWireNamesAndStatuses() {
        #expect(ErrorCode.moduleDisabled.httpStatus == 403)
        #expect(ErrorCode.accessTokenExpired.httpStatus == 401)
        #expect(ErrorCode.noMatchFace.rawValue == "NO_MATCH_FACE")
        #expect(ErrorCode.rateLimited.httpStatus == 429)
        #expect(FaceOutcome.timeout.errorCode == .serviceUnavailable)
    }
}

@Suite struct OperatingPointTests {
    /// A target false-match rate becomes the model's threshold by its calibration table, and back.
    @Test func falseMatchRatesMapToThresholdsAndBack() throws {
        #expect(FaceModel.sface2021dec.threshold(forFalseMatchRate: 1e-5) == 1.020)
        #expect(FaceModel.dlibResNetV1.threshold(forFalseMatchRate: 1e-6) == 0.412)
        let between = try #require(FaceModel.sface2021dec.threshold(forFalseMatchRate: 3e-6))
        #expect(between > 0.978 && between < 1.020)
        #expect(FaceModel.sface2021dec.threshold(forFalseMatchRate: 1e-2) == nil)
        #expect(FaceModel.sface2021dec.threshold(forFalseMatchRate: 1e-9) == nil)
        for model in FaceModel.allCases {
            // Stricter targets, lower thresholds; every table threshold lies in the range an app may set.
            let thresholds = model.falseMatchCalibration.map(\.threshold)
            #expect(thresholds == thresholds.sorted(by: >))
            #expect(thresholds.allSatisfy { model.thresholdRange.contains($0) })
            for rate in [1e-3, 2e-4, 1e-5, 7e-7, 1e-8] {
                let threshold = try #require(model.threshold(forFalseMatchRate: rate))
                let back = try #require(model.falseMatchRate(atThreshold: threshold))
                #expect(abs(log10(back) - log10(rate)) < 1e-3)
            }
        }
        // The defaults, as rates: SFace's 1.0 is about 3 in a million per comparison.
        let sface = try #require(FaceModel.sface2021dec.falseMatchRate(atThreshold: FaceModel.sface2021dec.defaultThreshold))
        #expect(sface > 1e-6 && sface < 1e-5)
    }
}

/// The HTTP answers the gateway writes and the client reads are one set of types: their JSON as both sides see it.
@Suite struct ClientAnswerTests {
    func json(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value)) as? [String: Any])
    }

    @Test func aFaceLoginAnswerIsToldApartByItsStatus() throws {
        let identity = FaceGateIdentity(identityToken: "eyJ.x.y", expiresIn: 300, transactionId: "t-1", userId: "u-1")
        let success = FaceLoginOutcome.success(identity)
        #expect(try json(success) as NSDictionary == ["status": "SUCCESS", "identityToken": "eyJ.x.y", "expiresIn": 300,
                                                     "transactionId": "t-1", "userId": "u-1"] as NSDictionary)
        #expect(try JSONDecoder().decode(FaceLoginOutcome.self, from: try JSONEncoder().encode(success)) == success)
        // A device-credential assertion answers the identity alone, with the same status.
        #expect(try json(identity)["status"] as? String == "SUCCESS")
        let pending = FaceLoginOutcome.confirmationRequired(FaceLoginConfirmation(confirmationId: "c-1", transactionId: "t-2", expiresIn: 120))
        #expect(try json(pending)["status"] as? String == "CONFIRM_REQUIRED")
        #expect(try JSONDecoder().decode(FaceLoginOutcome.self, from: try JSONEncoder().encode(pending)) == pending)
        let older = Data(#"{"status": "CONFIRM_REQUIRED", "confirmationId": "c-1", "transactionId": "t-2"}"#.utf8)
        #expect(try JSONDecoder().decode(FaceLoginOutcome.self, from: older)
                == .confirmationRequired(FaceLoginConfirmation(confirmationId: "c-1", transactionId: "t-2", expiresIn: nil)))
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(FaceLoginOutcome.self, from: Data(#"{"status": "MAYBE", "transactionId": "t"}"#.utf8))
        }
    }

    @Test func aSerialAnswerCarriesNoModeUntilTheClientSetsIt() throws {
        let serial = CTIDSerialNumber(bizSerialNum: "0123", randNum: "654321", expiresIn: 600)
        #expect(try json(serial).keys.sorted() == ["bizSerialNum", "expiresIn", "randNum"])
        var asked = serial
        asked.authMode = "0x42"
        #expect(try JSONDecoder().decode(CTIDSerialNumber.self, from: try JSONEncoder().encode(asked)) == asked)
    }
}

/// Job payloads are one enum case per kind, and travel as the flat objects they always were.
@Suite struct JobPayloadTests {
    func json(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value)) as? [String: Any])
    }

    @Test func aCTIDJobCarriesOnlyItsKindsFields() throws {
        let appId = UUID()
        let register = CTIDJob(appId: appId, .register(CTIDRegistration(number: "110105194912310029", name: "张三", validDateStart: "20200101",
                                                                        validDateEnd: "长期")))
        #expect(try json(register).keys.sorted() == ["appId", "kind", "registration"] && register.messageType == "ctid.register")
        let verify = CTIDJob(appId: appId, .verify(envelope: nil, deviceId: "phone-1", clientIp: nil))
        #expect(try json(verify).keys.sorted() == ["appId", "deviceId", "kind"] && verify.messageType == "ctid.verify")
        for job in [register, verify] {
            #expect(try JSONDecoder().decode(CTIDJob.self, from: try JSONEncoder().encode(job)).payload == job.payload)
        }
        // A registration job without its entry is no job.
        let empty = Data(#"{"kind": "register", "appId": "\#(appId.uuidString)"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(CTIDJob.self, from: empty) }
    }

    @Test func aFaceJobCarriesItsKindsFieldsAndWhatOlderMatchersRequire() throws {
        let (app, user, template) = (UUID(), UUID(), UUID())
        let image = Data([0xFF, 0xD8])
        let jobs: [(FaceJob.Payload, [String])] = [
            (.identify(image: image, topK: 7), ["image"]),
            (.verify(image: image, against: .image(Data([1]))), ["image", "referenceImage"]),
            (.verify(image: image, against: .user(user)), ["image", "userId"]),
            (.verify(image: image, against: .sealedTemplate(Data([2]))), ["image", "referenceSealedTemplate"]),
            (.enroll(FaceJob.Enrollment(image: image, userId: user, templateLimit: 3, keepPhoto: true)), ["image", "keepPhoto", "templateLimit", "userId"]),
            (.detect(image: image), ["image"]),
            (.liveness(FaceJob.Burst(frames: [image], actions: [.turnLeft], identify: true)), ["actions", "frames", "identify"]),
            (.template(image: image), ["image"]),
            (.reembed(model: .sface2021dec, templateIds: [template]), ["model", "templateIds"]),
            (.search(template: Data([3]), topK: 7), ["probeTemplate"]),
        ]
        for (payload, fields) in jobs {
            let job = FaceJob(appId: app, threshold: 0.9, payload)
            // `topK` and `duplicateCheck` are written for every kind: matchers from before payloads require them.
            #expect(try json(job).keys.sorted() == (["appId", "duplicateCheck", "kind", "threshold", "topK"] + fields).sorted(), "\(job.kind)")
            let decoded = try JSONDecoder().decode(FaceJob.self, from: try JSONEncoder().encode(job))
            #expect(decoded.payload == payload && decoded.threshold == 0.9 && decoded.messageType == "face.\(job.kind.rawValue)")
        }
        #expect(try json(FaceJob(appId: app, .identify(image: image, topK: 7)))["topK"] as? Int == 7)
        // A sharded probe: the shard that takes it, and that it stops at the embedding; a bound key's users.
        var probe = FaceJob(appId: app, boundUsers: [user], .identify(image: image, topK: 5))
        (probe.shard, probe.probeOnly) = (1, true)
        let probed = try JSONDecoder().decode(FaceJob.self, from: try JSONEncoder().encode(probe))
        #expect(probed.shard == 1 && probed.probeOnly && probed.boundUsers == [user])
        #expect(try json(FaceJob(appId: app, .identify(image: image, topK: 5))).keys.contains { ["shard", "probeOnly", "boundUsers"].contains($0) } == false)
        // A job as senders from before payloads wrote it: every field, the unused ones empty.
        let older = Data(#"{"kind": "enroll", "appId": "\#(app.uuidString)", "image": "/9g=", "userId": "\#(user.uuidString)", "topK": 5, "duplicateCheck": true}"#.utf8)
        #expect(try JSONDecoder().decode(FaceJob.self, from: older).payload
                == .enroll(FaceJob.Enrollment(image: image, userId: user, duplicateCheck: true, keepPhoto: false)))
        let imageless = Data(#"{"kind": "identify", "appId": "\#(app.uuidString)", "topK": 5, "duplicateCheck": true}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(FaceJob.self, from: imageless) }
    }

    @Test func aKioskCommandCarriesOnlyItsStepsFields() throws {
        let (session, app) = (UUID(), UUID())
        let commands: [(KioskCommand.Payload, [String])] = [
            (.create(tokenHash: Data([1, 2])), ["tokenHash"]),
            (.selfie(frames: [Data([3])], actions: [.turnLeft]), ["actions", "frames"]),
            (.selfie(frames: [Data([3])], actions: nil), ["frames"]),
            (.idFront(image: Data([4])), ["image"]),
            (.idBack(image: Data([5])), ["image"]),
            (.cancel, []),
        ]
        for (payload, fields) in commands {
            let command = KioskCommand(sessionId: session, appId: app, deviceId: "kiosk-1", payload)
            #expect(try json(command).keys.sorted() == (["appId", "commandId", "deviceId", "sessionId", "step"] + fields).sorted(), "\(command.step)")
            let decoded = try JSONDecoder().decode(KioskCommand.self, from: try JSONEncoder().encode(command))
            #expect(decoded.payload == payload && decoded.commandId == command.commandId && decoded.messageType == "kiosk.command")
        }
        let imageless = Data(#"{"commandId": "\#(UUID().uuidString)", "sessionId": "\#(session.uuidString)", "appId": "\#(app.uuidString)", "step": "idBack"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(KioskCommand.self, from: imageless) }
    }
}
