import AppRecords
import AuditRecords
@testable import AuthGateway
import Crypto
import FaceGateCore
import Foundation
import IdentityRecords
import JWT
import ServiceKit
import Testing

/// `AppAdministration` over the in-memory app store, with a real X25519 key standing for the ctid-verifier's. Through
/// HTTP: IntegrationTests' IntegratorTests and the console and generated-client suites.
@Suite struct AppAdministrationUseCaseTests {
    let clock = FakeClock()
    let apps: InMemoryApps
    let roster: InMemoryUserRoster
    let ctidVerifier = X25519PrivateKey()

    init() {
        apps = InMemoryApps(clock: clock)
        roster = InMemoryUserRoster(clock: clock)
    }

    var administration: AppAdministration {
        AppAdministration(apps: apps, roster: roster, ctidPublicKey: ctidVerifier.publicKey.rawRepresentation, secretGraceSeconds: 600)
    }

    func created(_ new: AppAdministration.NewApp) async throws -> (AppAdministration.Created, TransactionDraft) {
        var draft = TransactionDraft(appId: platformAppId, kind: "app.create")
        let created = try await administration.create(try administration.check(new), draft: &draft)
        return (created, draft)
    }

    @Test func aNewAppGetsTheDefaultsAndItsSecretsAreStoredOnlyHashedAndSealed() async throws {
        let (created, draft) = try await created(.init(name: "  Branch kiosk \n"))
        #expect(created.name == "Branch kiosk" && created.appSecret.hasPrefix("fgs_"))
        #expect(created.faceModel == .defaultForNewApps && created.matchThreshold == FaceModel.defaultForNewApps.defaultThreshold)
        #expect(created.deviceBinding == .dpop && created.deviceBindingPolicy == .appServerTicket && !created.keepEnrollmentPhotos)
        #expect(created.estimatedFalseMatchRate == created.faceModel.falseMatchRate(atThreshold: created.matchThreshold))
        let appId = try #require(UUID(uuidString: created.appId))
        #expect(draft.detail == ["appId": created.appId, "keepEnrollmentPhotos": "false"])
        let stored = try #require(try await apps.find(appId))
        #expect(stored.secretHash == SHA256.hash(Array(created.appSecret.utf8)))
        // The institution key shown once is sealed to the ctid-verifier, for this app only.
        let sealed = try #require(apps.sealedCTIDKey(of: appId))
        let ctidKey = try #require(Data(base64Encoded: created.ctidKey))
        #expect(ctidKey.count == 16 && sealed.firstRange(of: Array(ctidKey)) == nil)
        #expect(try CTIDKeyBox.open(sealed, appId: appId, with: ctidVerifier.rawRepresentation) == Array(ctidKey))
        #expect(throws: (any Error).self) { try CTIDKeyBox.open(sealed, appId: UUID(), with: ctidVerifier.rawRepresentation) }
        // Two apps never share a secret or a key.
        let (other, _) = try await self.created(.init(name: "Other"))
        #expect(other.appSecret != created.appSecret && other.ctidKey != created.ctidKey && other.appId != created.appId)
    }

    @Test func settingsOutsideTheRulesAreRefusedBeforeAnythingIsStored() async throws {
        let model = FaceModel.defaultForNewApps
        var new = AppAdministration.NewApp(name: "Shop")
        new.settings.matchThreshold = model.thresholdRange.upperBound + 0.01
        #expect(await errorCode { try administration.check(new) } == .invalidRequest)
        new.settings.falseMatchRate = 1e-5
        #expect(await errorCode { try administration.check(new) } == .invalidRequest, "a raw threshold and a rate together")
        new.settings.matchThreshold = nil
        #expect(try administration.check(new).settings.matchThreshold == model.threshold(forFalseMatchRate: 1e-5))
        new.settings.falseMatchRate = 0.5
        #expect(await errorCode { try administration.check(new) } == .invalidRequest)
        new.settings.falseMatchRate = nil
        new.settings.quotas = Quotas(dailyCalls: -1, gallerySize: 7)
        #expect(await errorCode { try administration.check(new) } == .invalidRequest, "a negative quota")
        new.settings.quotas = nil
        new.settings.kioskApproval = KioskApprovalPolicy(faceMatchThreshold: 0.2)
        #expect(await errorCode { try administration.check(new) } == .invalidRequest, "a kiosk approval threshold in dlib units")
        #expect(await errorCode { try administration.check(.init(name: " \n ")) } == .invalidRequest)
        #expect(await errorCode { try administration.check(.init(name: String(repeating: "x", count: 201))) } == .invalidRequest)
        #expect(try await apps.all { _ in true }.isEmpty)
    }

