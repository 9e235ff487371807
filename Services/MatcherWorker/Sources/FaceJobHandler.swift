import FaceEngine
import FaceGateCore
import IdentityRecords
import Foundation
import KafkaClient
import PostgresClient
import ServiceKit

/// Answers face jobs: decode the envelope, skip work past the deadline, run the engine of the app's face
/// model, search or persist, reply on the requester's partition. Enrollment is idempotent by message id.
final class FaceJobHandler: Sendable {
    private let engines: [FaceModel: FaceEnginePool]
    private let appModels: any AppModelLookup
    private let store: GalleryStore
    private let templates: any TemplateRecords
    /// Batches identify scans; nil scans each query alone.
    private let searches: GallerySearchQueue?
    /// Tells the other matchers of a template this one stored.
    private let changes: any GalleryChangeBroadcast
    private let sealer: Sealer
    private let configuration: MatcherConfiguration
    private let logger: Logger
    private let stageSeconds: Histogram
    private let outcomes: Counter
    private let embeddings: Counter

    init(engines: [FaceModel: FaceEnginePool], store: GalleryStore, searches: GallerySearchQueue?, appModels: any AppModelLookup,
         templates: any TemplateRecords, changes: any GalleryChangeBroadcast, sealer: Sealer, configuration: MatcherConfiguration,
         runtime: ServiceRuntime) {
        self.engines = engines
        self.appModels = appModels
        self.store = store
        self.templates = templates
        self.searches = searches
        self.changes = changes
        self.sealer = sealer
        self.configuration = configuration
        self.logger = runtime.logger
        stageSeconds = runtime.metrics.histogram("facegate_matcher_stage_seconds", help: "Face pipeline time per stage")
        outcomes = runtime.metrics.counter("facegate_matcher_outcomes_total", help: "Face job outcomes by kind and outcome")
        embeddings = runtime.metrics.counter("facegate_matcher_embeddings_total", help: "Faces embedded (a login's photo once, a burst's frames each)")
    }

    /// Over PostgreSQL, broadcasting stored templates on `changesTopic`.
    convenience init(engines: [FaceModel: FaceEnginePool], store: GalleryStore, searches: GallerySearchQueue?, database: PostgresPool,
                     producer: KafkaProducer, sealer: Sealer, configuration: MatcherConfiguration, changesTopic: String, runtime: ServiceRuntime) {
        self.init(engines: engines, store: store, searches: searches, appModels: AppFaceModels(database: database),
                  templates: TemplateStore(database: database, sealer: sealer), changes: KafkaGalleryBroadcast(producer: producer, topic: changesTopic),
                  sealer: sealer, configuration: configuration, runtime: runtime)
    }

    /// The consumer loop's handler: envelope, deadline, app scope and reply are the responder's.
    func responder(_ runtime: ServiceRuntime, producer: KafkaProducer) -> JobResponder<FaceJob> {
        JobResponder("face job", runtime: runtime, producer: producer, app: \.appId,
                     late: { [self] job in
                         answered(job, FaceJobResult(outcome: .timeout, message: "deadline passed before the job was taken"), started: .now)
                     },
                     takes: { [configuration] job in job.shard.map { $0 % configuration.shardCount == configuration.shardIndex } ?? true },
                     work: { [self] envelope in try await answer(envelope.payload, messageId: envelope.id) })
    }

    /// The answer to one job; `messageId` is its envelope's, under which an enrollment's first answer is kept.
    func answer(_ job: FaceJob, messageId: String) async throws -> FaceJobResult {
        let started = ContinuousClock.now
        logger.debug("face job started", ["job.id": messageId, "job.kind": job.kind.rawValue])
        let result: FaceJobResult
        do {
            result = try await runInApp(job, messageId: messageId)
        } catch let stop as Stop {
            result = stop.result
        } catch let error as FaceEngineError {
            result = Self.result(for: error)
        }
        let answered = answered(job, result, started: started)
        logger.info("face job answered", ["job.id": messageId, "app.id": job.appId.uuidString.lowercased(), "job.kind": job.kind.rawValue,
                                          "outcome": answered.outcome.rawValue, "duration_ms": String(format: "%.1f", answered.timings["total"] ?? 0)])
        return answered
    }

