import Foundation
import Testing
@testable import FaceEngine

/// The YuNet + SFace engine on the real photos: unit-length features that separate the people, the same
/// refusals as the dlib engine for bad input, and faces found down to web-photo sizes.
@Suite(.serialized) struct SFaceEngineTests {
    static func engine() throws -> FaceEngine {
        try TestEnvironment.engine { $0.model = .sface2021dec }
    }

    static func embedding(_ engine: FaceEngine, _ image: [UInt8]) throws -> [Float] {
        let analysis = try engine.analyze(image)
        return try #require(analysis.faces.first?.embedding, "no face found")
    }

    static func cosine(_ a: [Float], _ b: [Float]) -> Float { zip(a, b).reduce(0) { $0 + $1.0 * $1.1 } }

    @Test func featuresAreUnitLengthAndSeparateObamaFromBiden() throws {
        let engine = try Self.engine()
        let reference = try Self.embedding(engine, try TestEnvironment.photo("obama.jpg"))
        #expect(reference.count == 128)
        #expect(abs(Self.cosine(reference, reference) - 1) < 1e-4, "L2-normalised")
        for name in ["obama2.jpg", "obama3.jpg", "obama_partial_face.jpg", "32bit.png"] {
            let similarity = Self.cosine(reference, try Self.embedding(engine, try TestEnvironment.photo(name)))
            print("sface obama.jpg ↔ \(name): cosine \(similarity)")
            #expect(similarity > 0.5, "\(name) is obama")
        }
        let biden = Self.cosine(reference, try Self.embedding(engine, try TestEnvironment.photo("biden.jpg")))
        print("sface obama.jpg ↔ biden.jpg: cosine \(biden)")
        #expect(biden < 0.3)
        // On unit vectors the gallery's Euclidean distance is sqrt(2 − 2·cos).
        let other = try Self.embedding(engine, try TestEnvironment.photo("biden.jpg"))
        #expect(abs(euclideanDistance(reference, other) - (2 - 2 * biden).squareRoot()) < 1e-3)
    }

