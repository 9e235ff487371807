/// The face models a deployment runs. Each app has one; each template records the one that made it, and
/// vectors of different models are never compared (they live in different galleries and a sealed
/// reference template opens only under the model that sealed it).
///
/// Distances are Euclidean between the model's vectors, in the model's own units. SFace vectors are
/// L2-normalised, so for them d² = 2 − 2·cos: a distance threshold `d` is the cosine similarity
/// `1 − d²/2` (1.0 ↔ cos 0.5).
public enum FaceModel: String, Codable, Sendable, CaseIterable {
    /// dlib's 2017 ResNet (128-D, HOG detector): the model of apps created before SFace.
    case dlibResNetV1 = "dlib-resnet-v1"
    /// YuNet-2023mar detector + SFace-2021dec recognizer (128-D, unit length) on OpenCV.
    case sface2021dec = "sface-2021dec"

    /// The model of apps created without naming one: SFace, which on the public calibration photos found
    /// more of the enrolled people and let far fewer strangers in (Benchmarks/RESULTS.md).
    public static let defaultForNewApps: FaceModel = .sface2021dec

    /// Whether liveness challenges of this model's apps may ask for a blink: the eye aspect ratio of dlib's
    /// 68 points measured in YuNet's boxes did not show a synthetic blink of biden.jpg, so SFace apps are
    /// challenged with head turns only.
    public var challengesBlinks: Bool { self == .dlibResNetV1 }

    /// The identification threshold of an app that sets none.
    /// dlib: 0.5, the figure this service has used since its first release (the model's authors suggest 0.6).
    /// SFace: 1.0 (cosine 0.5), above the highest impostor similarity measured on public photos (cosine 0.45 for
    /// the best wrong match of ~840 probes against ~840 people, ENVIRONMENT.md) and below most genuine pairs
    /// (ORL mean cosine 0.80); `Benchmarks/RESULTS.md` has the calibration runs.
    public var defaultThreshold: Float {
        switch self {
        case .dlibResNetV1: 0.5
        case .sface2021dec: 1.0
        }
    }

    /// The thresholds an app may set (the model's units).
    public var thresholdRange: ClosedRange<Float> {
        switch self {
        case .dlibResNetV1: 0.2...0.8
        case .sface2021dec: 0.5...1.3  // cosine 0.875 … 0.155
        }
    }

    /// A near tie between two people (the best two of different users within this distance) is refused.
    public var defaultMargin: Float {
        switch self {
        case .dlibResNetV1: 0.06
        case .sface2021dec: 0.05
        }
    }

    /// Enrollment refuses a face this close to another user's template: stricter than identification, so
    /// two different people are not called the same.
    public var duplicateThreshold: Float {
        switch self {
        case .dlibResNetV1: 0.5
        case .sface2021dec: 0.894  // cosine 0.6
        }
    }

    /// Liveness: frames of one burst further apart than this show different people. dlib: 0.55 (measured
    /// bursts of one person stay below 0.45); SFace: cosine 0.5.
    public var sameFaceDistance: Float {
        switch self {
        case .dlibResNetV1: 0.55
        case .sface2021dec: 1.0
        }
    }

    /// Enrollment quality gate: the narrowest face (pixels of the image) that enrolls.
    public var minimumFaceWidth: Int {
        switch self {
        case .dlibResNetV1: 80
        case .sface2021dec: 60
        }
    }

    /// The cosine similarity a distance means, for unit-length models; nil for dlib.
    public func cosine(ofDistance distance: Float) -> Float? {
        self == .sface2021dec ? 1 - distance * distance / 2 : nil
    }
}
