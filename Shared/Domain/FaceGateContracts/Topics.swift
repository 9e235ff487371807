/// Kafka topic names, optionally prefixed (`FACEGATE_TOPIC_PREFIX`) so tests and tenants of a shared
/// broker stay apart. Partition counts are the defaults the local stack and deploy/ create.
public struct Topics: Sendable {
    public var prefix: String
    public init(prefix: String = "") { self.prefix = prefix }

    public var faceJobs: String { prefix + "face.jobs.v1" }
    public var ctidJobs: String { prefix + "ctid.jobs.v1" }
    public var kioskCommands: String { prefix + "kiosk.commands.v1" }
    public var galleryChanges: String { prefix + "gallery.changes.v1" }
    public var kioskEvents: String { prefix + "kiosk.events.v1" }
    public var auditTransactions: String { prefix + "audit.transactions.v1" }
    public func replies(service: String) -> String { prefix + "replies.\(service).v1" }
    public func deadLetter(of topic: String) -> String { topic + ".dlq" }

    /// The services allowed to produce to `topic` (its messages' signers); nobody for an unknown topic.
    public func producers(of topic: String) -> Set<String> {
        let everyone: Set<String> = ["auth-gateway", "matcher-worker", "ctid-verifier", "kiosk-orchestrator"]
        switch topic {
        case faceJobs: return ["auth-gateway", "kiosk-orchestrator", "ctid-verifier"]
        case ctidJobs, kioskCommands: return ["auth-gateway"]
        case galleryChanges: return ["auth-gateway", "matcher-worker"]
        case kioskEvents: return ["kiosk-orchestrator"]
        case auditTransactions: return everyone
        default:
            if isReplyTopic(topic) { return ["matcher-worker", "ctid-verifier", "kiosk-orchestrator"] }
            if topic.hasSuffix(".dlq") { return everyone }
            return []
        }
    }

    /// The service that consumes a job topic, and so the only one whose replies to its jobs count.
    public func responder(of topic: String) -> String? {
        switch topic {
        case faceJobs: "matcher-worker"
        case ctidJobs: "ctid-verifier"
        case kioskCommands: "kiosk-orchestrator"
        default: nil
        }
    }

    /// The one service that may read a topic's values: a job topic's consumer, or the service a reply topic
    /// (`replies.<service>.v1`) belongs to. Such values are sealed to that service; nil for every other topic.
    public func reader(of topic: String) -> String? {
        if let responder = responder(of: topic) { return responder }
        guard isReplyTopic(topic) else { return nil }
        return String(topic.dropFirst(prefix.count + "replies.".count).dropLast(".v1".count))
    }

    /// One of the platform's reply topics: the only place a job's `replyTo` may point.
    public func isReplyTopic(_ topic: String) -> Bool {
        topic.hasPrefix(prefix + "replies.") && topic.hasSuffix(".v1") && !topic.contains(".dlq")
    }

    /// Job and reply topics carry photos, ID portraits and document data: the broker keeps them ten minutes
    /// (far beyond any job's deadline), in one-minute segments so that deletion can happen on time. The
    /// same values as deploy/'s topic script.
    public static let shortRetention = ["retention.ms": "600000", "segment.ms": "60000"]

    /// Every topic with its partition count and config, for `KafkaAdmin.ensureTopics`.
    public var all: [(name: String, partitions: Int, config: [String: String])] {
        var topics: [(String, Int, [String: String])] = [
            (faceJobs, 12, Self.shortRetention), (ctidJobs, 6, Self.shortRetention), (kioskCommands, 6, Self.shortRetention),
            (galleryChanges, 6, ["cleanup.policy": "compact"]), (kioskEvents, 6, [:]), (auditTransactions, 6, [:]),
        ]
        for service in ["auth-gateway", "ctid-verifier", "kiosk-orchestrator"] {
            topics.append((replies(service: service), 16, Self.shortRetention))
        }
        for topic in [faceJobs, ctidJobs, kioskCommands] {
            topics.append((deadLetter(of: topic), 1, [:]))
        }
        return topics
    }
}