    /// OpenCV's thread count is process-wide: an analysis alone may use several threads, analyses at once get one each,
    /// and the descriptor is the same either way.
    @Test func aLoneAnalysisRunsOnSeveralThreadsAndAnalysesAtOnceOnOneEach() async throws {
        FaceEngine.setLoneAnalysisThreads(2)
        defer { FaceEngine.setLoneAnalysisThreads(nil) }
        var configuration = try TestEnvironment.configuration()
        configuration.model = .sface2021dec
        let pool = try FaceEnginePool(configuration: configuration, count: 2)
        let photo = try TestEnvironment.photo("obama2.jpg")
        func embedding() async throws -> [Float] {
            try #require(try await pool.analyze(photo).faces.first?.embedding, "no face found")
        }

        let start = FaceEngine.analysisThreadCounts
        let alone = try await embedding()
        let afterAlone = FaceEngine.analysisThreadCounts
        #expect(afterAlone.severalThreads == start.severalThreads + 1 && afterAlone.oneThread == start.oneThread)

        let together = try await withThrowingTaskGroup(of: [Float].self) { group in
            for _ in 0..<8 { group.addTask { try await embedding() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let afterTogether = FaceEngine.analysisThreadCounts
        // The first one or two may find none waiting yet (the others are still being queued); once others wait, each runs
        // on one thread until the queue empties.
        #expect(afterTogether.oneThread - afterAlone.oneThread >= 5, "\(afterAlone) → \(afterTogether)")
        #expect(afterTogether.oneThread + afterTogether.severalThreads == afterAlone.oneThread + afterAlone.severalThreads + 8)
        for vector in together { #expect(Self.cosine(vector, alone) > 0.9999) }

        FaceEngine.setLoneAnalysisThreads(1)
        _ = try await embedding()
        #expect(FaceEngine.analysisThreadCounts.oneThread == afterTogether.oneThread + 1, "one thread when told")
    }

    /// The engine reduces photos (the detection copy) and large faces (before the chip) with its own area averaging,
    /// which must be OpenCV's INTER_AREA value for value, so that detection and descriptors are those OpenCV would give.
    @Test func areaReductionEqualsOpenCVs() throws {
        var generator = SystemRandomNumberGenerator()
        var compared = 0
        for name in ["obama.jpg", "obama2.jpg", "obama3.jpg", "biden.jpg", "32bit.png", "obama_partial_face.jpg"] {
            let image = try decodeRGB(try TestEnvironment.photo(name), maxPixels: 0)
            for trial in 0..<40 {
                // The whole photo to a detection size, or a crop (as a face under its chip) by any factor.
                let width = trial % 2 == 0 ? image.width : Int.random(in: 8...image.width, using: &generator)
                let height = trial % 2 == 0 ? image.height : Int.random(in: 8...image.height, using: &generator)
                let left = Int.random(in: 0...(image.width - width), using: &generator)
                let top = Int.random(in: 0...(image.height - height), using: &generator)
                let factor = Double.random(in: 0.05...1, using: &generator)
                let region = FaceBox(left: left, top: top, right: left + width - 1, bottom: top + height - 1)
                let targetWidth = max(1, Int((Double(width) * factor).rounded())), targetHeight = max(1, Int((Double(height) * factor).rounded()))
                let differences = areaReductionDifferences(image, region: region, width: targetWidth, height: targetHeight)
                #expect(differences == 0, "\(name): \(width)×\(height) at (\(left), \(top)) to \(targetWidth)×\(targetHeight)")
                compared += 1
            }
            #expect(areaReductionDifferences(image, region: FaceBox(left: 0, top: 0, right: image.width - 1, bottom: image.height - 1),
                                             width: image.width + 1, height: image.height) == nil, "an enlargement is refused")
        }
        #expect(compared == 240)
    }

    @Test func refusesWhatTheDecoderRefuses() throws {
        let engine = try Self.engine()
        let jpeg = try TestEnvironment.photo("obama2.jpg")
        for (label, bytes) in [("text", Array("not an image at all".utf8)), ("truncated", Array(jpeg.prefix(3000))), ("empty", [])] {
            do {
                _ = try engine.analyze(bytes)
                Issue.record("\(label) was accepted")
            } catch {
                guard case .imageFormat = error else { Issue.record("\(label): \(error)"); continue }
            }
        }
        let capped = try TestEnvironment.engine { $0.model = .sface2021dec; $0.maxPixels = 100_000 }
        do {
            _ = try capped.analyze(jpeg)
            Issue.record("an image above the pixel cap was decoded")
        } catch {
            guard case .imageTooLarge = error else { Issue.record("\(error)"); return }
        }
    }

    @Test func findsSmallFacesAndMeasuresQuality() throws {
        let engine = try Self.engine()
        let scratch = try ScratchDirectory()
        let directory = try TestEnvironment.imageDirectory()
        // obama.jpg's face is ~240 px wide; at 25 % it is ~60 px, the size of a face in a 250×250 web photo.
        try scratch.convert([directory + "/obama.jpg", "-resize", "25%", scratch.file("small.jpg")])
        let small = try engine.analyze(try scratch.read("small.jpg"))
        let face = try #require(small.faces.first, "the ~60 px face is found")
        print("sface small face: width \(face.quality.faceWidth), sharpness \(face.quality.sharpness), yaw \(face.quality.yaw)")
        #expect(face.quality.faceWidth >= 45 && face.quality.faceWidth <= 90)
        let full = try Self.embedding(engine, try TestEnvironment.photo("obama.jpg"))
        #expect(Self.cosine(try #require(face.embedding), full) > 0.5)
        let quality = try #require(try engine.analyze(try TestEnvironment.photo("obama2.jpg")).faces.first?.quality)
        #expect(quality.brightness > 20 && quality.brightness < 235)
        #expect(quality.sharpness > 0)
        #expect(abs(quality.yaw) < 25, "a frontal portrait")
    }

    @Test func ordersSeveralFacesLargestFirst() throws {
        let engine = try Self.engine()
        let scratch = try ScratchDirectory()
        let directory = try TestEnvironment.imageDirectory()
        try scratch.convert([directory + "/obama.jpg", "(", directory + "/biden.jpg", "-resize", "30%", ")",
                             "-background", "white", "-gravity", "north", "+append", scratch.file("group.jpg")])
        let analysis = try engine.analyze(try scratch.read("group.jpg"), options: FaceAnalysisOptions(maxFaces: 2))
        #expect(analysis.faceCount == 2)
        guard analysis.faces.count == 2 else { return }
        #expect(analysis.faces[0].box.width > analysis.faces[1].box.width)
        let obama = try Self.embedding(engine, try TestEnvironment.photo("obama.jpg"))
        #expect(Self.cosine(try #require(analysis.faces[0].embedding), obama) > 0.8, "the larger face is obama's")
    }

    /// With a first scan, faces are found on a small copy and scanned again at full scale around each: on a photo where
    /// they are small the detector runs on a fraction of the pixels and answers the whole scan's faces; a face that fills
    /// the photo is scanned whole, as without the first scan.
    @Test func aFirstScanFindsTheFacesAndTheRefinementDescribesThemAsTheWholeScanDoes() throws {
        let whole = try Self.engine()
        let refining = try TestEnvironment.engine { $0.model = .sface2021dec; $0.detectionFirstSide = 320 }
        let scratch = try ScratchDirectory()
        let directory = try TestEnvironment.imageDirectory()
        try scratch.convert(["-size", "3000x2000", "xc:gray70",
                             directory + "/obama.jpg", "-geometry", "+200+300", "-composite",
                             "(", directory + "/biden.jpg", "-resize", "50%", ")", "-geometry", "+2000+700", "-composite",
                             scratch.file("two.jpg")])
        let photo = try scratch.read("two.jpg")
        let options = FaceAnalysisOptions(maxFaces: 2)
        let reference = try whole.analyze(photo, options: options), refined = try refining.analyze(photo, options: options)
        print("first scan: \(refined.detectorPixels) detector pixels against \(reference.detectorPixels), detect "
              + "\(refined.detectMilliseconds) against \(reference.detectMilliseconds) ms; faces \(reference.faces.map(\.box.width))")
        #expect(reference.faceCount == 2 && refined.faceCount == 2)
        #expect(refined.detectorPixels * 2 < reference.detectorPixels, "the regions cost under half the whole scan")
        for (a, b) in zip(reference.faces, refined.faces) {
            #expect(abs(a.box.left - b.box.left) <= 2 && abs(a.box.top - b.box.top) <= 2 && abs(a.box.width - b.box.width) <= 2)
            #expect(Self.cosine(try #require(a.embedding), try #require(b.embedding)) > 0.99)
        }

        let selfie = try TestEnvironment.photo("obama2.jpg")
        let alone = try whole.analyze(selfie), scannedWhole = try refining.analyze(selfie)
        #expect(scannedWhole.detectorPixels > alone.detectorPixels, "a face filling the photo: the first scan, then the whole copy")
        #expect(Self.cosine(try #require(alone.faces.first?.embedding), try #require(scannedWhole.faces.first?.embedding)) > 0.9999)
    }

    /// The engine's own convolutions (1×1 as OpenBLAS products, depthwise as a direct loop) give OpenCV's faces and
    /// descriptors up to float rounding, on every test photo (each a new input shape for the detector, so the networks
    /// are set up again each time) and on a two-face photo (two faces in one pass of the recognizer), then on the first
    /// photo again.
    @Test func theEnginesOwnConvolutionsDescribeFacesAsOpenCVsKernelsDo() throws {
        let blas = try Self.engine()
        let opencv = try TestEnvironment.engine { $0.model = .sface2021dec; $0.ownConvolutions = false }
        let scratch = try ScratchDirectory()
        let directory = try TestEnvironment.imageDirectory()
        try scratch.convert([directory + "/obama.jpg", "(", directory + "/biden.jpg", "-resize", "30%", ")",
                             "-background", "white", "-gravity", "north", "+append", scratch.file("group.jpg")])
        let names = ["obama.jpg", "obama2.jpg", "obama3.jpg", "obama_partial_face.jpg", "obama_partial_face2.jpg", "biden.jpg", "32bit.png"]
        var lowest: Float = 1
        for photo in try names.map(TestEnvironment.photo) + [try scratch.read("group.jpg"), try TestEnvironment.photo("obama.jpg")] {
            let options = FaceAnalysisOptions(maxFaces: 2)
            let a = try blas.analyze(photo, options: options), b = try opencv.analyze(photo, options: options)
            #expect(a.faceCount == b.faceCount)
            for (x, y) in zip(a.faces, b.faces) {
                #expect(abs(x.box.left - y.box.left) <= 1 && abs(x.box.top - y.box.top) <= 1 && abs(x.box.width - y.box.width) <= 1)
                lowest = min(lowest, Self.cosine(try #require(x.embedding), try #require(y.embedding)))
            }
        }
        print("own convolutions against OpenCV's: lowest descriptor cosine \(lowest)")
        #expect(lowest > 0.9999)
    }

    @Test func landmarks68ComeFromTheOptionalModel() throws {
        let engine = try Self.engine()
        let analysis = try engine.analyze(try TestEnvironment.photo("obama2.jpg"), options: FaceAnalysisOptions(embeddings: false, landmarks68: true))
        let face = try #require(analysis.faces.first)
        #expect(face.landmarks68?.count == 68, "shape_predictor_68_face_landmarks.dat is in FACEGATE_MODEL_DIR")
        #expect(face.landmarks5.count == 5)
    }

    @Test func reportsMissingModelFiles() throws {
        let scratch = try ScratchDirectory()
        do {
            _ = try FaceEngine(configuration: { var c = FaceEngineConfiguration(modelDirectory: scratch.path); c.model = .sface2021dec; return c }())
            Issue.record("an engine started without its model files")
        } catch {
            guard case .modelMissing(let detail) = error else { Issue.record("\(error)"); return }
            #expect(detail.contains(".onnx"))
        }
    }
}
