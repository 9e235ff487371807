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
    /// 1:N search of a probe another shard embedded (`FaceJob.probeOnly`), as a template sealed with the platform key:
    /// a sharded gallery embeds a photo once and sends each shard the template, not the photo.
    case search

    public var messageType: String { "face.\(rawValue)" }
}

/// A face job: the app, the decision rule's numbers when the app sets them, and one payload per kind. On the wire one
/// flat object (`kind`, `appId`, `threshold`, `margin` and the kind's fields); `topK` and `duplicateCheck` are always
/// written, as matchers from before payloads require them.
public struct FaceJob: Codable, Sendable {
    /// What a `verify` compares the probe with.
    public enum Reference: Sendable, Equatable {
        /// A second image.
        case image(Data)
        /// The user's templates.
        case user(UUID)
        /// A template sealed with the platform key (e.g. a CTID registry portrait, a document's portrait).
        case sealedTemplate(Data)
    }

    /// An enrollment of `image` for `userId`.
    public struct Enrollment: Sendable, Equatable {
        public var image: Data
        public var userId: UUID
        /// Refuse a face that already matches another user of the app.
        public var duplicateCheck: Bool
        /// Embed with this model instead of the app's — the model the app is migrating to (`FaceModel.defaultForNewApps`),
        /// for progressive re-enrollment. Every other job runs on the app's model.
        public var model: FaceModel?
        /// The most templates of the model the user may hold. The matcher refuses the enrollment past it
        /// (`FACE_LIMIT_REACHED`) — after answering a redelivered or retried job from its record, so a retry whose first
        /// attempt filled the last place gets that template, not a refusal. nil: no limit.
        public var templateLimit: Int?
        /// Keep the photo, sealed to the new template, for a later move to another model (the app keeps enrollment photos
        /// and the person consented).
        public var keepPhoto: Bool
        /// The face to enroll, chosen by the operator: the detected face that overlaps this box most. nil: the matcher
        /// chooses the photo's subject.
        public var faceBox: FaceRegion?

        public init(image: Data, userId: UUID, duplicateCheck: Bool = true, model: FaceModel? = nil, templateLimit: Int? = nil,
                    keepPhoto: Bool = false, faceBox: FaceRegion? = nil) {
            self.image = image
            self.userId = userId
            self.duplicateCheck = duplicateCheck
            self.model = model
            self.templateLimit = templateLimit
            self.keepPhoto = keepPhoto
            self.faceBox = faceBox
        }
    }

    /// A burst of frames answering a liveness challenge.
    public struct Burst: Sendable, Equatable {
        public var frames: [Data]
        /// The actions the challenge asked for, in order.
        public var actions: [LivenessAction]
        /// When the burst is live, also search the gallery with its most frontal frame and decide like `identify` (same
        /// rule, threshold, margin; sent to every shard and merged like an identify).
        public var identify: Bool
        public var topK: Int

        public init(frames: [Data], actions: [LivenessAction], identify: Bool = false, topK: Int = 5) {
            self.frames = frames
            self.actions = actions
            self.identify = identify
            self.topK = topK
        }
    }

    public enum Payload: Sendable, Equatable {
        /// 1:N search of the probe (JPEG/PNG bytes, an attachment of the message's `EnvelopeFrame`) in the app's gallery.
        case identify(image: Data, topK: Int)
        case verify(image: Data, against: Reference)
        case enroll(Enrollment)
        /// Faces, boxes and quality only.
        case detect(image: Data)
        case liveness(Burst)
        /// One face of an acceptable photo, as a template sealed with the platform key. Nothing is persisted.
        case template(image: Data)
        /// The kept enrollment photos of these templates, each embedded with `model` and stored as its user's template.
        case reembed(model: FaceModel, templateIds: [UUID])
        /// 1:N search of a sealed probe template (`FaceJobKind.search`).
        case search(template: Data, topK: Int)
    }

    public var appId: UUID
    /// The app's decision rule; the matcher's defaults for the model apply where nil.
    public var threshold: Float?
    public var margin: Float?
    public var payload: Payload
    /// How the probe's subject is chosen among several faces: strict (the default: the largest face, and a refusal when
    /// another is nearly as large), or lenient (the face clearly best on size, sharpness, detector confidence and position)
    /// for an operator's search, where a wrong pick logs no one in.
    public var lenientSubject: Bool
    /// For an `identify` of a login from a device key bound to these users: the probe, embedded once, is first compared
    /// 1:1 with each of them in order (their templates, whatever shard holds them), and the first it verifies against
    /// answers `MATCH` with `boundMatch`; only then is the gallery searched, with the same embedding.
    public var boundUsers: [UUID]
    /// On a sharded gallery, the one shard that takes the job (every other leaves it unanswered): a job that needs no
    /// gallery slice (a verify, a detection), or the probe of a search. Nil: every shard takes it.
    public var shard: Int?
    /// An identify stops once the probe is embedded (and the bound users are compared), an enrollment once its face has
    /// passed the quality gate, storing nothing: it answers `DETECTED` with the probe as a template sealed with the
    /// platform key, for a `search` on every shard.
    public var probeOnly: Bool