    /// The result with this shard's place and the total time, counted by outcome.
    private func answered(_ job: FaceJob, _ result: FaceJobResult, started: ContinuousClock.Instant) -> FaceJobResult {
        var result = result
        result.shardIndex = configuration.shardIndex
        result.shardCount = configuration.shardCount
        result.timings["total"] = (ContinuousClock.now - started).milliseconds
        outcomes.increment(["kind": job.kind.rawValue, "outcome": result.outcome.rawValue])
        return result
    }

    static func result(for error: FaceEngineError) -> FaceJobResult {
        switch error {
        case .imageFormat(let detail): FaceJobResult(outcome: .imageFormatError, message: detail)
        case .imageTooLarge(let width, let height): FaceJobResult(outcome: .imageFormatError, message: "image of \(width)×\(height) pixels is above the pixel limit")
        case .modelMissing(let detail), .internalError(let detail): FaceJobResult(outcome: .internalError, message: detail)
        }
    }

    /// Every job runs on the engine of the app's face model, read from PostgreSQL (never from the message); the one
    /// exception is an enrollment for the model the app migrates to (progressive re-enrollment).
    private func runInApp(_ job: FaceJob, messageId: String) async throws -> FaceJobResult {
        var model = try await appModels.model(of: job.appId)
        let named: FaceModel? = switch job.payload {
        case .enroll(let enrollment): enrollment.model
        case .reembed(let target, _): target
        default: nil
        }
        if let target = named, target != model {
            guard target == .defaultForNewApps else {
                return FaceJobResult(outcome: .internalError,
                                     message: "an enrollment or a re-embedding may name only the model apps migrate to, \(FaceModel.defaultForNewApps.rawValue)")
            }
            model = target
        }
        guard let pool = engines[model] else {
            return FaceJobResult(outcome: .internalError, message: "this matcher does not run the app's face model \(model.rawValue)")
        }
        let engine = ModelEngine(model: model, pool: pool)
        switch job.payload {
        case .identify(let image, let topK): return try await identify(image, topK: topK, job, engine)
        case .verify(let image, let reference): return try await verify(image, against: reference, job, engine)
        case .enroll(let enrollment): return try await enroll(enrollment, job, engine, messageId: messageId)
        case .detect(let image): return try await detect(image, engine)
        case .liveness(let burst): return try await liveness(burst, job, engine)
        case .template(let image): return try await template(image, engine)
        case .reembed(_, let templateIds): return try await reembed(templateIds, job, engine)
        case .search(let template, let topK): return try await search(template, topK: topK, job, engine)
        }
    }

    /// The engines of one model, and the model.
    struct ModelEngine {
        var model: FaceModel
        var pool: FaceEnginePool
    }

    /// The k nearest templates of the app's gallery of the engine's model.
    private func search(_ embedding: [Float], k: Int, _ job: FaceJob, _ engine: ModelEngine) async -> [GalleryMatch] {
        let gallery = store.gallery(of: job.appId, model: engine.model)
        guard let searches else { return gallery.search(embedding, k: k) }
        return await searches.search(embedding, k: k, in: gallery)
    }

    private func rule(for job: FaceJob, _ model: FaceModel) -> MatchRule {
        MatchRule(threshold: job.threshold ?? configuration.defaultThreshold(for: model), margin: job.margin ?? configuration.margin(for: model))
    }


    /// An outcome that ends a job early (no face, bad image, …), thrown from deep in a job and answered as is.
    struct Stop: Error {
        var result: FaceJobResult
    }