    /// An operating point for a gallery: a target false-positive identification rate over `forGallerySize` templates (else
    /// the larger of the gallery now and 1,000) sets the threshold of the per-comparison rate that compounds to it; the app
    /// then shows its gallery's size and the FPIR its threshold stands for there.
    @Test func aTargetFPIRSetsTheThresholdForTheGalleryAndTheAppShowsItsEstimate() async throws {
        let model = FaceModel.sface2021dec
        var new = AppAdministration.NewApp(name: "Shop", faceModel: model)
        new.settings.falsePositiveIdentificationRate = 0.01
        new.settings.forGallerySize = 10_000
        // 1 − (1 − FMR)^10,000 = 0.01 → FMR ≈ 1.005e-6.
        let perComparison = FaceModel.falseMatchRate(forFalsePositiveIdentificationRate: 0.01, comparisons: 10_000)
        #expect(abs(perComparison - 1.005e-6) < 1e-9)
        let checked = try administration.check(new)
        #expect(checked.settings.matchThreshold == model.threshold(forFalseMatchRate: perComparison))
        // Without a size, a new app is sized for 1,000 templates: a looser threshold than for 10,000.
        new.settings.forGallerySize = nil
        #expect(try administration.check(new).settings.matchThreshold > checked.settings.matchThreshold)
        // One target at a time; a size only with an FPIR; a target the calibration cannot reach for that size.
        new.settings.falseMatchRate = 1e-5
        #expect(await errorCode { try administration.check(new) } == .invalidRequest)
        new.settings.falseMatchRate = nil
        new.settings.forGallerySize = 0
        #expect(await errorCode { try administration.check(new) } == .invalidRequest)
        new.settings.forGallerySize = 10
        #expect(await errorCode { try administration.check(new) } == .invalidRequest, "0.01 over 10 templates needs FMR 1e-3 or more")
        var plain = AppAdministration.NewApp(name: "Plain", faceModel: model)
        plain.settings.forGallerySize = 5000
        #expect(await errorCode { try administration.check(plain) } == .invalidRequest)

        // The app's view counts its templates of its model, and compounds the threshold's FMR over them.
        var draft = TransactionDraft(appId: platformAppId, kind: "app.create")
        let created = try await administration.create(checked, draft: &draft)
        let appId = try #require(UUID(uuidString: created.appId))
        let app = try #require(try await apps.find(appId))
        for _ in 0..<3 { roster.addTemplate(user: UUID(), appId: app.id, model: model) }
        roster.addTemplate(user: UUID(), appId: app.id, model: .dlibResNetV1)
        let view = try await administration.view(app)
        let fmr = try #require(view.estimatedFalseMatchRate)
        #expect(view.galleryTemplates == 3)
        let fpir = try #require(view.estimatedFalsePositiveIdentificationRate)
        #expect(abs(fpir - (1 - pow(1 - fmr, 3))) < 1e-12)
        #expect(app.publicView.galleryTemplates == nil && app.publicView.estimatedFalsePositiveIdentificationRate == nil)
        // A PATCH counts the gallery now (3 templates: 1,000 stands in), or the size it names.
        var changes = AppAdministration.Changes()
        changes.falsePositiveIdentificationRate = 0.001
        var patch = TransactionDraft(appId: app.id, kind: "app.update")
        let patched = try await administration.update(app, with: changes, draft: &patch)
        #expect(patched.matchThreshold == model.threshold(forFalseMatchRate: FaceModel.falseMatchRate(forFalsePositiveIdentificationRate: 0.001, comparisons: 1000)))
    }

