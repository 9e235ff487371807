import FaceEngine
import FaceGateContracts

/// Which face of a photo is its subject, by what a wrong pick would cost.
///
/// - **Strict** (face login, verify): the largest face, and a refusal when another is nearly as large (at least
///   `strictRatio` of its width). A bystander's face must never log anyone in, so nothing but size may decide, and a near
///   tie decides nothing.
/// - **Lenient** (enrollment, an operator's search): every face is scored on size, sharpness, detector confidence and
///   position (sharpness only below half the sharpest face's: a blurred bystander), a face cut by the photo's border
///   losing most of its claim; the best is taken when it leads the next by
///   `lenientMargin`, else the photo is refused with every face's box, which the operator may answer with a `faceBox`.
///   Position alone cannot decide: two faces alike in size, sharpness and confidence need their distances from the
///   centre to differ by at least `lenientMargin / weights.centre` (0.4 of the half-diagonal) to be told apart; and size
///   alone needs the best face about 1.36 times as wide as the next (two portraits side by side at 1.19 are a tie).
public enum SubjectSelection {
    public enum Choice: Equatable {
        case face(Int)
        /// Two faces near-equal: the refusal names every face's box.
        case ambiguous
        /// A `faceBox` was given and no detected face overlaps it enough.
        case notInBox
    }

    /// The strict rule's tie: a second face at least this share of the largest's width.
    static let strictRatio = 0.8
    /// How far the lenient rule's best must lead the next.
    static let lenientMargin = 0.12
    /// The lenient rule's weights; a face cut by the border loses `cut`.
    static let weights = (size: 0.45, sharpness: 0.15, confidence: 0.10, centre: 0.30, cut: 0.25)
    /// A face sharper than this share of the sharpest face keeps its whole sharpness score.
    static let blurBelow = 0.5
    /// How much a detected face must overlap an operator's `faceBox` (intersection over union) to be the one meant.
    static let minimumOverlap = 0.3

    /// `faces` largest first, as the engine answers them; `width` × `height` the upright photo.
    public static func choose(_ faces: [DetectedFace], width: Int, height: Int, lenient: Bool, box: FaceRegion? = nil) -> Choice {
        if let box {
            let overlaps = faces.map { region($0.box).overlap(box) }
            guard let best = overlaps.indices.max(by: { overlaps[$0] < overlaps[$1] }), overlaps[best] >= minimumOverlap else { return .notInBox }
            return .face(best)
        }
        guard faces.count > 1 else { return .face(0) }
        guard lenient else {
            return Double(faces[1].box.width) >= strictRatio * Double(faces[0].box.width) ? .ambiguous : .face(0)
        }
        let ranked = scores(faces, width: width, height: height).enumerated().sorted { $0.element > $1.element }
        return ranked[0].element - ranked[1].element >= lenientMargin ? .face(ranked[0].offset) : .ambiguous
    }

    /// Each face's lenient score, 0 … 1.
    public static func scores(_ faces: [DetectedFace], width: Int, height: Int) -> [Double] {
        let widest = Double(faces.map(\.box.width).max() ?? 1)
        let sharpest = max(1, faces.map(\.quality.sharpness).max() ?? 1)
        let surest = max(1e-6, faces.map(\.detectorScore).max() ?? 1)
        let (centreX, centreY) = (Double(width) / 2, Double(height) / 2)
        let halfDiagonal = max(1, (Double(width * width + height * height)).squareRoot() / 2)
        return faces.map { face in
            let box = face.box
            let x = Double(box.left + box.right) / 2, y = Double(box.top + box.bottom) / 2
            let centre = 1 - min(1, ((x - centreX) * (x - centreX) + (y - centreY) * (y - centreY)).squareRoot() / halfDiagonal)
            let cut = box.left <= 0 || box.top <= 0 || box.right >= width - 1 || box.bottom >= height - 1
            // Sharpness counts only as blur: faces of one photo differ in it by their size and focus, so a face keeps its
            // full share down to half the sharpest's, and loses it only below (a bystander out of focus).
            return weights.size * Double(box.width) / widest + weights.sharpness * min(1, face.quality.sharpness / sharpest / blurBelow)
                + weights.confidence * max(0, face.detectorScore) / surest + weights.centre * centre - (cut ? weights.cut : 0)
        }
    }

    static func region(_ box: FaceBox) -> FaceRegion {
        FaceRegion(x: box.left, y: box.top, width: box.width, height: box.height)
    }
}
