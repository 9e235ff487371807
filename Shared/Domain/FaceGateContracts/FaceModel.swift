import Foundation

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

    /// The key a reference template (CTID registry portrait, kiosk document portrait) is sealed under:
    /// one per model, so a template of one model never opens for a comparison under another.
    public var referenceTemplateKey: UUID {
        switch self {
        case .dlibResNetV1: platformAppId  // the key of every reference sealed before there were two models
        case .sface2021dec: UUID(uuidString: "00000000-0000-0000-0000-5f4ace202112")!
        }
    }

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

    /// Per-comparison false-match rate → threshold (the model's units), from the calibration on public photos
    /// (Benchmarks/RESULTS.md, "Identification accuracy on public photos", 2026-12-03): a normal model of the
    /// lower tail of 738,136 (dlib) and ~800,000 (SFace) impostor distances, d(p) = mean + sd·Φ⁻¹(p) with dlib
    /// 0.807 / 0.0831 and SFace 1.384 / 0.0854. Below 1e-6 these are extrapolations; the data cannot show
    /// differences between demographic groups (NIST IR 8280), so check them on the deployment's own users.
    public var falseMatchCalibration: [(rate: Double, threshold: Float)] {
        switch self {
        case .dlibResNetV1: [(1e-3, 0.550), (1e-4, 0.498), (1e-5, 0.453), (1e-6, 0.412), (1e-7, 0.375), (1e-8, 0.341)]
        case .sface2021dec: [(1e-3, 1.120), (1e-4, 1.066), (1e-5, 1.020), (1e-6, 0.978), (1e-7, 0.940), (1e-8, 0.905)]
        }
    }

    /// The threshold of a target false-match rate (1e-8 … 1e-3), interpolated in log10 of the rate.
    public func threshold(forFalseMatchRate rate: Double) -> Float? {
        let table = falseMatchCalibration
        guard rate.isFinite, rate <= table[0].rate, rate >= table[table.count - 1].rate else { return nil }
        for (high, low) in zip(table, table.dropFirst()) where rate >= low.rate {
            let position = Float((log10(high.rate) - log10(rate)) / (log10(high.rate) - log10(low.rate)))
            return high.threshold + (low.threshold - high.threshold) * position
        }
        return nil
    }

    /// The false-match rate a threshold stands for, by the same table; nil outside it.
    public func falseMatchRate(atThreshold threshold: Float) -> Double? {
        let table = falseMatchCalibration
        guard threshold <= table[0].threshold, threshold >= table[table.count - 1].threshold else { return nil }
        for (high, low) in zip(table, table.dropFirst()) where threshold >= low.threshold {
            let position = Double((high.threshold - threshold) / (high.threshold - low.threshold))
            return pow(10, log10(high.rate) + (log10(low.rate) - log10(high.rate)) * position)
        }
        return nil
    }

    /// Open-set identification (NIST IR 8271's FPIR): the chance that the face of someone not enrolled comes within the
    /// threshold of at least one of `comparisons` templates, taking the comparisons as independent:
    /// 1 − (1 − FMR)^N, about N·FMR while small. The margin rule (`AMBIGUOUS_MATCH`) only lowers it.
    public static func falsePositiveIdentificationRate(falseMatchRate: Double, comparisons: Int) -> Double {
        comparisons <= 0 ? 0 : -expm1(Double(comparisons) * log1p(-falseMatchRate))
    }

    /// The per-comparison false-match rate that gives `rate` over `comparisons` templates (the inverse of the above).
    public static func falseMatchRate(forFalsePositiveIdentificationRate rate: Double, comparisons: Int) -> Double {
        -expm1(log1p(-rate) / Double(max(1, comparisons)))
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