    @Test func aNewAppIsOneFlatObjectOfNameModelAndSettings() throws {
        let json = #"{"name": "Shop", "faceModel": "dlib-resnet-v1", "matchThreshold": 0.45, "quotas": {"dailyCalls": 3, "gallerySize": 4}}"#
        let new = try JSONDecoder().decode(AppAdministration.NewApp.self, from: Data(json.utf8))
        #expect(new.name == "Shop" && new.faceModel == .dlibResNetV1)
        #expect(new.settings.matchThreshold == 0.45 && new.settings.quotas == Quotas(dailyCalls: 3, gallerySize: 4) && new.settings.liveness == nil)
        let checked = try administration.check(new)
        #expect(checked.settings.matchThreshold == 0.45 && checked.settings.quotas.dailyCalls == 3 && checked.settings.deviceBinding == .dpop)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(AppAdministration.NewApp.self, from: Data(#"{"faceModel": "sface-2021dec"}"#.utf8)) }
    }

    @Test func aChangeKeepsWhatItDoesNotNameAndIsCheckedLikeANewApp() async throws {
        let (created, _) = try await created(.init(name: "Shop", settings: .init(liveness: LivenessPolicy(faceLogin: .active, kiosk: .active), quotas: Quotas(dailyCalls: 5, gallerySize: 7))))
        let appId = try #require(UUID(uuidString: created.appId))
        let app = try #require(try await apps.find(appId))
        var draft = TransactionDraft(appId: app.id, kind: "app.update")
        var changes = AppAdministration.Changes()
        changes.keepEnrollmentPhotos = true
        let updated = try await administration.update(app, with: changes, draft: &draft)
        #expect(updated.keepEnrollmentPhotos && updated.liveness == app.liveness && updated.quotas == app.quotas)
        #expect(updated.matchThreshold == app.matchThreshold && updated.deviceBinding == app.deviceBinding)
        #expect(draft.detail == ["change": #"{"keepEnrollmentPhotos":[false,true]}"#], "the row names what changed, and only that")
        changes.quotas = Quotas(dailyCalls: -1, gallerySize: 7)
        #expect(await errorCode { try await administration.update(updated, with: changes, draft: &draft) } == .invalidRequest)
        changes.quotas = nil
        changes.matchThreshold = 99
        #expect(await errorCode { try await administration.update(updated, with: changes, draft: &draft) } == .invalidRequest)
        #expect(try await apps.find(app.id)?.quotas == app.quotas)
        // An app that is gone meanwhile.
        #expect(await errorCode {
            try await administration.update(AppRecord(id: UUID(), name: "gone", secretHash: [], modules: .initial, faceModel: app.faceModel,
                                                      matchThreshold: app.matchThreshold, liveness: .initial, deviceBinding: .header,
                                                      deviceBindingPolicy: .employeeNumber, kioskApproval: KioskApprovalPolicy(),
                                                      quotas: .initial, keepEnrollmentPhotos: false, createdAt: Date()),
                                            with: .init(), draft: &draft)
        } == .notFound)
    }

    @Test func aRotatedSecretLeavesThePreviousOneForTheGracePeriod() async throws {
        let (created, _) = try await created(.init(name: "Shop"))
        let appId = try #require(UUID(uuidString: created.appId))
        let app = try #require(try await apps.find(appId))
        var draft = TransactionDraft(appId: app.id, kind: "app.secret.rotate")
        let rotated = try await administration.rotateSecret(of: app, previousSecretValidFor: nil, draft: &draft)
        #expect(rotated.appId == created.appId && rotated.previousSecretValidForSeconds == 600 && rotated.appSecret != created.appSecret)
        let stored = try #require(try await apps.find(app.id))
        #expect(stored.secretHash == SHA256.hash(Array(rotated.appSecret.utf8)) && stored.previousSecretHash == app.secretHash)
        #expect(stored.previousSecretValidUntil == clock.now.addingTimeInterval(600) && stored.secretRotatedAt == clock.now)
        // Revoking the previous secret ends its grace now; a second revocation has nothing left to end.
        try await administration.revokePreviousSecret(of: stored, draft: &draft)
        #expect(draft.detail["previousSecretWasLive"] == "true")
        #expect(try await apps.find(app.id)?.previousSecretValidUntil == clock.now)
        try await administration.revokePreviousSecret(of: stored, draft: &draft)
        #expect(draft.detail["previousSecretWasLive"] == "false")
        // A rotation may cut the previous secret off at once, and no grace is longer than a day.
        _ = try await administration.rotateSecret(of: stored, previousSecretValidFor: 0, draft: &draft)
        #expect(try await apps.find(app.id)?.previousSecretValidUntil == clock.now)
        #expect(await errorCode { try await administration.rotateSecret(of: stored, previousSecretValidFor: 86401, draft: &draft) } == .invalidRequest)
    }
}

