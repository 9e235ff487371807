import AppRecords
@testable import AuthGateway
import FaceGateCore
import Foundation
import IdentityRecords
import Testing

/// `Enrollment` over an in-memory roster and a scripted matcher. The matcher's own rules (quality gate, duplicates, the
/// template limit, kept photos) are tested on the real models: IntegrationTests' FaceLoginTests, FaceModelTests and
/// IntegratorTests.
@Suite struct EnrollmentUseCaseTests {
    let clock = FakeClock()
    let matcher = ScriptedMatcher()

    func app(trial: Bool = false, gallerySize: Int = 100, keepPhotos: Bool = false) -> AppRecord {
        var modules = Modules.initial
        modules.faceLogin = trial ? .trial : .formal
        return AppRecord(id: UUID(), name: "app", secretHash: [], modules: modules, faceModel: .sface2021dec,
                         matchThreshold: FaceModel.sface2021dec.defaultThreshold, liveness: .initial, deviceBinding: .dpop,
                         deviceBindingPolicy: .appServerTicket, kioskApproval: KioskApprovalPolicy(),
                         quotas: Quotas(dailyCalls: 1000, gallerySize: gallerySize), keepEnrollmentPhotos: keepPhotos, createdAt: Date())
    }

    func enroll(_ enrollment: Enrollment, _ app: AppRecord, _ user: UUID, consent: Bool = false,
                jobId: String? = nil) async -> Result<Enrollment.Enrolled, APIError> {
        var draft = TransactionDraft(appId: app.id, kind: "face.enroll")
        do {
            return .success(try await enrollment.enroll(app: app, user: user, image: { Data("photo".utf8) }, photoConsent: { consent },
                                                        jobId: jobId, draft: &draft))
        } catch let error as APIError {
            return .failure(error)
        } catch {
            return .failure(APIError(.internalError, "\(error)"))
        }
    }

    static func enrolled(photoKept: Bool = false) -> FaceJobResult {
        var result = FaceJobResult(outcome: .enrolled, quality: FaceQualityReport(faceWidth: 140, sharpness: 0.9, brightness: 0.5, yaw: 2),
                                   templateId: UUID())
        result.photoKept = photoKept
        return result
    }

    @Test func aUserOfTheAppIsEnrolledByTheMatcherWithTheAppsRules() async throws {
        let roster = InMemoryUserRoster(clock: clock)
        let enrollment = Enrollment(roster: roster, matcher: matcher, maxFacesPerUser: 3)
        let app = app(keepPhotos: true)
        let user = UUID()
        #expect(try await roster.create(user, appId: app.id, employeeNumber: "E1", name: "Someone"))
        matcher.answer(Self.enrolled(photoKept: true))
        guard case .success(let enrolled) = await enroll(enrollment, app, user, consent: true, jobId: "enroll-1") else {
            Issue.record("not enrolled"); return
        }
        #expect(enrolled.photoKept)
        let job = try #require(matcher.jobs.first)
        #expect(job.payload == .enroll(FaceJob.Enrollment(image: Data("photo".utf8), userId: user, duplicateCheck: true, templateLimit: 3,
                                                          keepPhoto: true)))
        #expect(job.threshold == app.matchThreshold)
        #expect(matcher.messageIds == ["enroll-1"])
        // Without the person's consent, or on an app that keeps no photos, the matcher is not asked to keep it.
        matcher.answer(Self.enrolled(), Self.enrolled())
        _ = await enroll(enrollment, app, user, consent: false)
        let other = self.app(keepPhotos: false)
        let otherUser = UUID()
        #expect(try await roster.create(otherUser, appId: other.id, employeeNumber: "E2", name: "Other"))
        _ = await enroll(enrollment, other, otherUser, consent: true)
        #expect(matcher.jobs.dropFirst().map(\.payload).allSatisfy { if case .enroll(let enrollment) = $0 { !enrollment.keepPhoto } else { false } })
        #expect(matcher.jobs.count == 3)
    }

    @Test func anUnknownUserOrAFullTrialGalleryReachesNoMatcher() async throws {
        let roster = InMemoryUserRoster(clock: clock)
        let enrollment = Enrollment(roster: roster, matcher: matcher, maxFacesPerUser: 3)
        let trial = app(trial: true, gallerySize: 1)
        guard case .failure(let unknown) = await enroll(enrollment, trial, UUID()) else { Issue.record("enrolled a stranger"); return }
        #expect(unknown.code == .notFound)
        let (first, second) = (UUID(), UUID())
        _ = try await roster.create(first, appId: trial.id, employeeNumber: "E1", name: "First")
        _ = try await roster.create(second, appId: trial.id, employeeNumber: "E2", name: "Second")
        roster.addTemplate(user: first, appId: trial.id)
        guard case .failure(let full) = await enroll(enrollment, trial, second) else { Issue.record("the trial gallery grew"); return }
        #expect(full.code == .moduleNotFormal)
        #expect(matcher.jobs.isEmpty)
        // The formal module has no such cap.
        var formal = trial
        formal.modules.faceLogin = .formal
        matcher.answer(Self.enrolled())
        guard case .success = await enroll(enrollment, formal, second) else { Issue.record("the formal module was capped"); return }
    }

    @Test func theMatchersRefusalIsTheAnswer() async throws {
        let roster = InMemoryUserRoster(clock: clock)
        let enrollment = Enrollment(roster: roster, matcher: matcher, maxFacesPerUser: 3)
        let app = app()
        let user = UUID()
        _ = try await roster.create(user, appId: app.id, employeeNumber: "E1", name: "Someone")
        matcher.answer(FaceJobResult(outcome: .duplicateFace), FaceJobResult(outcome: .lowQuality, message: "the face is 40 px wide"),
                       FaceJobResult(outcome: .enrolled))
        var codes: [ErrorCode] = []
        for _ in 0..<3 { if case .failure(let error) = await enroll(enrollment, app, user) { codes.append(error.code) } }
        #expect(codes == [.duplicateFace, .lowQuality, .internalError])
    }

    @Test func aRetriedEnrollmentNamesTheSameJobOnlyForTheSameCallerKeyAndUser() {
        let (app, user) = (UUID(), UUID())
        let first = Enrollment.jobId(caller: "Bearer fgo_a", appId: app, userId: user, idempotencyKey: "k-1")
        #expect(first?.hasPrefix("enroll-") == true && first?.count == 39)
        #expect(Enrollment.jobId(caller: "Bearer fgo_a", appId: app, userId: user, idempotencyKey: "k-1") == first)
        #expect(Enrollment.jobId(caller: "Bearer fgo_b", appId: app, userId: user, idempotencyKey: "k-1") != first, "another caller")
        #expect(Enrollment.jobId(caller: "Bearer fgo_a", appId: app, userId: UUID(), idempotencyKey: "k-1") != first, "another user")
        #expect(Enrollment.jobId(caller: "Bearer fgo_a", appId: app, userId: user, idempotencyKey: "k-2") != first, "another key")
        #expect(Enrollment.jobId(caller: "Bearer fgo_a", appId: app, userId: user, idempotencyKey: nil) == nil, "no key: a fresh job each time")
    }
}
