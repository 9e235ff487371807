import AppRecords
@testable import AuthGateway
import FaceGateCore
import Foundation
import IdentityRecords
import Testing

/// `FaceModelMigration` over the in-memory roster and apps and a scripted matcher: what the operator is told, which
/// photos go to the matcher in which pages, when a switch is refused. The same flows on real models and photos are
/// IntegrationTests' FaceModelTests.
@Suite struct FaceModelMigrationUseCaseTests {
    let clock = FakeClock()
    let roster: InMemoryUserRoster
    let apps: InMemoryApps
    let matcher = ScriptedMatcher()

    init() {
        roster = InMemoryUserRoster(clock: clock)
        apps = InMemoryApps(clock: clock)
    }

    var migration: FaceModelMigration { FaceModelMigration(store: roster, apps: apps, matcher: matcher, reembedPage: 2) }

    /// A dlib app in the in-memory apps.
    func dlibApp() async throws -> AppRecord {
        let id = UUID()
        var settings = StoreContracts.AppStoreContract.settings()
        settings.matchThreshold = FaceModel.dlibResNetV1.defaultThreshold
        try await apps.create(id, name: "app", secretHash: [], ctidKeySealed: [], faceModel: .dlibResNetV1, settings: settings)
        return try #require(try await apps.find(id))
    }

    /// A user of the app holding a dlib template (with a kept photo or not), and an SFace one when `ready`.
    @discardableResult
    func user(_ app: AppRecord, _ number: String, keptPhoto: Bool = false, ready: Bool = false, template: UUID = UUID()) async throws -> UUID {
        let id = UUID()
        #expect(try await roster.create(id, appId: app.id, employeeNumber: number, name: number))
        roster.addTemplate(template, user: id, appId: app.id, model: .dlibResNetV1, keptPhoto: keptPhoto)
        if ready { roster.addTemplate(user: id, appId: app.id, model: .sface2021dec) }
        clock.advance(seconds: 1)
        return id
    }

    func reembedded(_ source: UUID, _ user: UUID, _ outcome: FaceOutcome = .enrolled) -> ReembedOutcome {
        ReembedOutcome(sourceTemplateId: source, userId: user, outcome: outcome, templateId: outcome == .enrolled ? UUID() : nil,
                       message: outcome == .enrolled ? nil : "no face")
    }

