internal import CFaceEngine

/// A face pipeline: decode (JPEG/PNG under a pixel cap, EXIF orientation) → detection on a reduced copy
/// → 5-point alignment → 128-D descriptor, plus quality and optional 68-point landmarks. The model
/// (`FaceEngineConfiguration.model`) is dlib's (HOG, 150×150 chip, ResNet) or OpenCV's YuNet + SFace.
///
/// Not thread-safe and deliberately not `Sendable`: use one engine per thread, or `FaceEnginePool`.
/// Creation loads ~130 MB of models (the landmark models are shared by all engines of the process)
/// and takes about a second; every call blocks its thread for tens to hundreds of milliseconds.
public final class FaceEngine {
    public let configuration: FaceEngineConfiguration
    private let handle: OpaquePointer

    public init(configuration: FaceEngineConfiguration) throws(FaceEngineError) {
        self.configuration = configuration
        var settings = fe_engine_config()
        settings.max_pixels = UInt64(max(0, configuration.maxPixels))
        settings.detection_max_side = Int32(clamping: configuration.detectionMaxSide)
        settings.upsample_small_images = configuration.upsampleSmallImages ? 1 : 0
        settings.model = switch configuration.model {
        case .dlibResNetV1: Int32(FE_MODEL_DLIB_RESNET_V1.rawValue)
        case .sface2021dec: Int32(FE_MODEL_SFACE_2021DEC.rawValue)
        }
        settings.flip_augmentation = configuration.flipAugmentation ? 1 : -1
        settings.detection_first_side = configuration.detectionFirstSide.map { Int32(clamping: $0) } ?? -1
        settings.own_convolutions = configuration.ownConvolutions ? 1 : -1
        var error = fe_error()
        guard let handle = fe_engine_create(configuration.modelDirectory, &settings, &error) else {
            throw FaceEngineError(error)
        }
        self.handle = handle
    }

    deinit {
        fe_engine_destroy(handle)
    }

    /// The OpenCV threads one SFace analysis may use when it starts while no other is wanted in this process (running,
    /// decoding, or queued in a `FaceEnginePool`): nil, every core (the default); 1, always one. While several are
    /// wanted, each runs on one thread. An analysis that arrives while a lone one runs on several threads waits for it
    /// to end. Process-wide, like OpenCV's pool.
    public static func setLoneAnalysisThreads(_ threads: Int?) {
        fe_set_lone_analysis_threads(Int32(clamping: threads ?? 0))
    }

    /// How many SFace analyses in this process so far ran on several threads, and on one.
    public static var analysisThreadCounts: (severalThreads: Int, oneThread: Int) {
        var several: UInt64 = 0, one: UInt64 = 0
        fe_analysis_thread_counts(&several, &one)
        return (Int(several), Int(one))
    }

    public func analyze(_ image: [UInt8], options: FaceAnalysisOptions = .init()) throws(FaceEngineError) -> FaceAnalysis {
        var settings = fe_analyze_options(
            embeddings: options.embeddings ? 1 : 0,
            landmarks68: options.landmarks68 ? 1 : 0,
            max_faces: Int32(clamping: max(0, options.maxFaces)))
        var result = fe_analysis()
        var error = fe_error()
        let status = image.withUnsafeBufferPointer { buffer in
            fe_engine_analyze(handle, buffer.baseAddress, buffer.count, &settings, &result, &error)
        }
        guard status == Int32(FE_OK.rawValue) else { throw FaceEngineError(error) }
        defer { fe_analysis_free(&result) }
        let faces = UnsafeBufferPointer(start: result.faces, count: Int(result.face_count)).map(DetectedFace.init)
        return FaceAnalysis(
            width: Int(result.width), height: Int(result.height), faceCount: faces.count, faces: faces,
            decodeMilliseconds: result.decode_ms, detectMilliseconds: result.detect_ms,
            embedMilliseconds: result.embed_ms, detectorPixels: Int(result.detector_pixels))
    }

    /// Descriptor of the face in `box` (image coordinates, inclusive right/bottom), computed exactly as
    /// dlib's `face_recognition_model_v1` does for that box: 5-point shape, 150×150 chip with padding
    /// 0.25, no jitter. For comparing with the Python `face_recognition` package on the same box.
    public func embedding(_ image: [UInt8], box: FaceBox) throws(FaceEngineError) -> [Float] {
        var descriptor = [Float](repeating: 0, count: Int(FE_EMBEDDING_SIZE))
        var error = fe_error()
        let status = image.withUnsafeBufferPointer { buffer in
            descriptor.withUnsafeMutableBufferPointer { out in
                fe_engine_embed_box(handle, buffer.baseAddress, buffer.count, Int64(box.left), Int64(box.top),
                                    Int64(box.right), Int64(box.bottom), out.baseAddress, &error)
            }
        }
        guard status == Int32(FE_OK.rawValue) else { throw FaceEngineError(error) }
        return descriptor
    }
}

extension DetectedFace {
    init(_ native: fe_face) {
        var face = native
        let landmarks5 = withUnsafePointer(to: &face.landmarks5) { tuple in
            tuple.withMemoryRebound(to: fe_point.self, capacity: 5) { points in
                UnsafeBufferPointer(start: points, count: 5).map { FacePoint(x: $0.x, y: $0.y) }
            }
        }
        var landmarks68: [FacePoint]?
        if face.has_landmarks68 != 0 {
            landmarks68 = withUnsafePointer(to: &face.landmarks68) { tuple in
                tuple.withMemoryRebound(to: fe_point.self, capacity: 68) { points in
                    UnsafeBufferPointer(start: points, count: 68).map { FacePoint(x: $0.x, y: $0.y) }
                }
            }
        }
        var embedding: [Float]?
        if face.has_embedding != 0 {
            embedding = withUnsafePointer(to: &face.embedding) { tuple in
                tuple.withMemoryRebound(to: Float.self, capacity: Int(FE_EMBEDDING_SIZE)) { values in
                    Array(UnsafeBufferPointer(start: values, count: Int(FE_EMBEDDING_SIZE)))
                }
            }
        }
        self.init(
            box: FaceBox(left: Int(face.left), top: Int(face.top), right: Int(face.right), bottom: Int(face.bottom)),
            detectorScore: face.detector_score,
            landmarks5: landmarks5,
            landmarks68: landmarks68,
            embedding: embedding,
            quality: FaceQuality(
                faceWidth: Int(face.face_width), sharpness: face.sharpness, brightness: face.brightness, yaw: face.yaw))
    }
}
