import Crypto
import FaceEngine
import FaceGateCore
import IdentityRecords
import FaceGateTestSupport
import Foundation
@testable import MatcherWorker
import ServiceKit
import Synchronization
import Testing

/// The matcher's job handler with the real SFace engine on the real test photos, in a second or two: templates are kept
/// by an in-memory twin of the template store (sealed with the real platform key), the gallery is the matcher's own
/// in-memory gallery, and no broker or PostgreSQL is started (the runtime's are never reached). End to end over the
/// broker and PostgreSQL: IntegrationTests' FaceLoginTests, GallerySearchTests and DPoPTests.
@Suite struct FaceJobHandlerTests {
    let appId = UUID()
    let user = UUID()
    let templates = InMemoryTemplates()
    let changes = RecordedGalleryChanges()
    let runtime: ServiceRuntime
    let handler: FaceJobHandler

    init() throws {
        let models = try #require(ProcessInfo.processInfo.environment["FACEGATE_MODEL_DIR"], "FACEGATE_MODEL_DIR is not set")
        let configuration = try MatcherConfiguration(environment: Environment(OfflineServiceEnvironment().values(for: "matcher-worker", [
            "FACEGATE_MODEL_DIR": models, "FACEGATE_SEALING_KEY": Data(SecureRandom.bytes(32)).base64EncodedString(),
            "MATCHER_MODELS": "sface-2021dec", "MATCHER_ENGINES": "1",
        ])))
        runtime = try ServiceRuntime(configuration: configuration.common)
        var engine = FaceEngineConfiguration(modelDirectory: configuration.modelDirectory)
        engine.model = .sface2021dec
        let sealer = try Sealer(key: configuration.sealingKey)
        let store = GalleryStore(database: runtime.database, sealer: sealer, storage: configuration.storage, models: [.sface2021dec],
                                 shardIndex: 0, shardCount: 1, logger: runtime.logger)
        templates.sealer = sealer
        templates.users.withLock { [user] in $0.insert(user) }
        handler = FaceJobHandler(engines: [.sface2021dec: try FaceEnginePool(configuration: engine, count: 1)], store: store, searches: nil,
                                 appModels: EveryApp(model: .sface2021dec), templates: templates, changes: changes, sealer: sealer,
                                 configuration: configuration, runtime: runtime)
    }

    static func photo(_ name: String) throws -> Data {
        let directory = try #require(ProcessInfo.processInfo.environment["FACEGATE_TEST_IMAGES"], "FACEGATE_TEST_IMAGES is not set")
        return try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
    }

    func run(_ payload: FaceJob.Payload, boundUsers: [UUID] = [], messageId: String = UUID().uuidString) async throws -> FaceJobResult {
        try await handler.answer(FaceJob(appId: appId, boundUsers: boundUsers, payload), messageId: messageId)
    }

    func enroll(_ name: String, limit: Int? = nil, messageId: String = UUID().uuidString) async throws -> FaceJobResult {
        try await run(.enroll(FaceJob.Enrollment(image: try Self.photo(name), userId: user, templateLimit: limit)), messageId: messageId)
    }

    /// Faces embedded so far (`facegate_matcher_embeddings_total`).
    var embeddings: Double {
        runtime.metrics.render().split(separator: "\n").first { $0.hasPrefix("facegate_matcher_embeddings_total ") }
            .flatMap { Double($0.split(separator: " ")[1]) } ?? 0
    }

    @Test func anEnrolledFaceIsFoundByAnotherPhotoOfThePersonAndNoOneElse() async throws {
        let enrolled = try await enroll("obama.jpg")
        #expect(enrolled.outcome == .enrolled)
        #expect(changes.sent.map(\.userId) == [user], "the other matchers are told")
        let found = try await run(.identify(image: try Self.photo("obama2.jpg"), topK: 5))
        #expect(found.outcome == .match && found.candidates.first?.userId == user)
        #expect(try #require(found.candidates.first?.distance) < FaceModel.sface2021dec.defaultThreshold)
        #expect(try await run(.identify(image: try Self.photo("biden.jpg"), topK: 5)).outcome == .noMatchFace)
    }

    @Test func anEnrollmentDeliveredTwiceStoresOneTemplateAndAnswersTheSame() async throws {
        let first = try await enroll("obama.jpg", messageId: "enroll-1")
        let again = try await enroll("obama.jpg", messageId: "enroll-1")
        #expect(again.templateId == first.templateId && again.outcome == .enrolled)
        #expect(templates.count == 1 && changes.sent.count == 1)
    }

    @Test func aUserAtTheTemplateLimitIsRefused() async throws {
        #expect(try await enroll("obama.jpg", limit: 1).outcome == .enrolled)
        let refused = try await enroll("obama2.jpg", limit: 1)
        #expect(refused.outcome == .faceLimitReached && templates.count == 1)
    }

