import FaceEngine
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
    public var maxPixels: Int
    /// Decision defaults when an app sets none.
    public var defaultThreshold: Float
    public var ambiguityMargin: Float
    /// Enrollment quality gate.
    public var minimumFaceWidth: Int
    public var minimumSharpness: Double

    public init(environment env: Environment) throws(ConfigurationError) {
        common = try CommonConfiguration(serviceName: "matcher-worker", defaultAdminPort: 9101,
                                          defaultStatementTimeoutMilliseconds: 600_000, environment: env)
        modelDirectory = try env.required("FACEGATE_MODEL_DIR")
        engines = try env.int("MATCHER_ENGINES", default: ProcessInfo.processInfo.activeProcessorCount, range: 1...256)
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
        maxPixels = try env.int("FACEGATE_MAX_PIXELS", default: 40_000_000, range: 1...500_000_000)
        defaultThreshold = Float(try env.double("MATCHER_DEFAULT_THRESHOLD", default: 0.5))
        ambiguityMargin = Float(try env.double("MATCHER_AMBIGUITY_MARGIN", default: 0.06))
        minimumFaceWidth = try env.int("MATCHER_MIN_FACE_WIDTH", default: 80, range: 1...10000)
        minimumSharpness = try env.double("MATCHER_MIN_SHARPNESS", default: 10)
    }

    /// The consumer group: one per shard, so every shard sees every job; prefixed like the topics, so
    /// deployments sharing a broker never share a group.
    public var consumerGroup: String {
        common.topicPrefix + (shardCount == 1 ? "matcher-worker" : "matcher-worker-shard-\(shardIndex)-of-\(shardCount)")
    }
}
