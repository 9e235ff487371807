import Foundation

/// Jobs on `face.jobs.v1`, answered by a matcher-worker on the requester's reply partition.
public enum FaceJobKind: String, Codable, Sendable, CaseIterable {
    /// 1:N search of the probe image in the app's gallery.
    case identify
    /// 1:1: the probe image against a second image, a user's templates, or a sealed template.
    case verify
    /// Quality gate, duplicate check, then a sealed template persisted and broadcast.
    case enroll
    /// Faces, boxes and quality only.
    case detect
    /// Active liveness over a burst of frames against a challenge.
    case liveness
    /// One face of an acceptable photo, returned as a template sealed with the platform key (for
    /// reference portraits stored outside the gallery, e.g. the CTID registry). Nothing is persisted.
    case template
    /// The kept enrollment photos of some templates embedded with the model the app migrates to, each stored as
    /// its user's template of that model. Nothing leaves the matcher but templates.
    case reembed

    public var messageType: String { "face.\(rawValue)" }
}

public struct FaceJob: Codable, Sendable {
    public var kind: FaceJobKind
    public var appId: UUID
    /// Probe image bytes (JPEG/PNG), base64 in JSON.
    public var image: Data?
    /// `verify` against a second image.
    public var referenceImage: Data?
    /// `verify` against this user's templates; `enroll` target user.
    public var userId: UUID?
    /// `verify` against a template sealed with the platform key (e.g. a CTID registry portrait).
    public var referenceSealedTemplate: Data?
    public var topK: Int
    /// Per-app decision rule; the matcher's defaults apply when nil.
    public var threshold: Float?
    public var margin: Float?
    /// `enroll`: refuse a face that already matches another user of the app.
    public var duplicateCheck: Bool
    /// `liveness`: the frames and the actions the challenge asked for, in order.
    public var frames: [Data]?
    public var actions: [LivenessAction]?
    /// `liveness`: when the burst is live, also search the gallery with its most frontal frame and decide
    /// like `identify` (same rule, threshold, margin; sent to every shard and merged like an identify).
    public var identify: Bool
    /// `enroll` only: embed with this model instead of the app's — the model the app is migrating to
    /// (`FaceModel.defaultForNewApps`), for progressive re-enrollment. Every other job runs on the app's model.
    public var model: FaceModel?
    /// `enroll`: the most templates of the model the user may hold. The matcher refuses the enrollment past it
    /// (`FACE_LIMIT_REACHED`) — after answering a redelivered or retried job from its record, so a retry whose first
    /// attempt filled the last place gets that template, not a refusal. nil: no limit.
    public var templateLimit: Int?
    /// `enroll`: keep the photo, sealed to the new template, for a later move to another model (the app keeps
    /// enrollment photos and the person consented).
    public var keepPhoto: Bool
    /// `reembed`: the templates whose kept photos to embed with `model`.
    public var templateIds: [UUID]?

    public init(kind: FaceJobKind, appId: UUID, image: Data? = nil, referenceImage: Data? = nil, userId: UUID? = nil,
                referenceSealedTemplate: Data? = nil, topK: Int = 5, threshold: Float? = nil, margin: Float? = nil,
                duplicateCheck: Bool = true, frames: [Data]? = nil, actions: [LivenessAction]? = nil, identify: Bool = false,
                model: FaceModel? = nil, templateLimit: Int? = nil, keepPhoto: Bool = false, templateIds: [UUID]? = nil) {
        self.kind = kind
        self.appId = appId
        self.image = image
        self.referenceImage = referenceImage
        self.userId = userId
        self.referenceSealedTemplate = referenceSealedTemplate
        self.topK = topK
        self.threshold = threshold
        self.margin = margin
        self.duplicateCheck = duplicateCheck
        self.frames = frames
        self.actions = actions
        self.identify = identify
        self.model = model
        self.templateLimit = templateLimit
        self.keepPhoto = keepPhoto
        self.templateIds = templateIds
    }