    @Test func theStatusCountsTheReadyAndListsTheRestOldestFirst() async throws {
        let app = try await dlibApp()
        #expect(try await migration.status(app, to: .sface2021dec).readyShare == 1, "no users: nothing to wait for")
        let first = try await user(app, "E1")
        try await user(app, "E2", ready: true)
        let third = try await user(app, "E3", keptPhoto: true)
        let status = try await migration.status(app, to: .sface2021dec)
        #expect(status.from == .dlibResNetV1 && status.to == .sface2021dec && status.appId == app.id.wire)
        #expect(status.users == 3 && status.ready == 1 && status.keptPhotos == 1)
        #expect(abs(status.readyShare - 1.0 / 3) < 1e-9)
        #expect(status.notReady == [.init(userId: first.wire, employeeNumber: "E1", keptPhoto: false),
                                    .init(userId: third.wire, employeeNumber: "E3", keptPhoto: true)])
        #expect(try FaceModelMigration.target(nil) == FaceModel.defaultForNewApps)
        #expect(await errorCode { try FaceModelMigration.target("arcface") } == .invalidRequest)
    }

    @Test func keptPhotosGoToTheMatcherAPageAtATimeAndTheRefusedAreNamed() async throws {
        let app = try await dlibApp()
        let templates = (0..<3).map { _ in UUID() }.sorted { $0.wire < $1.wire }
        var users: [UUID] = []
        for (index, template) in templates.enumerated() { users.append(try await user(app, "K\(index)", keptPhoto: true, template: template)) }
        try await user(app, "N")
        // The first page is re-embedded; of the second, the one photo is refused.
        var answers = [FaceJobResult(outcome: .enrolled), FaceJobResult(outcome: .enrolled)]
        answers[0].reembedded = [reembedded(templates[0], users[0]), reembedded(templates[1], users[1])]
        answers[1].reembedded = [reembedded(templates[2], users[2], .noFace)]
        matcher.answer(answers[0], answers[1])
        let target = try FaceModelMigration.reembedTarget(app, to: nil)
        var draft = TransactionDraft(appId: app.id, kind: "face.migrate.re-embed")
        let result = try await migration.reembed(app, to: target, after: nil, draft: &draft)
        #expect(matcher.jobs.map(\.payload) == [.reembed(model: .sface2021dec, templateIds: Array(templates[0...1])),
                                                .reembed(model: .sface2021dec, templateIds: [templates[2]])])
        #expect(matcher.jobs.allSatisfy { $0.appId == app.id })
        #expect(result.reembedded == 2 && result.next == nil)
        #expect(result.refused == [.init(userId: users[2].wire, templateId: templates[2].wire, error: ErrorCode.noFace.rawValue, message: "no face")])
        #expect(draft.detail == ["to": "sface-2021dec", "reembedded": "2", "refused": "1"])
        // The status is read after the pages: here the scripted matcher stored nothing, so all four are still waiting.
        #expect(result.status.users == 4 && result.status.ready == 0)
    }

    @Test func aCallOutOfTimeAnswersWhereToContinueAndAMatcherRefusalEndsIt() async throws {
        let app = try await dlibApp()
        let template = UUID()
        try await user(app, "K", keptPhoto: true, template: template)
        var draft = TransactionDraft(appId: app.id, kind: "face.migrate.re-embed")
        var late = migration
        late.reembedBudget = .zero
        let result = try await late.reembed(app, to: .sface2021dec, after: nil, draft: &draft)
        #expect(result.next == "00000000-0000-0000-0000-000000000000" && result.reembedded == 0 && matcher.jobs.isEmpty)
        // A page the matcher refuses as a whole (here a time-out) fails the call; the photos are still there to re-embed.
        matcher.answer(FaceJobResult(outcome: .timeout))
        #expect(await errorCode { try await migration.reembed(app, to: .sface2021dec, after: nil, draft: &draft) } == .serviceUnavailable)
        #expect(matcher.jobs.map(\.payload) == [.reembed(model: .sface2021dec, templateIds: [template])])
        // After the last photo's template: nothing to send.
        #expect(try await migration.reembed(app, to: .sface2021dec, after: template, draft: &draft).reembedded == 0)
        #expect(matcher.jobs.count == 1)
    }

    @Test func photosAreReembeddedOnlyForTheNewModelAndOnlyBeforeTheSwitch() async throws {
        let app = try await dlibApp()
        #expect(await errorCode { try FaceModelMigration.reembedTarget(app, to: .dlibResNetV1) } == .conflict)
        var switched = app
        switched.faceModel = .sface2021dec
        #expect(await errorCode { try FaceModelMigration.reembedTarget(switched, to: nil) } == .conflict)
    }

    @Test func aSwitchChangesModelAndThresholdOnceAndRefusesWhatDoesNotFit() async throws {
        let app = try await dlibApp()
        try await user(app, "E1", ready: true)
        let waiting = try await user(app, "E2")
        #expect(await errorCode { try FaceModelMigration.plan(app, to: .dlibResNetV1, matchThreshold: nil) } == .conflict, "already on it")
        #expect(await errorCode { try FaceModelMigration.plan(app, to: .sface2021dec, matchThreshold: 0.3) } == .invalidRequest, "a dlib-scale threshold")
        var strict = app
        strict.kioskApproval = KioskApprovalPolicy(faceMatchThreshold: 0.4)
        #expect(await errorCode { try FaceModelMigration.plan(strict, to: .sface2021dec, matchThreshold: nil) } == .conflict, "kiosk approval in dlib units")
        let plan = try FaceModelMigration.plan(app, to: .sface2021dec, matchThreshold: nil)
        #expect(plan.threshold == FaceModel.sface2021dec.defaultThreshold)
        var draft = TransactionDraft(appId: app.id, kind: "app.face-model.switch")
        let switched = try await migration.switchModel(app, plan, draft: &draft)
        #expect(switched.ready == 1 && switched.users == 2 && switched.notReady.map(\.userId) == [waiting.wire])
        #expect(draft.detail == ["from": "dlib-resnet-v1", "to": "sface-2021dec", "ready": "1", "users": "2"])
        let stored = try #require(try await apps.find(app.id))
        #expect(stored.faceModel == .sface2021dec && stored.matchThreshold == FaceModel.sface2021dec.defaultThreshold)
        // A second switch from the record read before the first: the model changed meanwhile.
        #expect(await errorCode { try await migration.switchModel(app, plan, draft: &draft) } == .conflict)
    }

    @Test func aConfidentLoginEnrollsTheNewModelOnceAndIsRecorded() async throws {
        let app = try await dlibApp()
        let waiting = try await user(app, "E1")
        let ready = try await user(app, "E2", ready: true)
        #expect(try await migration.reenroll(app: app, user: ready, image: Data([1]), target: .sface2021dec) == nil)
        #expect(matcher.jobs.isEmpty, "a user already ready costs no job")
        var enrolled = FaceJobResult(outcome: .enrolled)
        enrolled.templateId = UUID()
        matcher.answer(enrolled, FaceJobResult(outcome: .lowQuality))
        let record = try #require(try await migration.reenroll(app: app, user: waiting, image: Data([1, 2]), target: .sface2021dec))
        #expect(record.kind == "face.migrate" && record.outcome == "SUCCESS" && record.userId == waiting && record.appId == app.id)
        #expect(record.detail == ["model": "sface-2021dec", "templateId": enrolled.templateId!.wire])
        let job = try #require(matcher.jobs.first)
        #expect(job.payload == .enroll(FaceJob.Enrollment(image: Data([1, 2]), userId: waiting, duplicateCheck: false, model: .sface2021dec)))
        let refused = try #require(try await migration.reenroll(app: app, user: waiting, image: Data([3]), target: .sface2021dec))
        #expect(refused.outcome == ErrorCode.lowQuality.rawValue && refused.detail["templateId"] == "")
    }
}