    /// The subject of an image with its embedding, and every face seen (largest first); throws `Stop` otherwise: no face,
    /// or no subject (`SubjectSelection`: strict unless `lenient`; `box`, an operator's choice).
    private func probe(_ image: Data, _ engine: ModelEngine, lenient: Bool = false, box: FaceRegion? = nil,
                       timings: inout [String: Double]) async throws -> (DetectedFace, [DetectedFace]) {
        let analysis = try await engine.pool.analyze(Array(image))
        timings["decode"] = analysis.decodeMilliseconds
        timings["detect"] = analysis.detectMilliseconds
        timings["embed"] = analysis.embedMilliseconds
        stageSeconds.observe(analysis.decodeMilliseconds / 1000, ["stage": "decode"])
        stageSeconds.observe(analysis.detectMilliseconds / 1000, ["stage": "detect"])
        stageSeconds.observe(analysis.embedMilliseconds / 1000, ["stage": "embed"])
        guard var face = analysis.faces.first, face.embedding != nil else {
            throw Stop(result: FaceJobResult(outcome: .noFace, faceCount: 0, timings: timings))
        }
        embeddings.increment()
        let faces = analysis.faces
        switch SubjectSelection.choose(faces, width: analysis.width, height: analysis.height, lenient: lenient, box: box) {
        case .face(0):
            break
        case .face(let index):
            // Not the largest: embedded on its own (the analysis embeds the largest face only).
            face = faces[index]
            face.embedding = try await engine.pool.embedding(Array(image), box: face.box)
            embeddings.increment()
        case .ambiguous:
            throw Stop(result: Self.subjectRefusal(SubjectRefusal.ambiguous, "\(faces.count) faces in the image and none clearly the subject; "
                                                   + (lenient ? "name the face with faceBox, or use a photo of one person" : "use a photo of one person"),
                                                   faces: faces, timings: timings))
        case .notInBox:
            throw Stop(result: Self.subjectRefusal(SubjectRefusal.notInBox, "no detected face in faceBox; the faces seen are listed",
                                                   faces: faces, timings: timings))
        }
        return (face, faces)
    }

    /// `LOW_QUALITY` for a photo whose subject cannot be told: why, and every face's box.
    private static func subjectRefusal(_ reason: String, _ message: String, faces: [DetectedFace], liveness: LivenessReport? = nil,
                                       timings: [String: Double]) -> FaceJobResult {
        var refused = FaceJobResult(outcome: .lowQuality, message: message, faceCount: faces.count, liveness: liveness, timings: timings)
        refused.reason = reason
        refused.faces = faces.map { SubjectSelection.region($0.box) }
        return refused
    }

    private func identify(_ image: Data, topK: Int, _ job: FaceJob, _ engine: ModelEngine) async throws -> FaceJobResult {
        var timings: [String: Double] = [:]
        let (face, faces) = try await probe(image, engine, lenient: job.lenientSubject, timings: &timings)
        let faceCount = faces.count
        let rule = rule(for: job, engine.model)
        // A bound device's users first, 1:1 with the same embedding: a photo is embedded once per login.
        for userId in job.boundUsers {
            guard let best = try await nearestTemplate(of: userId, to: face.embedding!, job, engine), rule.verifies(best.distance) else { continue }
            var result = FaceJobResult(outcome: .match, candidates: [best], faceCount: faceCount, quality: Self.report(face.quality), timings: timings)
            result.boundMatch = true
            result.rule = rule
            result.subject = SubjectSelection.region(face.box)
            return result
        }
        if job.probeOnly {
            // The search runs on every shard, with this embedding sealed instead of the photo.
            var result = FaceJobResult(outcome: .detected, faceCount: faceCount, quality: Self.report(face.quality), timings: timings)
            result.sealedTemplate = Data(try sealer.sealTemplate(face.embedding!, templateId: engine.model.referenceTemplateKey))
            result.subject = SubjectSelection.region(face.box)
            return result
        }
        let searchStart = ContinuousClock.now
        let matches = await search(face.embedding!, k: max(1, min(topK, 100)), job, engine)
        timings["search"] = (ContinuousClock.now - searchStart).milliseconds
        stageSeconds.observe(timings["search"]! / 1000, ["stage": "search"])
        let candidates = matches.map(Self.candidate)
        var result = FaceJobResult(outcome: rule.decide(candidates).outcome, candidates: candidates, faceCount: faceCount,
                                   quality: Self.report(face.quality), timings: timings)
        result.rule = rule
        result.subject = SubjectSelection.region(face.box)
        return result
    }

    /// The user's template of the engine's model nearest to `probe` (read from PostgreSQL, so any shard can answer); nil when
    /// the user holds none.
    private func nearestTemplate(of userId: UUID, to probe: [Float], _ job: FaceJob, _ engine: ModelEngine) async throws -> FaceCandidate? {
        try await templates.embeddings(appId: job.appId, userId: userId, model: engine.model)
            .map { FaceCandidate(userId: userId, templateId: $0.templateId, distance: euclideanDistance(probe, $0.embedding)) }
            .min { $0.distance < $1.distance }
    }

