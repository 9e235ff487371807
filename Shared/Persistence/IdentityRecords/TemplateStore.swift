import AppRecords
import FaceGateCore
import Foundation
import PlatformRecords
import PostgresClient
import ServiceKit

/// The matcher's template records (`TemplateStore` in PostgreSQL; an in-memory twin in the handler's tests).
package protocol TemplateRecords: Sendable {
    func recordedAnswer(toEnrollment messageId: String) async throws -> FaceJobResult?
    func count(appId: UUID, userId: UUID, model: FaceModel) async throws -> Int
    func insert(_ template: TemplateStore.NewTemplate, limit: Int?, onlyIfNone: Bool,
                answering record: (messageId: String, answer: @Sendable (_ photoKept: Bool) -> FaceJobResult)?) async throws -> TemplateStore.Stored
    func embeddings(appId: UUID, userId: UUID, model: FaceModel) async throws -> [(templateId: UUID, embedding: [Float])]
    func keptPhotos(appId: UUID, templateIds: [UUID]) async throws -> [TemplateStore.KeptPhoto]
}

extension TemplateRecords {
    package func insert(_ template: TemplateStore.NewTemplate, limit: Int? = nil, onlyIfNone: Bool = false) async throws -> TemplateStore.Stored {
        try await insert(template, limit: limit, onlyIfNone: onlyIfNone, answering: nil)
    }
}