/// `UserAdministration` over the in-memory roster and attempt counters; every erased template must reach the matchers.
@Suite struct UserAdministrationUseCaseTests {
    let clock = FakeClock()
    let roster: InMemoryUserRoster
    let counters: InMemoryAttemptCounters
    let gallery = RecordedBroadcasts()
    let appId = UUID()
    let rule = AttemptGuard.Rule(throttleAfter: 2, throttleSeconds: 30, lockAfter: 4)

    init() {
        roster = InMemoryUserRoster(clock: clock)
        counters = InMemoryAttemptCounters(clock: clock)
    }

    var administration: UserAdministration {
        UserAdministration(roster: roster, attempts: AttemptGuard(store: counters, rule: rule, addressRule: rule), gallery: gallery)
    }

    func create(_ number: String, _ name: String = "Someone") async throws -> UserAdministration.Created {
        var draft = TransactionDraft(appId: appId, kind: "user.create")
        let created = try await administration.create(app: appId, employeeNumber: number, name: name, draft: &draft)
        #expect(draft.userId?.wire == created.userId)
        return created
    }

    @Test func employeeNumbersAreTrimmedAndOnePerApp() async throws {
        let created = try await create("  E1001 ", " Barack Obama ")
        #expect(created.employeeNumber == "E1001" && created.name == "Barack Obama")
        #expect(await errorCode { try await create("E1001") } == .conflict)
        #expect(await errorCode { try await create("E1002", "  ") } == .invalidRequest)
        #expect(await errorCode { try await create(String(repeating: "9", count: 65)) } == .invalidRequest)
        let user = try await administration.user(try #require(UUID(uuidString: created.userId)), app: appId)
        #expect(user.employeeNumber == "E1001" && user.faces == 0)
        #expect(await errorCode { try await administration.user(try #require(UUID(uuidString: created.userId)), app: UUID()) } == .notFound)
    }

    @Test func pagesFollowTheCursorOldestFirstToTheLast() async throws {
        var made: [String] = []
        for number in 1...5 {
            made.append(try await create("E\(number)").userId)
            clock.advance(seconds: 1)
        }
        var seen: [String] = []
        var cursor: String?
        repeat {
            let page = try await administration.page(app: appId, limit: 2, cursor: cursor)
            #expect(page.items.count <= 2)
            seen += page.items.map(\.userId)
            cursor = page.nextCursor
        } while cursor != nil
        #expect(seen == made)
        #expect(try await administration.page(app: appId, limit: 0, cursor: nil).items.count == 1)
        #expect(try await administration.page(app: appId, limit: nil, cursor: nil).items.count == 5)
        #expect(await errorCode { try await administration.page(app: appId, limit: 2, cursor: "bm90LWEtY3Vyc29y") } == .invalidRequest)
    }

    @Test func everyErasedTemplateIsBroadcast() async throws {
        let user = try #require(UUID(uuidString: try await create("E1").userId))
        let kept = try #require(UUID(uuidString: try await create("E2").userId))
        let (first, second, other) = (UUID(), UUID(), UUID())
        roster.addTemplate(first, user: user, appId: appId)
        roster.addTemplate(second, user: user, appId: appId)
        roster.addTemplate(other, user: kept, appId: appId)
        #expect(try await administration.faces(of: user, app: appId).map(\.templateId) == [first.wire, second.wire])

        var draft = TransactionDraft(appId: appId, kind: "face.delete")
        try await administration.eraseFace(first, of: user, app: appId, draft: &draft)
        #expect(draft.userId == user && draft.detail == ["templateId": first.wire])
        #expect(await errorCode { try await administration.eraseFace(other, of: user, app: appId, draft: &draft) } == .notFound)

        draft = TransactionDraft(appId: appId, kind: "user.delete")
        try await administration.erase(user, app: appId, draft: &draft)
        #expect(draft.detail == ["templatesErased": "1"])
        #expect(gallery.changes.all.map(\.templateId) == [first, second])
        #expect(gallery.changes.all.allSatisfy { $0.operation == .delete && $0.userId == user && $0.appId == appId })
        #expect(await errorCode { try await administration.erase(user, app: appId, draft: &draft) } == .notFound)
        #expect(await errorCode { try await administration.faces(of: user, app: appId) } == .notFound)
        #expect(try await administration.faces(of: kept, app: appId).count == 1 && gallery.changes.all.count == 2)
    }

    @Test func resetsClearTheDeviceCountAndTheBindingLock() async throws {
        let user = UUID()
        let lenient = AttemptGuard.Rule(throttleAfter: 100, throttleSeconds: 30, lockAfter: 4)
        let (device, binding) = (AttemptGuard.Subject.device("phone-1").key, AttemptGuard.Subject.bindingUser(user).key)
        for subject in [device, binding] {
            for _ in 0..<4 { _ = try await counters.charge(appId: appId, subject: subject, rule: lenient) }
            #expect(try await counters.state(appId: appId, subject: subject, rule: lenient)?.locked == true)
        }
        try await administration.resetDevice("phone-1", app: appId)
        #expect(try await counters.state(appId: appId, subject: device, rule: lenient) == nil)
        #expect(try await counters.state(appId: appId, subject: binding, rule: lenient)?.locked == true)
        var draft = TransactionDraft(appId: appId, kind: "user.reset")
        try await administration.resetBinding(of: user, app: appId, draft: &draft)
        #expect(draft.userId == user)
        #expect(try await counters.state(appId: appId, subject: binding, rule: lenient) == nil)
    }
}

/// `AuditTrail` over in-memory records, with real Ed25519 token keys: what an auditor's key lets it read and which
/// checkpoints count. The chain recomputation itself: IntegrationTests' AuditTests, on tampered PostgreSQL rows.
@Suite struct AuditTrailUseCaseTests {
    let records = InMemoryAuditRecords()
    let signingKey = JWTSigningKey(kid: "gateway", privateKey: Ed25519PrivateKey())
    let appA = UUID()
    let appB = UUID()

