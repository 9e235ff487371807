/// The identification decision, shared by the matcher (one shard) and the requester (merging shards):
/// the best candidate must be within `threshold`, and the best candidate of any *other* user must not
/// be within `margin` of it (a near tie between two people is refused, never guessed).
public struct MatchRule: Codable, Sendable, Equatable {
    public var threshold: Float
    public var margin: Float

    public init(threshold: Float, margin: Float) {
        self.threshold = threshold
        self.margin = margin
    }

    /// The model's defaults, each replaced by the job's value where it has one.
    public init(model: FaceModel, threshold: Float? = nil, margin: Float? = nil) {
        self.init(threshold: threshold ?? model.defaultThreshold, margin: margin ?? model.defaultMargin)
    }

    public enum Decision: Sendable, Equatable {
        case match(FaceCandidate)
        case noMatch(best: FaceCandidate?)
        case ambiguous(FaceCandidate, FaceCandidate)

        public var outcome: FaceOutcome {
            switch self {
            case .match: .match
            case .noMatch: .noMatchFace
            case .ambiguous: .ambiguousMatch
            }
        }
    }

    public func decide(_ candidates: [FaceCandidate]) -> Decision {
        let sorted = candidates.sorted { $0.distance < $1.distance }
        guard let best = sorted.first, best.distance <= threshold else { return .noMatch(best: sorted.first) }
        if let rival = sorted.first(where: { $0.userId != best.userId }), rival.distance <= threshold, rival.distance - best.distance < margin {
            return .ambiguous(best, rival)
        }
        return .match(best)
    }

    /// `threshold` and `margin` where given, else the strictest of every model's defaults (the smallest threshold, the
    /// widest margin): for deciding when the model is not known.
    public static func strictest(threshold: Float?, margin: Float?) -> MatchRule {
        MatchRule(threshold: threshold ?? FaceModel.allCases.map(\.defaultThreshold).min()!,
                  margin: margin ?? FaceModel.allCases.map(\.defaultMargin).max()!)
    }

    /// A 1:1 comparison's decision: the same face when within the threshold.
    public func verifies(_ distance: Float) -> Bool { distance <= threshold }

    /// The candidates the face may be: those within the threshold (a confirmation then asks which one it is).
    public func possible(_ candidates: [FaceCandidate]) -> [FaceCandidate] { candidates.filter { verifies($0.distance) } }

    /// A match sure enough to act on without asking (a login's probe kept as a newer model's template): within the
    /// threshold by at least the margin.
    public func isConfident(_ distance: Float) -> Bool { distance <= threshold - margin }

    /// Merges the partial top-k lists of several shards into one top-k.
    public static func merge(_ partials: [[FaceCandidate]], k: Int) -> [FaceCandidate] {
        Array(partials.joined().sorted { $0.distance < $1.distance }.prefix(k))
    }
}