    /// The search half of an identify whose probe a shard embedded (`FaceJob.probeOnly`): this shard's slice of the gallery.
    private func search(_ template: Data, topK: Int, _ job: FaceJob, _ engine: ModelEngine) async throws -> FaceJobResult {
        let probe: [Float]
        do {
            probe = try sealer.openTemplate(Array(template), templateId: engine.model.referenceTemplateKey)
        } catch {
            return FaceJobResult(outcome: .internalError, message: "the probe template was not made with the app's face model \(engine.model.rawValue)")
        }
        let started = ContinuousClock.now
        let candidates = await search(probe, k: max(1, min(topK, 100)), job, engine).map(Self.candidate)
        let timings = ["search": (ContinuousClock.now - started).milliseconds]
        stageSeconds.observe(timings["search"]! / 1000, ["stage": "search"])
        let rule = rule(for: job, engine.model)
        var result = FaceJobResult(outcome: rule.decide(candidates).outcome, candidates: candidates, timings: timings)
        result.rule = rule
        return result
    }

    private func verify(_ image: Data, against reference: FaceJob.Reference, _ job: FaceJob, _ engine: ModelEngine) async throws -> FaceJobResult {
        var timings: [String: Double] = [:]
        let (face, faces) = try await probe(image, engine, timings: &timings)
        let faceCount = faces.count
        let probe = face.embedding!
        var candidates: [FaceCandidate] = []
        switch reference {
        case .image(let reference):
            var referenceTimings: [String: Double] = [:]
            let referenceFace: DetectedFace
            do {
                (referenceFace, _) = try await self.probe(reference, engine, lenient: true, timings: &referenceTimings)
            } catch var stop as Stop {
                stop.result.message = "reference image: " + (stop.result.message ?? stop.result.outcome.rawValue)
                throw stop
            }
            candidates.append(FaceCandidate(userId: platformAppId, templateId: platformAppId,
                                            distance: euclideanDistance(probe, referenceFace.embedding!)))
        case .sealedTemplate(let sealed):
            let reference: [Float]
            do {
                reference = try sealer.openTemplate(Array(sealed), templateId: engine.model.referenceTemplateKey)
            } catch {
                return FaceJobResult(outcome: .internalError, message: "the reference template was not made with the app's face model \(engine.model.rawValue)")
            }
            candidates.append(FaceCandidate(userId: platformAppId, templateId: platformAppId, distance: euclideanDistance(probe, reference)))
        case .user(let userId):
            guard let nearest = try await nearestTemplate(of: userId, to: probe, job, engine) else {
                return FaceJobResult(outcome: .noMatchFace, message: "the user has no enrolled face", faceCount: faceCount, timings: timings)
            }
            candidates.append(nearest)
        }
        candidates.sort { $0.distance < $1.distance }
        return FaceJobResult(outcome: rule(for: job, engine.model).verifies(candidates[0].distance) ? .match : .noMatchFace, candidates: [candidates[0]],
                             faceCount: faceCount, quality: Self.report(face.quality), timings: timings)
    }

    /// What enrollment and reference templates require of their subject (chosen by `SubjectSelection`): wide and sharp
    /// enough.
    private func qualityGate(_ face: DetectedFace, faces: [DetectedFace], model: FaceModel, timings: [String: Double]) -> FaceJobResult? {
        let quality = Self.report(face.quality)
        let minimumWidth = configuration.minimumFaceWidth(for: model)
        if face.quality.faceWidth < minimumWidth {
            return FaceJobResult(outcome: .lowQuality, message: "face is \(face.quality.faceWidth) px wide; at least \(minimumWidth) px needed",
                                 faceCount: faces.count, quality: quality, timings: timings)
        }
        let minimumSharpness = configuration.minimumSharpness
        if face.quality.sharpness < minimumSharpness {
            return FaceJobResult(outcome: .lowQuality, message: "face is too blurred (sharpness \(Int(face.quality.sharpness)), at least \(Int(minimumSharpness)) needed)",
                                 faceCount: faces.count, quality: quality, timings: timings)
        }
        return nil
    }