    /// Jobs from senders that predate a field decode with its default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(FaceJobKind.self, forKey: .kind)
        appId = try container.decode(UUID.self, forKey: .appId)
        image = try container.decodeIfPresent(Data.self, forKey: .image)
        referenceImage = try container.decodeIfPresent(Data.self, forKey: .referenceImage)
        userId = try container.decodeIfPresent(UUID.self, forKey: .userId)
        referenceSealedTemplate = try container.decodeIfPresent(Data.self, forKey: .referenceSealedTemplate)
        topK = try container.decode(Int.self, forKey: .topK)
        threshold = try container.decodeIfPresent(Float.self, forKey: .threshold)
        margin = try container.decodeIfPresent(Float.self, forKey: .margin)
        duplicateCheck = try container.decode(Bool.self, forKey: .duplicateCheck)
        frames = try container.decodeIfPresent([Data].self, forKey: .frames)
        actions = try container.decodeIfPresent([LivenessAction].self, forKey: .actions)
        identify = try container.decodeIfPresent(Bool.self, forKey: .identify) ?? false
        model = try container.decodeIfPresent(FaceModel.self, forKey: .model)
        templateLimit = try container.decodeIfPresent(Int.self, forKey: .templateLimit)
        keepPhoto = try container.decodeIfPresent(Bool.self, forKey: .keepPhoto) ?? false
        templateIds = try container.decodeIfPresent([UUID].self, forKey: .templateIds)
    }
}

public enum LivenessAction: String, Codable, Sendable, CaseIterable {
    case blink = "BLINK"
    case turnLeft = "TURN_LEFT"
    case turnRight = "TURN_RIGHT"
}

/// What a matcher concluded. Raw values are the wire codes.
public enum FaceOutcome: String, Codable, Sendable {
    case match = "MATCH"
    case noFace = "NO_FACE"
    case noMatchFace = "NO_MATCH_FACE"
    case ambiguousMatch = "AMBIGUOUS_MATCH"
    case imageFormatError = "IMAGE_FORMAT_ERROR"
    case lowQuality = "LOW_QUALITY"
    case duplicateFace = "DUPLICATE_FACE"
    case faceLimitReached = "FACE_LIMIT_REACHED"
    case enrolled = "ENROLLED"
    case detected = "DETECTED"
    case live = "LIVE"
    case spoofDetected = "SPOOF_DETECTED"
    case timeout = "TIMEOUT"
    case internalError = "INTERNAL"

    /// The API error an unsuccessful outcome maps to.
    public var errorCode: ErrorCode? {
        switch self {
        case .match, .enrolled, .detected, .live: nil
        case .noFace: .noFace
        case .noMatchFace: .noMatchFace
        case .ambiguousMatch: .ambiguousMatch
        case .imageFormatError: .imageFormatError
        case .lowQuality: .lowQuality
        case .duplicateFace: .duplicateFace
        case .faceLimitReached: .faceLimitReached
        case .spoofDetected: .spoofDetected
        case .timeout: .serviceUnavailable
        case .internalError: .internalError
        }
    }
}

public struct FaceCandidate: Codable, Sendable, Equatable {
    public var userId: UUID
    public var templateId: UUID
    public var distance: Float
    public init(userId: UUID, templateId: UUID, distance: Float) {
        self.userId = userId
        self.templateId = templateId
        self.distance = distance
    }
}

public struct FaceQualityReport: Codable, Sendable, Equatable {
    public var faceWidth: Int
    public var sharpness: Double
    public var brightness: Double
    public var yaw: Double
    public init(faceWidth: Int, sharpness: Double, brightness: Double, yaw: Double) {
        self.faceWidth = faceWidth
        self.sharpness = sharpness
        self.brightness = brightness
        self.yaw = yaw
    }
}

public struct LivenessReport: Codable, Sendable, Equatable {
    public var passed: Bool
    /// Why it failed, e.g. `identical frames`, `no blink`, `different faces`.
    public var reasons: [String]
    public init(passed: Bool, reasons: [String]) {
        self.passed = passed
        self.reasons = reasons
    }
}

public struct FaceJobResult: Codable, Sendable {
    public var outcome: FaceOutcome
    public var message: String?
    /// Best candidates, ascending distance (identify: this shard's top-k; verify: the best reference).
    public var candidates: [FaceCandidate]
    public var faceCount: Int?
    public var quality: FaceQualityReport?
    /// `enroll`: the template created.
    public var templateId: UUID?
    public var liveness: LivenessReport?
    /// `template`: the embedding sealed with the platform key under the context a `verify` job's `referenceSealedTemplate` opens with.
    public var sealedTemplate: Data?
    /// `liveness`: the frame whose face was used for the search (the most frontal with open eyes).
    public var bestFrameIndex: Int?
    public var shardIndex: Int
    public var shardCount: Int
    /// `identify` (and `liveness` with `identify`): the rule this shard decided with (the app's threshold,
    /// the matcher's margin for the model), so a merge of several shards decides exactly the same way.
    public var rule: MatchRule?
    /// Milliseconds per stage: decode, detect, embed, search, total.
    public var timings: [String: Double]
    /// `reembed`: what became of each kept photo.
    public var reembedded: [ReembedOutcome]?
    /// `enroll`: the photo was kept, sealed to the template.
    public var photoKept: Bool?

