import AuditRecords
import CTIDRecords
@testable import CTIDVerifier
import Crypto
import FaceGateCore
import FaceGateTestSupport
import Foundation
import ServiceKit
import Synchronization
import Testing

/// The ctid-verifier's job handler over in-memory twins, in milliseconds: the envelope is opened with the app's real
/// institution key (sealed to the verifier's X25519 key, as in production), serials are spent once, the registry is
/// consulted, the portrait goes to the matcher as a face job (a scripted twin of the matcher's answer), and every
/// attempt is one transaction. End to end over the broker and PostgreSQL: IntegrationTests' CTIDTests.
@Suite struct CTIDJobHandlerTests {
    let appId = UUID()
    let institutionKey = SecureRandom.bytes(16)
    let records = InMemoryVerifierRecords()
    let serials = InMemoryCTIDSerials()
    let registry = InMemoryIdentityRegistry()
    let matcher = ScriptedFaceJobs()
    let transactions = RecordedTransactions()
    let handler: CTIDJobHandler
    static let number = "11010519491231002X"
    static let template = Data("a sealed reference template".utf8)

    init() throws {
        let verifierKey = X25519PrivateKey()
        let app = VerifierApp(sealedKey: try CTIDKeyBox.seal(institutionKey, appId: appId, to: verifierKey.publicKey.rawRepresentation),
                              matchThreshold: 1.0)
        records.apps.withLock { [appId] in $0[appId] = app }
        handler = CTIDJobHandler(records: records, serials: serials, registry: registry, faces: matcher, transactions: transactions,
                                 privateKey: verifierKey.rawRepresentation, logger: Logger(label: "ctid-test"))
        registry.identities.withLock { $0[Self.number] = RegisteredIdentity(name: "张三", validStart: "20200101", validEnd: "长期",
                                                                          sealedTemplate: Self.template) }
    }

    /// A fresh serial of `mode`, and the request that claims the registered identity with it.
    func claim(_ mode: CTIDAuthMode, name: String = "张三", photo: Data? = nil) async throws -> CTIDVerificationRequest {
        let serial = UUID().uuidString
        try await serials.issue(serial, appId: appId, authMode: mode, randNum: "123456", ttlSeconds: 600)
        return CTIDVerificationRequest(bizSerialNum: serial, randNum: "123456", idNumber: Self.number, name: name, photoData: photo)
    }

    func verify(_ request: CTIDVerificationRequest, messageId: String = UUID().uuidString,
                tamper: (inout CTIDEnvelope) -> Void = { _ in }) async throws -> CTIDJobResult {
        var envelope = try CTIDEnvelope.seal(try FaceGateJSON.encode(request), appId: appId, key: institutionKey)
        tamper(&envelope)
        return try await handler.handle(CTIDJob(appId: appId, .verify(envelope: envelope, deviceId: "phone-1", clientIp: "192.0.2.7")),
                                        messageId: messageId)
    }

    /// The verifier's answer, opened as the client app opens it.
    func answer(_ result: CTIDJobResult) throws -> CTIDVerificationAnswer {
        let envelope = try #require(result.envelope)
        return try FaceGateJSON.decode(CTIDVerificationAnswer.self, from: try envelope.open(expectedAppId: appId, key: institutionKey))
    }

    @Test func aClaimThatHoldsIsVerifiedAndItsSerialServesOnce() async throws {
        let request = try await claim(.nameNumber)
        let first = try await verify(request)
        #expect(first.outcome == .answered && first.attempt == .success)
        #expect(try answer(first).resultCode == CTIDResultCode.verified.rawValue)
        #expect(try answer(first).authResult == "")
        let recorded = try #require(transactions.records.first)
        #expect(recorded.kind == "ctid.verify" && recorded.outcome == "SUCCESS" && recorded.id == first.transactionId)
        #expect(recorded.detail["idNumber"] == "1101**********002X", "the number is kept masked, never whole")

        let replay = try await verify(request)
        #expect(try answer(replay).resultCode == CTIDResultCode.serialInvalid.rawValue)
        #expect(replay.attempt == .failure)
        #expect(transactions.records.count == 2, "every attempt is one transaction")
    }

    @Test func aRedeliveredJobGetsItsFirstAnswerAndNoSecondTransaction() async throws {
        let request = try await claim(.nameNumber)
        let first = try await verify(request, messageId: "message-1")
        let again = try await verify(request, messageId: "message-1")
        #expect(again.envelope == first.envelope && again.transactionId == first.transactionId)
        #expect(transactions.records.count == 1)
    }