    func trail(signingWith key: JWTSigningKey? = nil) -> AuditTrail {
        AuditTrail(records: records, keys: JWTKeySet([(kid: signingKey.kid, key: signingKey.publicKey)]), signingKey: key ?? signingKey,
                   issuer: "https://facegate.test", acceptUnkeyed: false)
    }

    func record(_ app: UUID, _ kind: String, at second: Double) {
        records.add(TransactionRecord(appId: app, kind: kind, outcome: "SUCCESS", latencyMs: 5,
                                      createdAt: Date(timeIntervalSince1970: 1_800_000_000 + second)))
    }

    @Test func searchesStayInsideTheAppsTheKeyCovers() async throws {
        record(appA, "face.login", at: 1)
        record(appB, "face.login", at: 2)
        record(appA, "ctid.verify", at: 3)
        let scoped = try await trail().search(.init(), limit: nil, cursor: nil, scope: [appA])
        #expect(scoped.items.map(\.appId) == [appA.wire, appA.wire] && scoped.nextCursor == nil)
        #expect(records.asked.last?.filter.appIds == appA.wire && records.asked.last?.limit == 101)
        #expect(try await trail().search(.init(appId: appA.wire, kind: "ctid.verify"), limit: nil, cursor: nil, scope: [appA]).items.count == 1)
        #expect(await errorCode { try await trail().search(.init(appId: appB.wire), limit: nil, cursor: nil, scope: [appA]) } == .forbidden)
        #expect(await errorCode { try await trail().search(.init(), limit: nil, cursor: nil, scope: []) } == nil)
        #expect(try await trail().search(.init(), limit: nil, cursor: nil, scope: nil).items.count == 3)
        #expect(try await trail().search(.init(kind: "", outcome: ""), limit: nil, cursor: nil, scope: nil).items.count == 3, "empty matches all")
        for bad in [AuditTrail.Query(appId: "x"), .init(userId: "x"), .init(from: "yesterday"), .init(to: "2026-13-01T00:00:00Z")] {
            #expect(await errorCode { try await trail().search(bad, limit: nil, cursor: nil, scope: nil) } == .invalidRequest)
        }
    }