    private func enroll(_ enrollment: FaceJob.Enrollment, _ job: FaceJob, _ engine: ModelEngine, messageId: String) async throws -> FaceJobResult {
        let userId = enrollment.userId
        // A redelivered enrollment answers what the first delivery answered.
        if let previous = try await templates.recordedAnswer(toEnrollment: messageId) { return previous }
        // Counted here to spare the embedding, and again under the user's lock when the template is stored.
        if let limit = enrollment.templateLimit {
            let held = try await templates.count(appId: job.appId, userId: userId, model: engine.model)
            if held >= limit { return Self.limitReached(held: held, limit: limit) }
        }
        var timings: [String: Double] = [:]
        let (face, faces) = try await probe(enrollment.image, engine, lenient: true, box: enrollment.faceBox, timings: &timings)
        let faceCount = faces.count
        let quality = Self.report(face.quality)
        if let refused = qualityGate(face, faces: faces, model: engine.model, timings: timings) { return refused }
        let embedding = face.embedding!
        let duplicateThreshold = min(job.threshold ?? configuration.defaultThreshold(for: engine.model), engine.model.duplicateThreshold)
        if job.probeOnly {
            // A sharded gallery: every shard's slice is searched for a duplicate with this embedding, then one shard stores it.
            var result = FaceJobResult(outcome: .detected, faceCount: faceCount, quality: quality, timings: timings)
            result.sealedTemplate = Data(try sealer.sealTemplate(embedding, templateId: engine.model.referenceTemplateKey))
            result.duplicateThreshold = duplicateThreshold
            result.subject = SubjectSelection.region(face.box)
            return result
        }
        if enrollment.duplicateCheck {
            let threshold = duplicateThreshold
            let others = await search(embedding, k: 10, job, engine)
                .filter { $0.userId != userId && $0.distance <= threshold }
            if let duplicate = others.first {
                return FaceJobResult(outcome: .duplicateFace, message: "the face is already enrolled for another user",
                                     candidates: [Self.candidate(duplicate)], faceCount: faceCount, quality: quality, timings: timings)
            }
        }
        let template = TemplateStore.NewTemplate(id: store.newTemplateId(), appId: job.appId, userId: userId, model: engine.model,
                                                 embedding: embedding, quality: quality,
                                                 photo: enrollment.keepPhoto ? enrollment.image : nil)
        var enrolled = FaceJobResult(outcome: .enrolled, faceCount: faceCount, quality: quality, templateId: template.id, timings: timings)
        enrolled.subject = SubjectSelection.region(face.box)
        let result = enrolled
        let answer: @Sendable (Bool) -> FaceJobResult = { kept in
            var answer = result
            answer.photoKept = kept
            return answer
        }
        switch try await templates.insert(template, limit: enrollment.templateLimit, onlyIfNone: false, answering: (messageId, answer)) {
        case .inserted(let seq, let photoKept):
            await publish(template, seq: seq)
            return answer(photoKept)
        case .answeredBefore(let previous):
            return previous
        case .limitReached(let held):
            return Self.limitReached(held: held, limit: enrollment.templateLimit ?? held)
        case .userNotFound, .alreadyHeld:
            return FaceJobResult(outcome: .internalError, message: "user not found in this app", faceCount: faceCount, quality: quality, timings: timings)
        }
    }

    private static func limitReached(held: Int, limit: Int) -> FaceJobResult {
        FaceJobResult(outcome: .faceLimitReached, message: "the user already has \(held) face templates (at most \(limit)); delete one first")
    }

    /// A committed template: into this matcher's gallery, and broadcast to the others.
    private func publish(_ template: TemplateStore.NewTemplate, seq: Int64) async {
        store.add(templateId: template.id, appId: template.appId, userId: template.userId, model: template.model, embedding: template.embedding)
        store.noteSeq(seq)
        let change = GalleryChange(operation: .upsert, appId: template.appId, userId: template.userId, templateId: template.id, changeSeq: seq)
        do {
            try await changes.broadcast(change)
        } catch {
            // Other matchers pick the template up at their next reconciliation.
            logger.warning("gallery change not broadcast", ["error": "\(error)", "template.id": template.id.wire])
        }
    }