    public init(appId: UUID, threshold: Float? = nil, margin: Float? = nil, lenientSubject: Bool = false, boundUsers: [UUID] = [],
                _ payload: Payload) {
        self.appId = appId
        self.threshold = threshold
        self.margin = margin
        self.lenientSubject = lenientSubject
        self.boundUsers = boundUsers
        self.shard = nil
        self.probeOnly = false
        self.payload = payload
    }

    public var kind: FaceJobKind {
        switch payload {
        case .identify: .identify
        case .verify: .verify
        case .enroll: .enroll
        case .detect: .detect
        case .liveness: .liveness
        case .template: .template
        case .reembed: .reembed
        case .search: .search
        }
    }

    /// The probe image of the kinds that have one.
    public var image: Data? {
        switch payload {
        case .identify(let image, _), .verify(let image, _), .detect(let image), .template(let image): image
        case .enroll(let enrollment): enrollment.image
        case .liveness, .reembed, .search: nil
        }
    }

    /// How many candidates a search answers (identify, and a liveness burst's search).
    public var topK: Int {
        switch payload {
        case .identify(_, let topK), .search(_, let topK): topK
        case .liveness(let burst): burst.topK
        default: 0
        }
    }

    /// A search decided like `identify`: an identify job, or a liveness burst that also identifies.
    public var identifies: Bool {
        switch payload {
        case .identify, .search: true
        case .liveness(let burst): burst.identify
        default: false
        }
    }

    private enum Keys: String, CodingKey {
        case kind, appId, threshold, margin, image, referenceImage, userId, referenceSealedTemplate, topK, duplicateCheck, frames, actions,
             identify, model, templateLimit, keepPhoto, templateIds, faceBox, lenientSubject, boundUsers, shard, probeOnly, probeTemplate
    }

    /// Fields a kind does without may be absent; a sender that predates `identify` or `keepPhoto` leaves them false.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        appId = try c.decode(UUID.self, forKey: .appId)
        threshold = try c.decodeIfPresent(Float.self, forKey: .threshold)
        margin = try c.decodeIfPresent(Float.self, forKey: .margin)
        lenientSubject = try c.decodeIfPresent(Bool.self, forKey: .lenientSubject) ?? false
        boundUsers = try c.decodeIfPresent([UUID].self, forKey: .boundUsers) ?? []
        shard = try c.decodeIfPresent(Int.self, forKey: .shard)
        probeOnly = try c.decodeIfPresent(Bool.self, forKey: .probeOnly) ?? false
        let topK = try c.decodeIfPresent(Int.self, forKey: .topK) ?? 5
        func image() throws -> Data { try c.decode(Data.self, forKey: .image) }
        payload = switch try c.decode(FaceJobKind.self, forKey: .kind) {
        case .identify: .identify(image: try image(), topK: topK)
        case .verify:
            if let reference = try c.decodeIfPresent(Data.self, forKey: .referenceImage) {
                .verify(image: try image(), against: .image(reference))
            } else if let sealed = try c.decodeIfPresent(Data.self, forKey: .referenceSealedTemplate) {
                .verify(image: try image(), against: .sealedTemplate(sealed))
            } else {
                .verify(image: try image(), against: .user(try c.decode(UUID.self, forKey: .userId)))
            }
        case .enroll:
            .enroll(Enrollment(image: try image(), userId: try c.decode(UUID.self, forKey: .userId),
                               duplicateCheck: try c.decodeIfPresent(Bool.self, forKey: .duplicateCheck) ?? true,
                               model: try c.decodeIfPresent(FaceModel.self, forKey: .model),
                               templateLimit: try c.decodeIfPresent(Int.self, forKey: .templateLimit),
                               keepPhoto: try c.decodeIfPresent(Bool.self, forKey: .keepPhoto) ?? false,
                               faceBox: try c.decodeIfPresent(FaceRegion.self, forKey: .faceBox)))
        case .detect: .detect(image: try image())
        case .liveness:
            .liveness(Burst(frames: try c.decode([Data].self, forKey: .frames),
                            actions: try c.decodeIfPresent([LivenessAction].self, forKey: .actions) ?? [],
                            identify: try c.decodeIfPresent(Bool.self, forKey: .identify) ?? false, topK: topK))
        case .template: .template(image: try image())
        case .reembed: .reembed(model: try c.decode(FaceModel.self, forKey: .model), templateIds: try c.decode([UUID].self, forKey: .templateIds))
        case .search: .search(template: try c.decode(Data.self, forKey: .probeTemplate), topK: topK)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(appId, forKey: .appId)
        try c.encodeIfPresent(threshold, forKey: .threshold)
        try c.encodeIfPresent(margin, forKey: .margin)
        if lenientSubject { try c.encode(true, forKey: .lenientSubject) }
        if !boundUsers.isEmpty { try c.encode(boundUsers, forKey: .boundUsers) }
        try c.encodeIfPresent(shard, forKey: .shard)
        if probeOnly { try c.encode(true, forKey: .probeOnly) }
        var duplicateCheck = false
        switch payload {
        case .identify(let image, _), .detect(let image), .template(let image):
            try c.encode(image, forKey: .image)
        case .verify(let image, let reference):
            try c.encode(image, forKey: .image)
            switch reference {
            case .image(let data): try c.encode(data, forKey: .referenceImage)
            case .user(let user): try c.encode(user, forKey: .userId)
            case .sealedTemplate(let data): try c.encode(data, forKey: .referenceSealedTemplate)
            }
        case .enroll(let enrollment):
            try c.encode(enrollment.image, forKey: .image)
            try c.encode(enrollment.userId, forKey: .userId)
            duplicateCheck = enrollment.duplicateCheck
            try c.encodeIfPresent(enrollment.model, forKey: .model)
            try c.encodeIfPresent(enrollment.templateLimit, forKey: .templateLimit)
            try c.encode(enrollment.keepPhoto, forKey: .keepPhoto)
            try c.encodeIfPresent(enrollment.faceBox, forKey: .faceBox)
        case .liveness(let burst):
            try c.encode(burst.frames, forKey: .frames)
            try c.encode(burst.actions, forKey: .actions)
            try c.encode(burst.identify, forKey: .identify)
        case .reembed(let model, let templateIds):
            try c.encode(model, forKey: .model)
            try c.encode(templateIds, forKey: .templateIds)
        case .search(let template, _):
            try c.encode(template, forKey: .probeTemplate)
        }
        try c.encode(topK, forKey: .topK)
        try c.encode(duplicateCheck, forKey: .duplicateCheck)
    }
}