    public init(outcome: FaceOutcome, message: String? = nil, candidates: [FaceCandidate] = [], faceCount: Int? = nil,
                quality: FaceQualityReport? = nil, templateId: UUID? = nil, liveness: LivenessReport? = nil,
                shardIndex: Int = 0, shardCount: Int = 1, timings: [String: Double] = [:]) {
        self.outcome = outcome
        self.message = message
        self.candidates = candidates
        self.faceCount = faceCount
        self.quality = quality
        self.templateId = templateId
        self.liveness = liveness
        self.sealedTemplate = nil
        self.bestFrameIndex = nil
        self.shardIndex = shardIndex
        self.shardCount = shardCount
        self.rule = nil
        self.timings = timings
        self.reembedded = nil
        self.photoKept = nil
    }
}

/// One kept enrollment photo of a `reembed` job: `ENROLLED` with the new template, `ENROLLED` without one when the user
/// already held a template of the model, or why the photo was refused.
public struct ReembedOutcome: Codable, Sendable, Equatable {
    public var sourceTemplateId: UUID
    public var userId: UUID
    public var outcome: FaceOutcome
    public var templateId: UUID?
    public var message: String?
    public init(sourceTemplateId: UUID, userId: UUID, outcome: FaceOutcome, templateId: UUID? = nil, message: String? = nil) {
        self.sourceTemplateId = sourceTemplateId
        self.userId = userId
        self.outcome = outcome
        self.templateId = templateId
        self.message = message
    }
}

extension FaceJobResult {
    /// One shard's answer is the answer; several shards' top-k lists are merged and decided again.
    public static func merged(_ results: [FaceJobResult], for job: FaceJob) -> FaceJobResult {
        guard results.count > 1, var merged = results.first(where: { $0.outcome != .noMatchFace && $0.outcome != .match && $0.outcome != .ambiguousMatch }) ?? results.first else {
            return results[0]
        }
        if job.kind == .identify || (job.kind == .liveness && job.identify), results.allSatisfy({ [.match, .noMatchFace, .ambiguousMatch].contains($0.outcome) }) {
            merged.candidates = MatchRule.merge(results.map(\.candidates), k: job.topK)
            // Matchers report the rule they decided with. For shards that predate that, the job does not say the app's
            // model, so the merge takes the job's numbers and, where it has none, the strictest of the models' defaults.
            let rule = results.lazy.compactMap(\.rule).first ?? MatchRule.strictest(threshold: job.threshold, margin: job.margin)
            merged.outcome = rule.decide(merged.candidates).outcome
            merged.rule = rule
        } else if job.kind == .enroll, let owner = results.first(where: { $0.templateId != nil }) {
            merged = owner
        } else if job.kind == .reembed {
            // Every shard tries every photo and one of them stores it: per photo, the answer that made a template.
            var best: [UUID: ReembedOutcome] = [:]
            for outcome in results.flatMap({ $0.reembedded ?? [] }) where best[outcome.sourceTemplateId]?.templateId == nil {
                if outcome.templateId != nil || best[outcome.sourceTemplateId] == nil { best[outcome.sourceTemplateId] = outcome }
            }
            merged.reembedded = results.allSatisfy { $0.reembedded != nil } ? best.values.sorted { $0.sourceTemplateId.uuidString < $1.sourceTemplateId.uuidString } : nil
        }
        return merged
    }
}

/// A gallery change broadcast on `gallery.changes.v1` (key: template id). Carries no biometric data:
/// a matcher reads the sealed template from PostgreSQL by id.
public struct GalleryChange: Codable, Sendable, Equatable {
    public enum Operation: String, Codable, Sendable { case upsert, delete }
    public var operation: Operation
    public var appId: UUID
    public var userId: UUID
    public var templateId: UUID
    public var changeSeq: Int64
    public init(operation: Operation, appId: UUID, userId: UUID, templateId: UUID, changeSeq: Int64) {
        self.operation = operation
        self.appId = appId
        self.userId = userId
        self.templateId = templateId
        self.changeSeq = changeSeq
    }
}