    /// `reembed`: the kept enrollment photos of `templateIds`, each embedded with the job's model and stored as its
    /// user's template of that model, unless the user already holds one (made by a login, or by another shard). The
    /// photos are opened here and nowhere else, and leave this process only as templates.
    private func reembed(_ templateIds: [UUID], _ job: FaceJob, _ engine: ModelEngine) async throws -> FaceJobResult {
        var outcomes: [ReembedOutcome] = []
        // Every shard gets the job; each re-embeds the photos of the templates it holds, so each photo is embedded once.
        for kept in try await templates.keptPhotos(appId: job.appId, templateIds: templateIds) where store.owns(kept.templateId) {
            var outcome = ReembedOutcome(sourceTemplateId: kept.templateId, userId: kept.userId, outcome: .enrolled)
            do {
                let photo = try sealer.openEnrollmentPhoto(kept.sealed, templateId: kept.templateId)
                var timings: [String: Double] = [:]
                let (face, faces) = try await probe(Data(photo), engine, lenient: true, timings: &timings)
                if let refused = qualityGate(face, faces: faces, model: engine.model, timings: timings) { throw Stop(result: refused) }
                let template = TemplateStore.NewTemplate(id: store.newTemplateId(), appId: job.appId, userId: kept.userId, model: engine.model,
                                                         embedding: face.embedding!,
                                                         quality: Self.report(face.quality))
                switch try await templates.insert(template, onlyIfNone: true) {
                case .inserted(let seq, _):
                    await publish(template, seq: seq)
                    outcome.templateId = template.id
                case .alreadyHeld, .limitReached, .answeredBefore:
                    outcome.message = "the user already holds a template of \(engine.model.rawValue)"
                case .userNotFound:
                    (outcome.outcome, outcome.message) = (.internalError, "user not found in this app")
                }
            } catch let stop as Stop {
                (outcome.outcome, outcome.message) = (stop.result.outcome, stop.result.message)
            } catch let error as FaceEngineError {
                let refused = Self.result(for: error)
                (outcome.outcome, outcome.message) = (refused.outcome, refused.message)
            } catch is SealingError {
                (outcome.outcome, outcome.message) = (.internalError, "the kept photo does not open with the sealing keys")
            }
            outcomes.append(outcome)
        }
        var result = FaceJobResult(outcome: .enrolled)
        result.reembedded = outcomes
        return result
    }

    /// The same quality gate as enrollment, then the embedding sealed as a reference template.
    private func template(_ image: Data, _ engine: ModelEngine) async throws -> FaceJobResult {
        var timings: [String: Double] = [:]
        let (face, faces) = try await probe(image, engine, lenient: true, timings: &timings)
        let quality = Self.report(face.quality)
        if let refused = qualityGate(face, faces: faces, model: engine.model, timings: timings) { return refused }
        var result = FaceJobResult(outcome: .detected, faceCount: faces.count, quality: quality, timings: timings)
        result.sealedTemplate = Data(try sealer.sealTemplate(face.embedding!, templateId: engine.model.referenceTemplateKey))
        return result
    }

    private func detect(_ image: Data, _ engine: ModelEngine) async throws -> FaceJobResult {
        let analysis = try await engine.pool.analyze(Array(image), options: FaceAnalysisOptions(embeddings: false, landmarks68: false, maxFaces: 1))
        let timings = ["decode": analysis.decodeMilliseconds, "detect": analysis.detectMilliseconds]
        guard let face = analysis.faces.first else { return FaceJobResult(outcome: .noFace, faceCount: 0, timings: timings) }
        return FaceJobResult(outcome: .detected, faceCount: analysis.faceCount, quality: Self.report(face.quality), timings: timings)
    }