    @Test func aTamperedEnvelopeIsRefusedBeforeItsSerialIsSpent() async throws {
        let request = try await claim(.nameNumber)
        let forged = try await verify(request) { envelope in
            var bytes = [UInt8](Data(base64Encoded: envelope.data)!)
            bytes[0] ^= 1
            envelope.data = Data(bytes).base64EncodedString()
        }
        #expect(forged.outcome == .invalidEnvelope && forged.envelope == nil)
        #expect(transactions.records.map(\.outcome) == ["INVALID_ENVELOPE"])
        #expect(try answer(try await verify(request)).resultCode == CTIDResultCode.verified.rawValue, "the serial was not spent")
    }

    @Test func aWrongNameIsAMismatchOfTheIdentityAndCountsAgainstIt() async throws {
        let result = try await verify(try await claim(.nameNumber, name: "李四"))
        #expect(try answer(result).resultCode == CTIDResultCode.mismatch.rawValue)
        #expect(try answer(result).authResult == "5XXX")
        #expect(result.attempt == .failure && result.registryEntry == registry.attemptKey(appId: appId, number: Self.number))
    }

    @Test func thePortraitIsJudgedByTheMatcherAtTheAppsThreshold() async throws {
        let photo = Data("a portrait".utf8)
        matcher.answer(FaceJobResult(outcome: .match, candidates: [FaceCandidate(userId: UUID(), templateId: UUID(), distance: 0.8)]))
        let same = try await verify(try await claim(.portraitNameNumber, photo: photo))
        #expect(try answer(same).resultCode == CTIDResultCode.verified.rawValue)
        let job = try #require(matcher.jobs.first)
        #expect(job.threshold == 1.0)
        guard case .verify(let image, .sealedTemplate(let template)) = job.payload else {
            Issue.record("not a 1:1 check against the registered portrait: \(job.payload)")
            return
        }
        #expect(image == photo && template == Self.template)
        #expect(transactions.records.last?.score == 0.8)

        // Beyond the threshold: "suspected" within 0.1 of it, else "different".
        matcher.answer(FaceJobResult(outcome: .noMatchFace, candidates: [FaceCandidate(userId: UUID(), templateId: UUID(), distance: 1.05)]),
                       FaceJobResult(outcome: .noMatchFace, candidates: [FaceCandidate(userId: UUID(), templateId: UUID(), distance: 1.4)]))
        #expect(try answer(try await verify(try await claim(.portraitNameNumber, photo: photo))).authResult == "02XX")
        #expect(try answer(try await verify(try await claim(.portraitNameNumber, photo: photo))).authResult == "01XX")
    }

    @Test func aMatcherThatDoesNotAnswerIsAnsweredAsUnavailableNeverAsAVerdict() async throws {
        let result = try await verify(try await claim(.portraitNameNumber, photo: Data("a portrait".utf8)))
        #expect(try answer(result).resultCode == CTIDResultCode.unavailable.rawValue)
        #expect(result.attempt == .neutral, "a check that did not run counts neither way")
    }

    @Test func registrationKeepsTheMatchersSealedTemplate() async throws {
        let sealed = Data("the matcher's sealed template".utf8)
        var detected = FaceJobResult(outcome: .detected)
        detected.sealedTemplate = sealed
        matcher.answer(detected, FaceJobResult(outcome: .noFace, message: "no face"))
        let entry = CTIDRegistration(number: "440524188001010014", name: "李四", validDateStart: "20200101", validDateEnd: "20400101",
                                     photoData: Data("a portrait".utf8))
        let registered = try await handler.handle(CTIDJob(appId: appId, .register(entry)), messageId: "r1")
        #expect(registered.outcome == .registered)
        #expect(registry.identities.withLock { $0["440524188001010014"]?.sealedTemplate } == sealed)

        let noFace = try await handler.handle(CTIDJob(appId: appId, .register(entry)), messageId: "r2")
        #expect(noFace.outcome == .imageRejected)
        var malformed = entry
        malformed.number = "440524188001010015"
        #expect(try await handler.handle(CTIDJob(appId: appId, .register(malformed)), messageId: "r3").outcome == .invalidRequest)
        #expect(try await handler.handle(CTIDJob(appId: UUID(), .register(entry)), messageId: "r4").outcome == .notFound)
    }
}

// MARK: - Twins

final class InMemoryVerifierRecords: VerifierRecords {
    let apps = Mutex<[UUID: VerifierApp]>([:])
    private let answers = Mutex<[String: [UInt8]]>([:])

    func app(_ id: UUID) async throws -> VerifierApp? { apps.withLock { $0[id] } }
    func answer(to messageId: String) async throws -> [UInt8]? { answers.withLock { $0[messageId] } }
    func keep(_ answer: [UInt8], for messageId: String) async throws { answers.withLock { if $0[messageId] == nil { $0[messageId] = answer } } }
}
