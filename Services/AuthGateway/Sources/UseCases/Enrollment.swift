import Crypto
import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation

/// Enrolling a face for a user (`POST /v1/apps/{appId}/users/{userId}/faces`), without HTTP: the user must be in the app,
/// a trial app's gallery has its cap, and the matcher decides the rest (quality gate, duplicates in the app, the user's
/// template limit) and stores the template.
struct Enrollment: Sendable {
    let roster: any UserRoster
    let matcher: any FaceMatching
    let maxFacesPerUser: Int

    struct Enrolled: Sendable, Equatable {
        var templateId: UUID
        var quality: FaceQualityReport
        /// The photo was kept, sealed (the app keeps enrollment photos and the person consented).
        var photoKept: Bool
        /// The face enrolled, and how many other faces the photo showed.
        var faceBox: FaceRegion?
        var otherFaces: Int
    }

    /// The enroll job's id when the request carries an `Idempotency-Key`: the same caller (as its audit rows name it: `operator:<key id>`), key and user
    /// always give the same id, so a retry after an answer was lost (a 503 at the deadline while the matcher still
    /// finished) gets the matcher's record of the first job — the same template — instead of a second template of the
    /// same face.
    static func jobId(caller: String, appId: UUID, userId: UUID, idempotencyKey: String?) -> String? {
        guard let key = idempotencyKey else { return nil }
        let digest = SHA256.hash("facegate-enroll-v1\n\(caller)\n\(appId.wire)\n\(userId.wire)\n\(key)")
        return "enroll-" + digest.prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    /// `image` and `photoConsent` are read once the user is known to be in the app. `jobId` (`jobId(caller:…)`): the same
    /// for the same caller, `Idempotency-Key` and user, so a retry gets the matcher's record of the first job instead of a
    /// second template of the same face.
    /// `faceBox`: the face the operator chose, when the photo shows several.
    func enroll(app: AppRecord, user: UUID, image: () throws -> Data, photoConsent: () throws -> Bool, faceBox: FaceRegion? = nil,
                jobId: String?, draft: inout TransactionDraft) async throws -> Enrolled {
        draft.userId = user
        guard try await roster.user(user, appId: app.id) != nil else { throw APIError(.notFound, "no such user in this app") }
        let image = try image()
        if app.modules.faceLogin == .trial, try await roster.enrolledUsers(appId: app.id) >= app.quotas.gallerySize {
            throw APIError(.moduleNotFormal, "the trial gallery holds \(app.quotas.gallerySize) users; ask for the formal module")
        }
        let consent = try photoConsent()  // checked even where the app keeps no photos: a malformed value is refused
        let keepPhoto = app.keepEnrollmentPhotos && consent
        let result = try await matcher.match(FaceJob(appId: app.id, threshold: app.matchThreshold,
                                                     .enroll(FaceJob.Enrollment(image: image, userId: user, templateLimit: maxFacesPerUser,
                                                                                keepPhoto: keepPhoto, faceBox: faceBox))),
                                             messageId: jobId)
        if result.outcome.errorCode != nil { throw APIError(refusing: result) }
        guard let templateId = result.templateId, let quality = result.quality else {
            throw APIError(.internalError, "the matcher did not return a template")
        }
        let photoKept = result.photoKept ?? false
        draft.detail = ["templateId": templateId.wire, "photoKept": String(photoKept)]
        return Enrolled(templateId: templateId, quality: quality, photoKept: photoKept, faceBox: result.subject,
                        otherFaces: max(0, (result.faceCount ?? 1) - 1))
    }
}