    @Test func pagesGoNewestFirstToTheLastWithLimitsHeldInRange() async throws {
        for second in 1...5 { record(appA, "face.login", at: Double(second)) }
        var seen: [Date] = []
        var cursor: String?
        repeat {
            let page = try await trail().search(.init(), limit: 2, cursor: cursor, scope: nil)
            seen += page.items.map(\.createdAt)
            cursor = page.nextCursor
        } while cursor != nil
        #expect(seen == (1...5).reversed().map { Date(timeIntervalSince1970: 1_800_000_000 + Double($0)) })
        _ = try await trail().search(.init(), limit: 5000, cursor: nil, scope: nil)
        #expect(records.asked.last?.limit == 1001)
        _ = try await trail().search(.init(), limit: -3, cursor: nil, scope: nil)
        #expect(records.asked.last?.limit == 2)
        #expect(await errorCode { try await trail().search(.init(), limit: 2, cursor: "Zm9v", scope: nil) } == .invalidRequest)
    }

    @Test func anExportIsTheHeaderThenOnePageAtATimeNewestFirstInsideTheScope() async throws {
        for second in 1...5 { record(appA, "face.login", at: Double(second)) }
        record(appB, "face.login", at: 6)
        let export = try trail().export(.init(), scope: [appA], pageSize: 2)
        #expect(records.asked.isEmpty, "nothing is read before the export is taken")
        var chunks: [String] = []
        while let chunk = try await export.next() { chunks.append(String(decoding: chunk, as: UTF8.self)) }
        #expect(chunks.first == AuditItem.csvHeader)
        // Pages of 2, 2 and 1 rows; the short page is the last one read.
        #expect(chunks.dropFirst().map { $0.components(separatedBy: "\r\n").count - 1 } == [2, 2, 1])
        #expect(records.asked.count == 3 && records.asked.allSatisfy { $0.limit == 2 && $0.filter.appIds == appA.wire })
        let times = chunks.dropFirst().joined().split(separator: "\r\n").map { $0.split(separator: ",").last.map(String.init) ?? "" }
        #expect(times == times.sorted(by: >) && times.count == 5)
        #expect(await errorCode { _ = try trail().export(.init(appId: appB.wire), scope: [appA]) } == .forbidden)
    }

    @Test func aFailedPageReadEndsTheExport() async throws {
        struct Unreadable: AuditRecords {
            struct Down: Error {}
            func page(_ filter: TransactionLog.Filter, before cursor: (time: Date, id: UUID)?, limit: Int) async throws -> [TransactionRecord] {
                throw Down()
            }
            func head(of appId: UUID) async throws -> (count: Int64, hash: [UInt8])? { nil }
            func lengths() async throws -> [(appId: UUID, count: Int64)] { throw Down() }
            func verify(appId: UUID, checkpoint: AuditCheckpoint?, acceptUnkeyed: Bool) async throws -> TransactionLog.Verification {
                throw Down()
            }
        }
        let export = try AuditTrail(records: Unreadable(), keys: JWTKeySet([]), signingKey: signingKey, issuer: "https://facegate.test",
                                    acceptUnkeyed: false).export(.init(), scope: nil)
        #expect(try await export.next() == Array(AuditItem.csvHeader.utf8))
        await #expect(throws: Unreadable.Down.self) { _ = try await export.next() }
        #expect(try await export.next() == nil)
    }

