import FaceEngine
import FaceGateCore
import Foundation
import ServiceKit

public struct MatcherConfiguration: Sendable {
    public var common: CommonConfiguration
    public var modelDirectory: String
    public var engines: Int
    public var shardIndex: Int
    public var shardCount: Int
    public var storage: GalleryStorage
    public var reconcileSeconds: Int
    public var sealingKey: [UInt8]
    public var previousSealingKeys: [[UInt8]]
    public var maxPixels: Int
    /// The face models this matcher runs (`MATCHER_MODELS`, comma list; default: all). Every replica of a
    /// deployment should run every model its apps use.
    public var models: [FaceModel]
    /// Overrides of the models' own defaults (`FaceModel`), for dlib apps only: the variables predate SFace
    /// and are in dlib's units.
    public var dlibThreshold: Float
    public var dlibMargin: Float
    /// Enrollment quality gate: overrides of the models' minimum face width, and the minimum sharpness.
    public var minimumFaceWidthOverride: Int?
    public var minimumSharpness: Double
    /// The most identify queries of one gallery a single scan answers (`MATCHER_SEARCH_BATCH`, default 16): queries
    /// that arrive while a scan runs wait for the next one and share it. 1 scans each query alone on its job's thread.
    public var searchBatch: Int
    /// The threads an SFace login may use while no other is wanted (`MATCHER_LONE_JOB_THREADS`, default: every core);
    /// logins at once run on one thread each. 1: always one thread per job.
    public var loneJobThreads: Int

    public init(environment env: Environment) throws(ConfigurationError) {
        common = try CommonConfiguration(serviceName: "matcher-worker", defaultAdminPort: 9101,
                                          defaultStatementTimeoutMilliseconds: 600_000, environment: env)
        modelDirectory = try env.required("FACEGATE_MODEL_DIR")
        engines = try env.int("MATCHER_ENGINES", default: ProcessInfo.processInfo.activeProcessorCount, range: 1...256)
        loneJobThreads = try env.int("MATCHER_LONE_JOB_THREADS", default: ProcessInfo.processInfo.activeProcessorCount, range: 1...256)
        shardCount = try env.int("MATCHER_SHARD_COUNT", default: 1, range: 1...1024)
        shardIndex = try env.int("MATCHER_SHARD_INDEX", default: 0, range: 0...1023)
        guard shardIndex < shardCount else {
            throw ConfigurationError(variable: "MATCHER_SHARD_INDEX", problem: "must be below MATCHER_SHARD_COUNT (\(shardCount))")
        }
        let storageName = env.string("MATCHER_GALLERY_STORAGE", default: "float32")
        switch storageName {
        case "float32": storage = .float32
        case "float16": storage = .float16
        case "int8": storage = .int8
        default: throw ConfigurationError(variable: "MATCHER_GALLERY_STORAGE", problem: "must be float32, float16 or int8, got '\(storageName)'")
        }
        reconcileSeconds = try env.int("MATCHER_RECONCILE_SECONDS", default: 30, range: 1...86400)
        sealingKey = try env.base64Key("FACEGATE_SEALING_KEY", bytes: 32)
        previousSealingKeys = try env.previousSealingKeys()
        maxPixels = try env.int("FACEGATE_MAX_PIXELS", default: 16_000_000, range: 1...500_000_000)
        models = []
        for name in env.string("MATCHER_MODELS", default: FaceModel.allCases.map(\.rawValue).joined(separator: ",")).split(separator: ",") {
            guard let model = FaceModel(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                throw ConfigurationError(variable: "MATCHER_MODELS", problem: "unknown face model '\(name)'; known: "
                                         + FaceModel.allCases.map(\.rawValue).joined(separator: ", "))
            }
            if !models.contains(model) { models.append(model) }
        }
        guard !models.isEmpty else { throw ConfigurationError(variable: "MATCHER_MODELS", problem: "names no face model") }
        dlibThreshold = Float(try env.double("MATCHER_DEFAULT_THRESHOLD", default: Double(FaceModel.dlibResNetV1.defaultThreshold)))
        dlibMargin = Float(try env.double("MATCHER_AMBIGUITY_MARGIN", default: Double(FaceModel.dlibResNetV1.defaultMargin)))
        minimumFaceWidthOverride = env.optionalString("MATCHER_MIN_FACE_WIDTH") == nil
            ? nil : try env.int("MATCHER_MIN_FACE_WIDTH", default: 0, range: 1...10000)
        minimumSharpness = try env.double("MATCHER_MIN_SHARPNESS", default: 10)
        searchBatch = try env.int("MATCHER_SEARCH_BATCH", default: 16, range: 1...256)
    }

    func defaultThreshold(for model: FaceModel) -> Float { model == .dlibResNetV1 ? dlibThreshold : model.defaultThreshold }
    func margin(for model: FaceModel) -> Float { model == .dlibResNetV1 ? dlibMargin : model.defaultMargin }
    func minimumFaceWidth(for model: FaceModel) -> Int { minimumFaceWidthOverride ?? model.minimumFaceWidth }

    /// The consumer group: one per shard, so every shard sees every job; prefixed like the topics, so
    /// deployments sharing a broker never share a group.
    public var consumerGroup: String {
        common.topicPrefix + (shardCount == 1 ? "matcher-worker" : "matcher-worker-shard-\(shardIndex)-of-\(shardCount)")
    }
}
