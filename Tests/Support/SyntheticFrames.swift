import CWarp
import FaceEngine
import FaceGateCore
import Foundation
import Synchronization

/// Camera bursts made from one real photo, for testing active liveness with faces the detector and the
/// landmark model really see. The photo's own 68-point landmarks are the control points of an ImageMagick
/// Shepards warp (`convert … -distort Shepards`):
/// - BLINK: a closed frame, then open again. The warp pulls the upper lids down onto the lower lids and the
///   eye opening is painted over with the person's own lid skin (moved down and smoothed) with a lash line
///   along the lower lid: dlib's 68-point model keeps an eye outline on a merely squeezed eye. Measured eye
///   aspect ratio open → closed: obama.jpg 0.22 → 0.15, obama3.jpg 0.23 → 0.17, biden.jpg 0.26 → 0.19;
///   obama2.jpg (shadowed lids, sideways gaze) does not close (0.35 → 0.34): use it for turns only;
/// - TURN_LEFT / TURN_RIGHT: the nose, mouth and chin slide sideways (a half then a full step) while the
///   far cheek's outline stays put, so the nose moves off the eyes' midpoint as in a real head turn
///   (TURN_LEFT: towards the image's right, the subject's left), then the head comes back;
/// - every frame moves the whole face by a small seeded jitter, as a hand-held camera does, so no two
///   frames are the same image and the landmarks never freeze.
/// Frames are JPEG crops around the face, at most `maxSide` pixels, like a front camera's frames.
public enum SyntheticFrames {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// One frame's geometry as the engine sees it.
    public struct Measurement: Sendable, CustomStringConvertible {
        public var faceFound: Bool
        public var yaw: Double
        /// Eye aspect ratio (mean of both eyes, 68-point layout); open eyes ≈ 0.25–0.35, closed < 0.15.
        public var eyeAspectRatio: Double
        /// The 68 landmarks found, empty without a face.
        public var landmarks: [FacePoint]
        public var description: String {
            faceFound ? String(format: "yaw %+.1f°, EAR %.3f", yaw, eyeAspectRatio) : "no face"
        }
    }

    /// Longest side of the frames written.
    public static let maxSide = 640

    /// Frames showing `actions` in order: a neutral frame, then per action BLINK → closed, closed, open
    /// (a blink lasts 100–400 ms, several frames of a camera); TURN_* → half turn, full turn, back to
    /// neutral. 1 + 3 frames per action (10 for 3 actions). Over seeds the closed frame of obama.jpg read
    /// EAR 0.13–0.16 mostly but 0.17 and 0.19 in 2 of 14 (the landmark fit shifts with the jitter): the
    /// second closed frame keeps the blink visible.
    public static func burst(photo: URL, actions: [LivenessAction], engine: FaceEngine? = nil, seed: UInt64 = 1) throws -> [Data] {
        let face = try Face.found(in: photo, engine: engine)
        var random = SeededRandom(seed: seed)
        var poses: [Pose] = [.neutral]
        for action in actions {
            switch action {
            case .blink: poses += [.eyesClosed, .eyesClosed, .neutral]
            case .turnLeft: poses += [.turn(0.5), .turn(1), .neutral]
            case .turnRight: poses += [.turn(-0.5), .turn(-1), .neutral]
            }
        }
        return try poses.map { try face.render($0, random: &random) }
    }

    /// A still photo held up to the camera: the same picture `count` times, each re-encoded at a slightly
    /// different JPEG quality (a camera never delivers two byte-identical frames), nothing moving.
    public static func replayedStill(photo: URL, count: Int, engine: FaceEngine? = nil) throws -> [Data] {
        let face = try Face.found(in: photo, engine: engine)
        return try (0..<count).map { try face.render(.still, quality: 90 - $0 % 8, random: nil) }
    }

    /// A real photo as a camera frame: mirrored (a head turned one way becomes the same turn the other way) or not,
    /// re-encoded as JPEG at `quality` (frames of a camera are never byte-identical).
    public static func frame(photo: URL, mirrored: Bool = false, quality: Int = 90) throws -> Data {
        try runConvert([photo.path] + (mirrored ? ["-flop"] : []) + ["-quality", String(quality), "jpg:-"])
    }