    @Test func checkpointsArePublishedForTheChainsThatGrewOnly() async throws {
        records.setHead(appA, count: 3, hash: Array(repeating: 1, count: 32))
        records.setHead(appB, count: 5, hash: Array(repeating: 2, count: 32))
        var published: [UUID: Int64] = [:]
        let sent = Calls<AuditTrail.SignedCheckpoint>()
        try await trail().publishCheckpoints(after: &published) { sent.record($0) }
        #expect(Set(sent.all.map(\.appId)) == [appA.wire, appB.wire] && published == [appA: 3, appB: 5])
        try await trail().publishCheckpoints(after: &published) { sent.record($0) }
        #expect(sent.all.count == 2, "nothing grew")
        records.setHead(appB, count: 6, hash: Array(repeating: 3, count: 32))
        try await trail().publishCheckpoints(after: &published) { sent.record($0) }
        #expect(sent.all.count == 3 && sent.all.last?.appId == appB.wire && sent.all.last?.count == 6 && published[appB] == 6)
        // A checkpoint the publisher could not send is sent again next time.
        records.setHead(appA, count: 4, hash: Array(repeating: 4, count: 32))
        struct Down: Error {}
        await #expect(throws: Down.self) { try await trail().publishCheckpoints(after: &published) { _ in throw Down() } }
        #expect(published[appA] == 3)
    }

    @Test func onlyACheckpointThisPlatformSignedForThatAppIsTaken() async throws {
        let hash = Array(repeating: UInt8(7), count: 32)
        records.setHead(appA, count: 3, hash: hash)
        let signed = try await trail().checkpoint(of: appA)
        #expect(signed.appId == appA.wire && signed.count == 3 && signed.headHash == Base64URL.encode(hash))
        let empty = try await trail().checkpoint(of: appB)
        #expect(empty.count == 0 && empty.headHash == Base64URL.encode(TransactionRecord.genesisHash))

        _ = try await trail().verify(app: appA.wire, checkpoint: signed.checkpoint, scope: [appA])
        #expect(records.verified.all.last??.count == 3 && records.verified.all.last??.headHash == signed.headHash)
        let forged = try await trail(signingWith: JWTSigningKey(kid: "gateway", privateKey: Ed25519PrivateKey())).checkpoint(of: appA)
        for (app, token) in [(appB, signed.checkpoint), (appA, forged.checkpoint), (appA, "not-a-token")] {
            #expect(await errorCode { try await trail().verify(app: app.wire, checkpoint: token, scope: nil) } == .invalidRequest)
        }
        #expect(await errorCode { try await trail().verify(app: nil, checkpoint: nil, scope: nil) } == .invalidRequest)
        #expect(await errorCode { try await trail().verify(app: appA.wire, checkpoint: nil, scope: [appB]) } == .forbidden)
        #expect(await errorCode { try trail().app(appA.wire, scope: [appB]) } == .forbidden)
        #expect(records.verified.all.count == 1, "nothing refused reached the chain")
        _ = try await trail().verify(app: appA.wire, checkpoint: nil, scope: nil)
        #expect(records.verified.all.count == 2 && records.verified.all.last! == nil)
    }
}

/// `AccessKeys` over in-memory keys and apps: which keys are made, what they cover, and that a secret is shown once.
@Suite struct AccessKeysUseCaseTests {
    let clock = FakeClock()
    let keys: InMemoryApiKeys
    let apps: InMemoryApps

    init() {
        keys = InMemoryApiKeys(clock: clock)
        apps = InMemoryApps(clock: clock)
    }

    var accessKeys: AccessKeys { AccessKeys(keys: keys, apps: apps) }

    func app() async throws -> UUID {
        let id = UUID()
        try await apps.create(id, name: "app", secretHash: [], ctidKeySealed: [], faceModel: .sface2021dec,
                              settings: StoreContracts.AppStoreContract.settings())
        return id
    }

    func create(_ new: AccessKeys.NewKey, _ role: AccessKeys.Role) async throws -> AccessKeys.Created {
        var draft = TransactionDraft(appId: platformAppId, kind: "\(role.rawValue)-key.create")
        let created = try await accessKeys.create(try await accessKeys.check(new, role: role), draft: &draft)
        #expect(draft.detail == ["keyId": created.keyId.wire, "name": created.name])
        return created
    }