    @Test func aLoginFromAKeyBoundToTheUserIsComparedWithItsTemplatesAndEmbeddedOnce() async throws {
        _ = try await enroll("obama.jpg")
        let before = embeddings
        let login = try await run(.identify(image: try Self.photo("obama2.jpg"), topK: 5), boundUsers: [UUID(), user])
        #expect(login.outcome == .match && login.boundMatch == true && login.candidates.first?.userId == user)
        #expect(embeddings - before == 1, "one embedding for the 1:1 comparisons and the search")
    }

    @Test func aPhotoIsCheckedAgainstASealedTemplateOfItsFace() async throws {
        let template = try await run(.template(image: try Self.photo("obama.jpg")))
        let sealed = try #require(template.sealedTemplate)
        #expect(template.outcome == .detected)
        #expect(try await run(.verify(image: try Self.photo("obama2.jpg"), against: .sealedTemplate(sealed))).outcome == .match)
        #expect(try await run(.verify(image: try Self.photo("biden.jpg"), against: .sealedTemplate(sealed))).outcome == .noMatchFace)
        var forged = sealed
        forged[forged.startIndex] ^= 1
        #expect(try await run(.verify(image: try Self.photo("obama2.jpg"), against: .sealedTemplate(forged))).outcome != .match,
                "a template that does not open under the platform key matches nothing")
    }

    @Test func bytesThatAreNoImageAreRefusedAsSuch() async throws {
        let result = try await run(.identify(image: Data("not a photo".utf8), topK: 5))
        #expect(result.outcome == .imageFormatError)
        #expect(templates.count == 0)
    }

    @Test func aShardDrawsTemplateIdsThatHashToItself() throws {
        let sealer = try Sealer(key: SecureRandom.bytes(32))
        for shard in 0..<3 {
            let store = GalleryStore(database: runtime.database, sealer: sealer, storage: .float32, models: [.sface2021dec],
                                     shardIndex: shard, shardCount: 3, logger: runtime.logger)
            for _ in 0..<50 { #expect(shardIndex(templateId: store.newTemplateId(), shardCount: 3) == shard) }
        }
    }
}

// MARK: - Twins

struct EveryApp: AppModelLookup {
    var model: FaceModel
    func model(of appId: UUID) async throws -> FaceModel { model }
}

/// Templates in memory, sealed and opened with the real platform key; an enrollment's first answer is kept by message id,
/// as `processed_messages` keeps it.
final class InMemoryTemplates: TemplateRecords, @unchecked Sendable {  // `sealer` is set once, before any job runs
    var sealer: Sealer!
    let users = Mutex<Set<UUID>>([])
    private let state = Mutex<(templates: [(template: TemplateStore.NewTemplate, sealed: [UInt8])], answers: [String: FaceJobResult])>(([], [:]))
    var count: Int { state.withLock { $0.templates.count } }

    func recordedAnswer(toEnrollment messageId: String) async throws -> FaceJobResult? { state.withLock { $0.answers[messageId] } }

    func count(appId: UUID, userId: UUID, model: FaceModel) async throws -> Int {
        state.withLock { $0.templates.filter { $0.template.appId == appId && $0.template.userId == userId && $0.template.model == model }.count }
    }

    func insert(_ template: TemplateStore.NewTemplate, limit: Int?, onlyIfNone: Bool,
                answering record: (messageId: String, answer: @Sendable (_ photoKept: Bool) -> FaceJobResult)?) async throws -> TemplateStore.Stored {
        let sealed = try sealer.sealTemplate(template.embedding, templateId: template.id)
        let known = users.withLock { $0.contains(template.userId) }
        return state.withLock { state in
            if let record, let previous = state.answers[record.messageId] { return .answeredBefore(previous) }
            let held = state.templates.filter { $0.template.userId == template.userId && $0.template.model == template.model }.count
            if onlyIfNone, held > 0 { return .alreadyHeld }
            if let limit, held >= limit { return .limitReached(held: held) }
            guard known else { return .userNotFound }
            state.templates.append((template, sealed))
            if let record { state.answers[record.messageId] = record.answer(false) }
            return .inserted(changeSeq: Int64(state.templates.count), photoKept: false)
        }
    }

    func embeddings(appId: UUID, userId: UUID, model: FaceModel) async throws -> [(templateId: UUID, embedding: [Float])] {
        let held = state.withLock { $0.templates.filter { $0.template.appId == appId && $0.template.userId == userId && $0.template.model == model } }
        return try held.map { ($0.template.id, try sealer.openTemplate($0.sealed, templateId: $0.template.id)) }
    }

    func keptPhotos(appId: UUID, templateIds: [UUID]) async throws -> [TemplateStore.KeptPhoto] { [] }
}

final class RecordedGalleryChanges: GalleryChangeBroadcast {
    private let state = Mutex<[GalleryChange]>([])
    var sent: [GalleryChange] { state.withLock { $0 } }

    func broadcast(_ change: GalleryChange) async throws { state.withLock { $0.append(change) } }
}