/// A face's box in the pixels of the upright photo: its top-left corner and its size.
public struct FaceRegion: Codable, Sendable, Equatable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// `x,y,width,height` (a query parameter or a form field); nil when malformed or empty.
    public init?(text: String) {
        let parts = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 4, let x = parts[0], let y = parts[1], let width = parts[2], let height = parts[3],
              x >= 0, y >= 0, width > 0, height > 0 else { return nil }
        self.init(x: x, y: y, width: width, height: height)
    }

    /// Intersection over union with `other`: 0 apart, 1 the same box.
    public func overlap(_ other: FaceRegion) -> Double {
        let width = max(0, min(x + self.width, other.x + other.width) - max(x, other.x))
        let height = max(0, min(y + self.height, other.y + other.height) - max(y, other.y))
        let intersection = Double(width * height)
        let union = Double(self.width * self.height + other.width * other.height) - intersection
        return union > 0 ? intersection / union : 0
    }
}

/// Why a photo's subject could not be chosen: `LOW_QUALITY` with this reason and every face's box.
public enum SubjectRefusal {
    public static let ambiguous = "AMBIGUOUS_SUBJECT"
    public static let notInBox = "NO_FACE_IN_BOX"
}

public enum LivenessAction: String, Codable, Sendable, CaseIterable {
    case blink = "BLINK"
    case turnLeft = "TURN_LEFT"
    case turnRight = "TURN_RIGHT"
}

/// What a matcher concluded. Raw values are the wire codes.
public enum FaceOutcome: String, Codable, Sendable, CaseIterable {
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
    /// The face the job used (enroll, identify, verify), when the photo showed one it could choose.
    public var subject: FaceRegion?
    /// With `LOW_QUALITY`: `SubjectRefusal.ambiguous` or `.notInBox`, and every face's box, largest first.
    public var reason: String?
    public var faces: [FaceRegion]?
    /// An identify's `MATCH` with one of the job's `boundUsers`, compared 1:1 (its only candidate), not found by the search.
    public var boundMatch: Bool?
    /// An enrollment's probe: the distance within which another user's face refuses the enrollment (`DUPLICATE_FACE`).
    public var duplicateThreshold: Float?

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
        if job.identifies, results.allSatisfy({ [.match, .noMatchFace, .ambiguousMatch].contains($0.outcome) }) {
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