    /// Yaw and eye aspect ratio of each frame, as measured by the engine (for checking and tuning).
    public static func measure(_ frames: [Data], engine: FaceEngine? = nil) throws -> [Measurement] {
        let engine = try engine ?? defaultEngine()
        return try frames.map { frame in
            let analysis = try engine.analyze(Array(frame), options: FaceAnalysisOptions(embeddings: false, landmarks68: true, maxFaces: 1))
            guard let face = analysis.faces.first, let points = face.landmarks68 else {
                return Measurement(faceFound: false, yaw: 0, eyeAspectRatio: 0, landmarks: [])
            }
            return Measurement(faceFound: true, yaw: face.quality.yaw, eyeAspectRatio: eyeAspectRatio(points), landmarks: points)
        }
    }

    /// Writes `frame0.jpg`, `frame1.jpg`, … into `directory` (created if needed); returns the files.
    @discardableResult
    public static func write(_ frames: [Data], to directory: URL) throws -> [URL] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try frames.enumerated().map { index, frame in
            let file = directory.appendingPathComponent("frame\(index).jpg")
            try frame.write(to: file)
            return file
        }
    }

    /// An engine on `FACEGATE_MODEL_DIR`.
    public static func defaultEngine() throws -> FaceEngine {
        guard let directory = ProcessInfo.processInfo.environment["FACEGATE_MODEL_DIR"], !directory.isEmpty else {
            throw Failure("FACEGATE_MODEL_DIR is not set: the dlib models are needed to find the landmarks to warp")
        }
        return try FaceEngine(configuration: FaceEngineConfiguration(modelDirectory: directory))
    }

    static func eyeAspectRatio(_ points: [FacePoint]) -> Double {
        func distance(_ a: Int, _ b: Int) -> Double { hypot(points[a].x - points[b].x, points[a].y - points[b].y) }
        func eye(_ p: Int) -> Double { (distance(p + 1, p + 5) + distance(p + 2, p + 4)) / (2 * max(distance(p, p + 3), 1e-6)) }
        return (eye(36) + eye(42)) / 2
    }

    // MARK: - Warping

    enum Pose {
        case neutral
        case eyesClosed
        /// Fraction of a full turn; positive moves the nose towards the image's right (TURN_LEFT).
        case turn(Double)
        /// No warp and no jitter at all.
        case still
    }

    /// How far a full turn moves the nose base, in inter-ocular distances. The engine's yaw is
    /// atan(offset / 0.7) with the offset in half eye distances, so 0.2 reads as about +25° once the eyes'
    /// own smaller shift is taken off; half a turn as about +13°.
    static let fullTurn = 0.2
    /// Inverse-distance power of the warp: at ImageMagick's default of 2 the many fixed points far away
    /// outweigh a moved eyelid a few pixels off, and the lid hardly moves.
    static let shepardsPower = 4.0
    /// The closed-eye patch: the eye outline widened by these factors, filled from `patchLift` eye heights above.
    static let patchScale = (x: 1.1, y: 1.2)
    static let patchLift = 1.0
    /// How far the lids travel, in eye openings, in a closed frame: the upper lid most of the way down,
    /// the lower lid a little up, meeting before the iris shows between them.
    static let upperLidTravel = 0.8
    static let lowerLidTravel = 0.3

    struct Face: Sendable {
        /// Faces already found (by photo path and the model that found them: the box sets the crop), and their crops
        /// before any warp (by path and crop): a test makes many bursts of one photo.
        private static let faces = Mutex<[String: Face]>([:])
        private static let crops = Mutex<[String: PPM]>([:])

        static func found(in photo: URL, engine: FaceEngine?) throws -> Face {
            let key = "\(photo.path) \(engine?.configuration.model ?? .dlibResNetV1)"
            if let face = faces.withLock({ $0[key] }) { return face }
            let face = try Face(photo: photo, engine: engine)
            faces.withLock { $0[key] = face }
            return face
        }

        let source: URL
        /// Crop of the photo around the face, in the photo's upright pixels.
        let crop: (x: Int, y: Int, width: Int, height: Int)
        /// The 68 landmarks relative to the crop.
        let points: [FacePoint]
        let eyeDistance: Double

        init(photo: URL, engine: FaceEngine?) throws {
            guard let bytes = FileManager.default.contents(atPath: photo.path) else { throw Failure("cannot read \(photo.path)") }
            let engine = try engine ?? SyntheticFrames.defaultEngine()
            let analysis = try engine.analyze(Array(bytes), options: FaceAnalysisOptions(embeddings: false, landmarks68: true, maxFaces: 1))
            guard let face = analysis.faces.first, let landmarks = face.landmarks68, landmarks.count == 68 else {
                throw Failure("no face with landmarks in \(photo.lastPathComponent)")
            }
            // A selfie camera's framing: the face box widened 2.2 times, clamped to the photo.
            let box = face.box
            let side = Double(max(box.width, box.height)) * 2.2
            let centerX = Double(box.left + box.right) / 2, centerY = Double(box.top + box.bottom) / 2
            let x = max(0, Int(centerX - side / 2)), y = max(0, Int(centerY - side / 2))
            let width = min(analysis.width - x, Int(side)), height = min(analysis.height - y, Int(side))
            source = photo
            crop = (x, y, width, height)
            points = landmarks.map { FacePoint(x: $0.x - Double(x), y: $0.y - Double(y)) }
            func center(_ range: ClosedRange<Int>) -> FacePoint {
                let selected = range.map { landmarks[$0] }
                return FacePoint(x: selected.map(\.x).reduce(0, +) / Double(selected.count), y: selected.map(\.y).reduce(0, +) / Double(selected.count))
            }
            let left = center(36...41), right = center(42...47)
            eyeDistance = hypot(left.x - right.x, left.y - right.y)
        }

        /// Where each landmark goes for `pose`.
        func targets(_ pose: Pose) -> [FacePoint] {
            var moved = points
            switch pose {
            case .neutral, .still:
                break
            case .eyesClosed:
                for (upper, lower) in [(37, 41), (38, 40), (43, 47), (44, 46)] {
                    let gap = points[lower].y - points[upper].y
                    moved[upper].y += gap * upperLidTravel
                    moved[lower].y -= gap * lowerLidTravel
                }
            case .turn(let amount):
                let shift = amount * fullTurn * eyeDistance
                // Share of the nose base's shift each landmark takes: the nose tip and mouth most, the bridge
                // and the eyes little, the outline on the near side some, on the far side none (it compresses).
                let towardsRight = amount > 0
                for index in 0..<68 {
                    let share: Double
                    switch index {
                    case 30...35: share = 1
                    case 29: share = 0.8
                    case 28: share = 0.55
                    case 27: share = 0.3
                    case 48...67: share = 0.85
                    case 7...9: share = 0.6
                    case 36...47: share = 0.12
                    case 17...26: share = 0.1
                    case 0...6: share = towardsRight ? 0.35 : 0
                    case 10...16: share = towardsRight ? 0 : 0.35
                    default: share = 0
                    }
                    moved[index].x += shift * share
                }
            }
            return moved
        }

        /// Extra control points that close the eye whose landmarks start at `first`: along columns across
        /// the eye, the upper lid comes down onto the lower lid and the lid skin above stretches after it,
        /// while the lower lid and the cheek stay. Dense columns keep the warp from smearing the lid halfway.
        func closedEyeControls(_ first: Int) -> [(FacePoint, FacePoint)] {
            let upper = [first, first + 1, first + 2, first + 3].map { points[$0] }
            let lower = [first, first + 5, first + 4, first + 3].map { points[$0] }
            func along(_ line: [FacePoint], _ t: Double) -> FacePoint {
                let position = t * 3, segment = min(2, Int(position)), f = position - Double(segment)
                return FacePoint(x: line[segment].x + (line[segment + 1].x - line[segment].x) * f,
                                 y: line[segment].y + (line[segment + 1].y - line[segment].y) * f)
            }
            let height = max(2, (points[first + 5].y - points[first + 1].y + points[first + 4].y - points[first + 2].y) / 2)
            var controls: [(FacePoint, FacePoint)] = []
            for t in stride(from: 0.12, through: 0.88, by: 0.095) {
                let top = along(upper, t), bottom = along(lower, t)
                let gap = bottom.y - top.y
                for (offset, share) in [(0.0, 1.0), (-0.5, 0.6), (-1.0, 0.25)] {
                    let from = FacePoint(x: top.x, y: top.y + offset * height)
                    controls.append((from, FacePoint(x: from.x, y: from.y + gap * upperLidTravel * share)))
                }
                for (offset, share) in [(0.0, 1.0), (0.6, 0.3), (1.2, 0.0)] {
                    let from = FacePoint(x: bottom.x, y: bottom.y + offset * height)
                    controls.append((from, FacePoint(x: from.x, y: from.y - gap * lowerLidTravel * share)))
                }
            }
            return controls
        }

        /// Paints the eye whose landmarks start at `first` shut: the lid skin just above it, moved down and
        /// blurred (so no crease reads as an eye outline), through a soft mask shaped like the eye, then the
        /// lash line along the lower lid.
        func closedEyePatch(_ first: Int) -> [String] {
            let eye = points[first...(first + 5)]
            let centerX = eye.map(\.x).reduce(0, +) / 6, centerY = eye.map(\.y).reduce(0, +) / 6
            let height = max(2, (points[first + 5].y - points[first + 1].y + points[first + 4].y - points[first + 2].y) / 2)
            let polygon = eye.map { String(format: "%.1f,%.1f", centerX + ($0.x - centerX) * patchScale.x, centerY + ($0.y - centerY) * patchScale.y) }
                .joined(separator: " ")
            let lash = [first, first + 5, first + 4, first + 3].map { String(format: "%.1f,%.1f", points[$0].x, points[$0].y) }.joined(separator: " ")
            return ["(", "+clone", "-virtual-pixel", "edge", "-distort", "SRT", String(format: "0,0 1 0 0,%.1f", height * patchLift),
                    "-blur", String(format: "0x%.1f", height * 0.6), ")",
                    "(", "+clone", "-fill", "black", "-colorize", "100", "-fill", "white", "-draw", "polygon \(polygon)",
                    "-blur", String(format: "0x%.1f", height * 0.2), ")", "-composite",
                    "-fill", "none", "-stroke", "#2a1d18", "-strokewidth", String(format: "%.1f", max(1.2, height * 0.3)),
                    "-draw", "polyline \(lash)", "-stroke", "none"]
        }

        func render(_ pose: Pose, quality: Int = 92, random: inout SeededRandom) throws -> Data {
            try render(pose, quality: quality, jitter: (random.next(in: -1.6...1.6), random.next(in: -1.6...1.6)), spread: { random.next(in: -0.3...0.3) })
        }

        func render(_ pose: Pose, quality: Int, random: SeededRandom?) throws -> Data {
            try render(pose, quality: quality, jitter: (0, 0), spread: { 0 })
        }

        private func render(_ pose: Pose, quality: Int, jitter: (Double, Double), spread: () -> Double) throws -> Data {
            var arguments = [source.path, "-auto-orient", "-strip", "-crop", "\(crop.width)x\(crop.height)+\(crop.x)+\(crop.y)", "+repage"]
            let encode = ["-resize", "\(maxSide)x\(maxSide)>", "-quality", String(quality), "jpg:-"]
            if case .still = pose { return try runConvert(arguments + encode) }
            if case .eyesClosed = pose { arguments += closedEyePatch(36) + closedEyePatch(42) }
            var controls = Array(zip(points, targets(pose)))
            if case .eyesClosed = pose { controls += closedEyeControls(36) + closedEyeControls(42) }
            var from: [Double] = [], to: [Double] = []
            for (source, target) in controls {
                from += [source.x, source.y]
                to += [target.x + jitter.0 + spread(), target.y + jitter.1 + spread()]
            }
            // The frame's corners and edge midpoints stay fixed: only the face moves.
            let w = Double(crop.width - 1), h = Double(crop.height - 1)
            for (x, y) in [(0, 0), (w / 2, 0), (w, 0), (0, h / 2), (w, h / 2), (0, h), (w / 2, h), (w, h)] {
                from += [x, y]
                to += [x, y]
            }
            // ImageMagick paints the eye patch; the warp itself runs in C (CWarp: ImageMagick's Shepards took
            // about 1.7 s per frame here).
            // Without the eye patch the crop is the same for every pose: it is made once per photo.
            let readCrop = { try PPM(try runConvert(arguments + ["-depth", "8", "ppm:-"])) }
            let key = "\(source.path) \(crop)"
            let cropped: PPM
            if case .eyesClosed = pose {
                cropped = try readCrop()
            } else if let cached = Self.crops.withLock({ $0[key] }) {
                cropped = cached
            } else {
                cropped = try readCrop()
                Self.crops.withLock { $0[key] = cropped }
            }
            var warped = [UInt8](repeating: 0, count: cropped.pixels.count)
            guard fg_shepards_warp(cropped.pixels, Int32(cropped.width), Int32(cropped.height), 3, from, to,
                                   Int32(from.count / 2), shepardsPower, &warped) == 0 else {
                throw Failure("the warp refused its arguments")
            }
            return try runConvert(["ppm:-"] + encode, input: PPM(width: cropped.width, height: cropped.height, pixels: warped).encoded)
        }
    }

    /// A binary 8-bit RGB portable pixmap (P6): what `convert … ppm:-` writes and reads.
    struct PPM: Sendable {
        var width: Int
        var height: Int
        var pixels: [UInt8]

        init(width: Int, height: Int, pixels: [UInt8]) {
            self.width = width
            self.height = height
            self.pixels = pixels
        }

        init(_ data: Data) throws {
            let bytes = [UInt8](data)
            // Header: "P6", width, height, maximum value, separated by whitespace, then one whitespace byte.
            var fields: [Int] = [], index = 2
            guard bytes.starts(with: Array("P6".utf8)) else { throw Failure("convert did not write a P6 pixmap") }
            while fields.count < 3, index < bytes.count {
                while index < bytes.count, bytes[index] == 0x20 || (0x09...0x0D).contains(bytes[index]) { index += 1 }
                var value = 0
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { value = value * 10 + Int(bytes[index] - 0x30); index += 1 }
                fields.append(value)
            }
            index += 1
            guard fields.count == 3, fields[2] == 255, bytes.count - index == fields[0] * fields[1] * 3 else {
                throw Failure("convert wrote a pixmap that is not 8-bit RGB of its stated size")
            }
            width = fields[0]
            height = fields[1]
            pixels = Array(bytes[index...])
        }

        var encoded: Data { Data("P6\n\(width) \(height)\n255\n".utf8) + Data(pixels) }
    }

    /// Runs `convert`, feeding `input` to its standard input; returns what it wrote to standard output.
    static func runConvert(_ arguments: [String], input: Data? = nil) throws -> Data {
        let result: ChildProcess.Output
        do {
            result = try ChildProcess.run("convert", arguments, input: input)
        } catch {
            throw Failure("ImageMagick's convert failed (scripts/stack.sh install installs imagemagick): \(error)")
        }
        guard result.exitCode == 0, !result.output.isEmpty else {
            throw Failure("convert failed (\(result.exitCode)): \(result.errorText)")
        }
        return result.output
    }
}

/// SplitMix64: reproducible jitter and random cards, so a failing fixture can be generated again.
struct SeededRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next(in range: ClosedRange<Double>) -> Double {
        range.lowerBound + Double(next() >> 11) / Double(1 << 53) * (range.upperBound - range.lowerBound)
    }
}