/// What the matcher writes: the templates it enrolls and re-embeds, the enrollment photos kept with them, and its
/// record of answered enrollments (`ProcessedMessages`, consumer `matcher.enroll`). Every statement the matcher runs
/// against these tables is here; the gallery it reads back is `GalleryStore`'s.
package struct TemplateStore: TemplateRecords {
    package let database: PostgresPool
    package let sealer: Sealer

    package init(database: PostgresPool, sealer: Sealer) {
        self.database = database
        self.sealer = sealer
    }

    /// A template to store, sealed here.
    package struct NewTemplate: Sendable {
        package var id = UUID()
        package var appId: UUID
        package var userId: UUID
        package var model: FaceModel
        package var embedding: [Float]
        package var quality: FaceQualityReport
        /// The enrollment photo, kept sealed to the template (the app keeps photos and the person consented).
        package var photo: Data?

        package init(id: UUID = UUID(), appId: UUID, userId: UUID, model: FaceModel, embedding: [Float], quality: FaceQualityReport, photo: Data? = nil) {
            self.id = id
            self.appId = appId
            self.userId = userId
            self.model = model
            self.embedding = embedding
            self.quality = quality
            self.photo = photo
        }
    }

    /// Whether `insert` stored the template, and if not, why.
    package enum Stored: Sendable {
        /// `photoKept`: the photo was kept (the app keeps enrollment photos).
        case inserted(changeSeq: Int64, photoKept: Bool)
        /// Another delivery of the same job stored its template first: its recorded answer.
        case answeredBefore(FaceJobResult)
        /// The user holds `held` templates of the model, the limit or more.
        case limitReached(held: Int)
        /// `onlyIfNone` and the user already holds a template of the model.
        case alreadyHeld
        /// The user is not (or no longer) in the app.
        case userNotFound
    }

    /// The answer recorded for an enrollment job, when it was answered before (a redelivery or a client's retry).
    package func recordedAnswer(toEnrollment messageId: String) async throws -> FaceJobResult? {
        try await Self.recordedAnswer(toEnrollment: messageId, on: database)
    }

    /// The matcher's answered enrollments.
    private static let enrollments = ProcessedMessages(consumer: "matcher.enroll")

    private static func recordedAnswer(toEnrollment messageId: String, on database: some PostgresQueryable) async throws -> FaceJobResult? {
        guard let bytes = try await enrollments.answer(to: messageId, on: database) else { return nil }
        return try FaceGateJSON.decode(FaceJobResult.self, from: bytes)
    }

    /// How many templates of `model` the user holds.
    package func count(appId: UUID, userId: UUID, model: FaceModel) async throws -> Int {
        try await Self.count(appId: appId, userId: userId, model: model, on: database)
    }

    /// Stores `template` in one transaction, under a lock on its user, so that two writes for one user take turns:
    /// refused when the user holds `limit` templates of the model, or (`onlyIfNone`) any. `answering` records the
    /// job's answer (`answer(photoKept)`) with it, so a redelivery gets the same answer, even one handled at the same time.
    package func insert(_ template: NewTemplate, limit: Int?, onlyIfNone: Bool,
                answering record: (messageId: String, answer: @Sendable (_ photoKept: Bool) -> FaceJobResult)?) async throws -> Stored {
        let sealed = try sealer.sealTemplate(template.embedding, templateId: template.id)
        let photo = try template.photo.map { try sealer.sealEnrollmentPhoto(Array($0), templateId: template.id) }
        let quality = String(decoding: try FaceGateJSON.encode(template.quality), as: UTF8.self)
        return try await database.withTransaction { connection in
            _ = try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(template.userId.wire), 0))")
            if let record, let previous = try await Self.recordedAnswer(toEnrollment: record.messageId, on: connection) {
                return .answeredBefore(previous)
            }
            if limit != nil || onlyIfNone {
                let held = try await Self.count(appId: template.appId, userId: template.userId, model: template.model, on: connection)
                if onlyIfNone, held > 0 { return .alreadyHeld }
                if let limit, held >= limit { return .limitReached(held: held) }
            }
            let inserted = try await connection.query("""
                INSERT INTO face_templates (id, app_id, user_id, embedding_sealed, model_id, quality, shard_hash)
                SELECT \(template.id), \(template.appId), id, \(sealed), \(template.model.rawValue), \(quality)::jsonb,
                       \(Int64(bitPattern: templateShardHash(template.id)))
                FROM users WHERE id = \(template.userId) AND app_id = \(template.appId)
                RETURNING change_seq
                """)
            guard let row = inserted.first else { return .userNotFound }
            var photoKept = false
            if let photo {
                // Only where the app (read here, not from the job) keeps enrollment photos.
                photoKept = try await connection.query("""
                    INSERT INTO enrollment_photos (template_id, app_id, user_id, photo_sealed, consent_at)
                    SELECT \(template.id), \(template.appId), \(template.userId), \(photo), now()
                    FROM apps WHERE id = \(template.appId) AND keep_enrollment_photos
                    """).affectedRows == 1
            }
            if let record {
                try await Self.enrollments.keep(try FaceGateJSON.encode(record.answer(photoKept)), for: record.messageId, on: connection)
            }
            return .inserted(changeSeq: try row.decode("change_seq", as: Int64.self), photoKept: photoKept)
        }
    }

    /// The user's templates of `model`, opened.
    package func embeddings(appId: UUID, userId: UUID, model: FaceModel) async throws -> [(templateId: UUID, embedding: [Float])] {
        var found: [(templateId: UUID, embedding: [Float])] = []
        try await database.forEachRow("""
            SELECT id, embedding_sealed FROM face_templates WHERE app_id = \(appId) AND user_id = \(userId) AND model_id = \(model.rawValue)
            """) { row in
            let templateId: UUID = try row.decode("id")
            found.append((templateId, try sealer.openTemplate(try row.decode("embedding_sealed"), templateId: templateId)))
        }
        return found
    }

    /// A kept enrollment photo, still sealed.
    package struct KeptPhoto: Sendable {
        package var templateId: UUID
        package var userId: UUID
        package var sealed: [UInt8]
    }

    /// The kept photos of some of an app's templates, oldest first.
    package func keptPhotos(appId: UUID, templateIds: [UUID]) async throws -> [KeptPhoto] {
        try await database.query("""
            SELECT template_id, user_id, photo_sealed FROM enrollment_photos
            WHERE app_id = \(appId) AND template_id = ANY(\(templateIds.arrayLiteral)::uuid[])
            ORDER BY created_at, template_id
            """).rows.map { KeptPhoto(templateId: try $0.decode("template_id"), userId: try $0.decode("user_id"), sealed: try $0.decode("photo_sealed")) }
    }

    private static func count(appId: UUID, userId: UUID, model: FaceModel, on database: some PostgresQueryable) async throws -> Int {
        try await database.query("""
            SELECT count(*) AS n FROM face_templates WHERE app_id = \(appId) AND user_id = \(userId) AND model_id = \(model.rawValue)
            """).first?.decode("n", as: Int.self) ?? 0
    }
}