    func json(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(try FaceGateJSON.encode(value))) as? [String: Any])
    }

    @Test func aKeyIsShownOnceAndStoredOnlyAsItsHash() async throws {
        let appId = try await app()
        let key = try await create(.init(name: " ops ", appIds: [appId]), .operator)
        #expect(key.secret.hasPrefix("fgo_") && key.name == "ops")
        let live = try #require(try await keys.live(hash: SHA256.hash(Array(key.secret.utf8))))
        #expect(live.role == "admin" && live.appIds == [appId])
        let shown = try json(key)
        #expect(shown["operatorKeyId"] as? String == key.keyId.wire && shown["operatorKey"] as? String == key.secret)
        #expect(shown["auditorId"] == nil && shown["expiresAt"] == nil && shown["appIds"] as? [String] == [appId.wire])
        let auditor = try json(try await create(.init(name: "audit", allApps: true), .auditor))
        #expect((auditor["auditorKey"] as? String)?.hasPrefix("fga_") == true && auditor["operatorKey"] == nil && auditor["appIds"] == nil)
        // Listings never carry a secret.
        let listed = try await accessKeys.list(.operator)
        #expect(listed.map(\.operatorKeyId) == [key.keyId.wire] && listed[0].auditorId == nil)
        #expect(!String(decoding: try FaceGateJSON.encode(listed[0]), as: UTF8.self).contains(key.secret))
    }

    @Test func anAuditorKeyCoversOnlyWhatItIsGivenAnOperatorKeyWithoutAppsEveryApp() async throws {
        let appId = try await app()
        #expect(try await accessKeys.check(.init(name: "a"), role: .auditor).appIds == [])
        #expect(try await accessKeys.check(.init(name: "a", allApps: true), role: .auditor).appIds == nil)
        #expect(try await accessKeys.check(.init(name: "a", appIds: [appId]), role: .auditor).appIds == [appId])
        #expect(try await accessKeys.check(.init(name: "o"), role: .operator).appIds == nil)
        #expect(await errorCode { try await accessKeys.check(.init(name: "a", appIds: [appId], allApps: true), role: .auditor) } == .invalidRequest)
    }

    @Test func namesExpiriesAndAppsOutsideTheRulesAreRefused() async throws {
        let appId = try await app()
        let bad: [AccessKeys.NewKey] = [
            .init(name: "  "), .init(name: String(repeating: "k", count: 201)), .init(name: "k", expiresIn: 0),
            .init(name: "k", expiresIn: 11 * 366 * 86400), .init(name: "k", expiresIn: 60, expiresAt: Date() + 60),
            .init(name: "k", expiresAt: Date() - 1), .init(name: "k", appIds: []), .init(name: "k", appIds: [appId, UUID()]),
        ]
        for new in bad { #expect(await errorCode { try await accessKeys.check(new, role: .operator) } == .invalidRequest) }
        let expiring = try await accessKeys.check(.init(name: "k", expiresIn: 60), role: .operator)
        #expect(abs(try #require(expiring.expiresAt).timeIntervalSinceNow - 60) < 5)
        #expect(try await keys.list(role: "admin").isEmpty)
    }

    @Test func aRevocationIsPerRoleAndHoldsAtOnce() async throws {
        let key = try await create(.init(name: "ops"), .operator)
        var draft = TransactionDraft(appId: platformAppId, kind: "auditor-key.revoke")
        #expect(await errorCode { try await accessKeys.revoke(key.keyId, role: .auditor, draft: &draft) } == .notFound)
        try await accessKeys.revoke(key.keyId, role: .operator, draft: &draft)
        #expect(draft.detail == ["keyId": key.keyId.wire])
        #expect(try await keys.live(hash: SHA256.hash(Array(key.secret.utf8))) == nil)
        #expect(try await accessKeys.list(.operator).first?.revokedAt == clock.now)
        try await accessKeys.revoke(key.keyId, role: .operator, draft: &draft)
    }
}
