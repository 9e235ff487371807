/// Which detector and recognizer an engine runs.
public enum FaceEngineModel: Sendable, Equatable {
    /// dlib: HOG detector, 5-point alignment, 150×150 chip, ResNet 128-D descriptor (Euclidean distances,
    /// the same person typically < 0.6 apart).
    case dlibResNetV1
    /// OpenCV: YuNet-2023mar detector with 5 landmarks, 112×112 aligned crop, SFace-2021dec 128-D feature,
    /// L2-normalised (squared Euclidean distance = 2 − 2·cosine).
    case sface2021dec
}

/// Settings fixed when an engine (or a pool of engines) is created.
public struct FaceEngineConfiguration: Sendable {
    /// Directory holding the model files: for dlib `shape_predictor_5_face_landmarks.dat`,
    /// `shape_predictor_68_face_landmarks.dat` and `dlib_face_recognition_resnet_model_v1.dat`; for SFace
    /// `face_detection_yunet_2023mar.onnx`, `face_recognition_sface_2021dec.onnx` and, optionally (blink
    /// liveness), `shape_predictor_68_face_landmarks.dat`.
    public var modelDirectory: String
    public var model: FaceEngineModel = .dlibResNetV1
    /// SFace only: the descriptor is the normalised mean of the face's and its mirror image's features.
    /// Measured (AT&T/ORL, 395 faces): genuine/impostor separation d′ 7.05 → 7.19, acceptance at a 1-in-10,000
    /// false-match threshold 0.9926 → 0.9960 — for a second network pass (+40–50 ms a face on one core). Off by
    /// default; enrolment and login must use the same setting, so it is a deployment-wide choice.
    public var flipAugmentation = false
    /// Images whose width × height (read from the header) exceeds this are refused before any pixel is allocated.
    public var maxPixels: Int = 16_000_000
    /// The HOG detector scans a copy reduced to this longest side (at least 80, the detector's window);
    /// faces narrower than about 80 / scale pixels are missed. Boxes are mapped back to the full image.
    public var detectionMaxSide: Int = 1024
    /// SFace only: a photo whose detection copy (`detectionMaxSide`) is at least twice this long is first scanned on a
    /// copy this long, only to find its faces; each is then scanned again at the full detection scale in a region around
    /// it, so boxes and landmarks are the full scan's. nil (the default): one scan of the whole copy. It stays off in
    /// the services: a face the small copy misses is never looked for (`FE_SFACE_DEFAULT_DETECTION_FIRST_SIDE`).
    public var detectionFirstSide: Int?
    /// SFace only: the engine's own convolution layers rather than OpenCV 4.6's kernels: 1×1 convolutions as OpenBLAS
    /// matrix products (OpenBLAS then on one thread per product, for the whole process), SFace's depthwise 3×3 ones as a
    /// direct loop. Descriptors differ only by float rounding (`SFaceEngineTests`). On by default.
    public var ownConvolutions = true
    /// When nothing is found in an image whose longest side is at most `detectionMaxSide / 2`,
    /// scan it once more at twice its size (finds faces down to ~40 px).
    public var upsampleSmallImages: Bool = true

    public init(modelDirectory: String) {
        self.modelDirectory = modelDirectory
    }
}

public struct FacePoint: Sendable, Codable, Equatable {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// A face box in image pixels (after the EXIF orientation is applied). As in dlib and the Python
/// `face_recognition` package, `right` and `bottom` are inclusive.
public struct FaceBox: Sendable, Codable, Equatable {
    public var left: Int
    public var top: Int
    public var right: Int
    public var bottom: Int

    public init(left: Int, top: Int, right: Int, bottom: Int) {
        self.left = left
        self.top = top
        self.right = right
        self.bottom = bottom
    }