    /// Liveness over the burst, analysed once; with `identify`, a live burst is then searched like an
    /// identify job with its most frontal open-eyed frame (same rule, threshold and margin).
    private func liveness(_ burst: FaceJob.Burst, _ job: FaceJob, _ engine: ModelEngine) async throws -> FaceJobResult {
        let frames = burst.frames
        guard !frames.isEmpty else {
            return FaceJobResult(outcome: .imageFormatError, message: "no frames in the liveness job")
        }
        var timings: [String: Double] = [:]
        let analyses = try await analyzeFrames(frames, engine.pool, timings: &timings)
        let faceCount = analyses.map(\.faceCount).max()
        let verdict = LivenessAnalyzer.evaluate(frames: frames, analyses: analyses, actions: burst.actions,
                                                sameFaceDistance: engine.model.sameFaceDistance)
        if analyses.allSatisfy({ $0.faces.isEmpty }) {
            return FaceJobResult(outcome: .noFace, faceCount: 0, liveness: verdict, timings: timings)
        }
        // A burst is one person's: the largest face of every frame is the same person (the verdict), and no frame may
        // hold a second face nearly as large — a bystander's face must never be the one searched.
        if let crowded = analyses.first(where: { SubjectSelection.choose($0.faces, width: $0.width, height: $0.height, lenient: false) == .ambiguous }) {
            return Self.subjectRefusal(SubjectRefusal.ambiguous, "a frame shows \(crowded.faces.count) faces and none clearly the subject; one person at a time",
                                       faces: crowded.faces, liveness: verdict, timings: timings)
        }
        guard verdict.passed, let bestIndex = LivenessAnalyzer.mostFrontal(analyses) else {
            return FaceJobResult(outcome: .spoofDetected, message: "liveness failed: " + verdict.reasons.joined(separator: "; "),
                                 faceCount: faceCount, liveness: verdict, timings: timings)
        }
        let best = analyses[bestIndex].faces[0]
        var result = FaceJobResult(outcome: .live, faceCount: faceCount, quality: Self.report(best.quality), liveness: verdict, timings: timings)
        result.bestFrameIndex = bestIndex
        if job.probeOnly, burst.identify, let embedding = best.embedding {
            // Live: the most frontal frame's face, sealed, for the search every shard runs.
            result.outcome = .detected
            result.sealedTemplate = Data(try sealer.sealTemplate(embedding, templateId: engine.model.referenceTemplateKey))
            return result
        }
        let k = burst.identify ? max(1, min(burst.topK, 100)) : min(burst.topK, 100)
        if k > 0, let embedding = best.embedding {
            let searchStart = ContinuousClock.now
            result.candidates = await search(embedding, k: k, job, engine).map(Self.candidate)
            result.timings["search"] = (ContinuousClock.now - searchStart).milliseconds
            stageSeconds.observe(result.timings["search"]! / 1000, ["stage": "search"])
        }
        if burst.identify {
            let rule = rule(for: job, engine.model)
            result.outcome = rule.decide(result.candidates).outcome
            result.rule = rule
        }
        return result
    }

    /// Every frame with 68-point landmarks and an embedding, spread over the engine pool, in frame order.
    private func analyzeFrames(_ frames: [Data], _ engines: FaceEnginePool, timings: inout [String: Double]) async throws -> [FaceAnalysis] {
        let analyses = try await withThrowingTaskGroup(of: (Int, FaceAnalysis).self) { group in
            for (index, frame) in frames.enumerated() {
                group.addTask {
                    (index, try await engines.analyze(Array(frame), options: FaceAnalysisOptions(embeddings: true, landmarks68: true, maxFaces: 1)))
                }
            }
            var ordered = [FaceAnalysis?](repeating: nil, count: frames.count)
            for try await (index, analysis) in group { ordered[index] = analysis }
            return ordered.compactMap { $0 }
        }
        var decode = 0.0, detect = 0.0, embed = 0.0
        embeddings.increment(by: Double(analyses.filter { $0.faces.first?.embedding != nil }.count))
        for analysis in analyses {
            decode += analysis.decodeMilliseconds
            detect += analysis.detectMilliseconds
            embed += analysis.embedMilliseconds
        }
        let stages: [(String, Double)] = [("decode", decode), ("detect", detect), ("embed", embed)]
        for (stage, value) in stages {
            timings[stage] = value
            stageSeconds.observe(value / 1000, ["stage": stage])
        }
        return analyses
    }

    static func candidate(_ match: GalleryMatch) -> FaceCandidate {
        FaceCandidate(userId: match.userId, templateId: match.templateId, distance: match.distance)
    }

    static func report(_ quality: FaceQuality) -> FaceQualityReport {
        FaceQualityReport(faceWidth: quality.faceWidth, sharpness: quality.sharpness, brightness: quality.brightness, yaw: quality.yaw)
    }
}
