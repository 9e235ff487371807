/// Turns a search's ranked candidates into a login decision.
public struct MatchPolicy: Sendable {
    /// Largest distance accepted as the same person (dlib ResNet: same person
    /// typically 0.23–0.44, different people 0.8+).
    public var threshold: Float
    /// A different user this close to the best candidate makes the answer ambiguous.
    public var margin: Float

    public init(threshold: Float = 0.5, margin: Float = 0.06) {
        self.threshold = threshold
        self.margin = margin
    }

    /// `matches` in ascending distance, as `FaceGallery.search` returns them.
    /// No candidate, or the best beyond the threshold: `.noMatch`. The nearest
    /// candidate of another user within the threshold and within `margin` of the
    /// best: `.ambiguous`. Several templates of the best's own user never are.
    public func decide(_ matches: [GalleryMatch]) -> MatchDecision {
        guard let best = matches.min(by: { $0.distance < $1.distance }) else { return .noMatch(best: nil) }
        guard best.distance <= threshold else { return .noMatch(best: best) }
        let rival = matches
            .filter { $0.userId != best.userId }
            .min(by: { $0.distance < $1.distance })
        if let rival, rival.distance <= threshold, rival.distance - best.distance <= margin {
            return .ambiguous(best, rival)
        }
        return .match(best)
    }
}

public enum MatchDecision: Sendable, Equatable {
    case match(GalleryMatch)
    case noMatch(best: GalleryMatch?)
    /// The best candidate, then the nearest candidate of another user.
    case ambiguous(GalleryMatch, GalleryMatch)
}