    public var width: Int { right - left + 1 }
    public var height: Int { bottom - top + 1 }
}

/// Capture quality of one face, measured on the 150×150 aligned chip the descriptor is computed from.
public struct FaceQuality: Sendable, Codable, Equatable {
    /// Width of the face box in pixels of the original image.
    public var faceWidth: Int
    /// Variance of the 4-neighbour Laplacian of the chip's 0–255 luma (the chip is area-averaged from a
    /// finer sampling, so the figure does not jump with the face's exact size). The chip has a fixed face
    /// scale, so figures compare across photos. Measured: the in-focus test portraits 205–540; obama.jpg
    /// (240 px face) 501, after a Gaussian blur of σ = 1 / 2 / 3 px: 163 / 45 / 17; re-encoding moves it ±10%.
    public var sharpness: Double
    /// Mean luma (BT.601 weights) of the chip, 0 (black) – 255 (white).
    public var brightness: Double
    /// Head turn in degrees, from the nose base's offset against the midpoint of the eyes (5-point
    /// landmarks). Positive: the subject turned to their left, i.e. the nose points towards the image's
    /// right. A geometric estimate good for gating (e.g. |yaw| < 25°), roughly ±10° up to ~45°.
    public var yaw: Double

    public init(faceWidth: Int, sharpness: Double, brightness: Double, yaw: Double) {
        self.faceWidth = faceWidth
        self.sharpness = sharpness
        self.brightness = brightness
        self.yaw = yaw
    }
}

public struct DetectedFace: Sendable {
    public var box: FaceBox
    /// The HOG detector's confidence; above 0 is a detection at dlib's default threshold.
    public var detectorScore: Double
    /// dlib 5-point order: outer and inner corner of the eye on the image's right, outer and inner corner
    /// of the eye on the image's left, then the base of the nose.
    public var landmarks5: [FacePoint]
    /// iBUG 68-point landmarks, when requested and the face is among the first `maxFaces`.
    public var landmarks68: [FacePoint]?
    /// 128-D descriptor (unit-free; the same person is typically < 0.6 apart), when requested.
    public var embedding: [Float]?
    public var quality: FaceQuality

    public init(box: FaceBox, detectorScore: Double, landmarks5: [FacePoint], landmarks68: [FacePoint]?,
                embedding: [Float]?, quality: FaceQuality) {
        self.box = box
        self.detectorScore = detectorScore
        self.landmarks5 = landmarks5
        self.landmarks68 = landmarks68
        self.embedding = embedding
        self.quality = quality
    }
}

public struct FaceAnalysisOptions: Sendable {
    /// Compute 128-D descriptors for the first `maxFaces` faces.
    public var embeddings: Bool
    /// Compute 68-point landmarks (for liveness checks) for the first `maxFaces` faces.
    public var landmarks68: Bool
    /// How many faces, largest first, get descriptors and 68-point landmarks. Every detected face
    /// gets its box, 5-point landmarks and quality.
    public var maxFaces: Int

    public init(embeddings: Bool = true, landmarks68: Bool = false, maxFaces: Int = 1) {
        self.embeddings = embeddings
        self.landmarks68 = landmarks68
        self.maxFaces = maxFaces
    }
}

public struct FaceAnalysis: Sendable {
    /// Size of the upright image (after the EXIF orientation).
    public var width: Int
    public var height: Int
    public var faceCount: Int
    /// Largest box first.
    public var faces: [DetectedFace]
    /// Decoding and orientation.
    public var decodeMilliseconds: Double
    /// Reduction and HOG scan(s).
    public var detectMilliseconds: Double
    /// Landmarks, aligned chips, quality and descriptors.
    public var embedMilliseconds: Double
    /// SFace: the pixels YuNet ran on, every scan and its padding counted (0 for dlib).
    public var detectorPixels: Int

    public init(width: Int, height: Int, faceCount: Int, faces: [DetectedFace], decodeMilliseconds: Double,
                detectMilliseconds: Double, embedMilliseconds: Double, detectorPixels: Int = 0) {
        self.width = width
        self.height = height
        self.faceCount = faceCount
        self.faces = faces
        self.decodeMilliseconds = decodeMilliseconds
        self.detectMilliseconds = detectMilliseconds
        self.embedMilliseconds = embedMilliseconds
        self.detectorPixels = detectorPixels
    }
}

/// Euclidean distance between two descriptors; `.infinity` when their lengths differ.
public func euclideanDistance(_ a: [Float], _ b: [Float]) -> Float {
    guard a.count == b.count else { return .infinity }
    var sum: Float = 0
    for i in a.indices {
        let d = a[i] - b[i]
        sum += d * d
    }
    return sum.squareRoot()
}
