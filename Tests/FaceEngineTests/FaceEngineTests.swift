import Foundation
import Testing
@testable import FaceEngine

/// One pool for the suite: it keeps the shared landmark models loaded, so engines made by single tests start fast.
enum SharedPool {
    static let pool: Result<FaceEnginePool, any Error> = Result {
        try FaceEnginePool(configuration: try TestEnvironment.configuration(), count: 2)
    }

    static func analyze(_ image: [UInt8], options: FaceAnalysisOptions = .init()) async throws -> FaceAnalysis {
        try await pool.get().analyze(image, options: options)
    }

    static func embedding(of name: String) async throws -> [Float] {
        try await embedding(of: try TestEnvironment.photo(name))
    }

    static func embedding(of image: [UInt8]) async throws -> [Float] {
        let analysis = try await analyze(image)
        let face = try #require(analysis.faces.first, "no face found")
        return try #require(face.embedding)
    }
}

/// The engine error `body` throws, or nil when it succeeds; any other error is recorded as an issue.
func failure<T>(of body: () throws -> T) -> FaceEngineError? {
    do {
        _ = try body()
        return nil
    } catch let error as FaceEngineError {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return .internalError("unexpected error")
    }
}

/// Mean absolute difference of two equally long byte arrays.
func meanDifference(_ a: [UInt8], _ b: [UInt8]) -> Double {
    guard a.count == b.count, !a.isEmpty else { return .infinity }
    var total = 0
    for i in a.indices { total += abs(Int(a[i]) - Int(b[i])) }
    return Double(total) / Double(a.count)
}

// Serialized: the memory checks read this process's resident set, and the machine has two cores.
@Suite(.serialized) struct FaceEngineTests {
    @Test func separatesObamaFromBiden() async throws {
        let reference = try await SharedPool.embedding(of: "obama.jpg")
        for name in ["obama2.jpg", "obama3.jpg", "obama_partial_face.jpg", "obama_partial_face2.jpg"] {
            let distance = euclideanDistance(reference, try await SharedPool.embedding(of: name))
            print("obama.jpg ↔ \(name): \(distance)")
            #expect(distance < 0.5, "\(name) should match obama.jpg")
        }
        let biden = euclideanDistance(reference, try await SharedPool.embedding(of: "biden.jpg"))
        print("obama.jpg ↔ biden.jpg: \(biden)")
        #expect(biden > 0.6)
    }

    @Test func readsTheRGBAPngLikeItsJpegTwin() async throws {
        let png = try await SharedPool.embedding(of: "32bit.png")
        let jpeg = try await SharedPool.embedding(of: "obama2.jpg")
        let distance = euclideanDistance(png, jpeg)
        print("32bit.png ↔ obama2.jpg: \(distance)")
        #expect(distance < 0.05)
        let decoded = try decodePixels(try TestEnvironment.photo("32bit.png"))
        #expect(decoded.width == 626 && decoded.height == 1200)
    }

    @Test func findsNoFaceInGeneratedScenes() async throws {
        let scratch = try ScratchDirectory()
        try scratch.convert(["-size", "1200x800", "gradient:skyblue-darkgreen", scratch.file("gradient.jpg")])
        try scratch.convert(["-seed", "7", "-size", "900x600", "plasma:green-blue", "-blur", "0x2", scratch.file("landscape.png")])
        try scratch.convert(["-size", "640x480", "xc:white", scratch.file("blank.jpg")])
        for (name, width, height) in [("gradient.jpg", 1200, 800), ("landscape.png", 900, 600), ("blank.jpg", 640, 480)] {
            let analysis = try await SharedPool.analyze(try scratch.read(name))
            #expect(analysis.faceCount == 0, "\(name)")
            #expect(analysis.faces.isEmpty)
            #expect(analysis.width == width && analysis.height == height, "\(name)")
        }
    }

    @Test(arguments: [(6, "-90", true), (8, "90", false)])
    func honoursExifOrientation(orientation: Int, rotation: String, bigEndian: Bool) async throws {
        let scratch = try ScratchDirectory()
        let original = try TestEnvironment.photo("obama.jpg")
        // Store the pixels turned the other way, then tell viewers to turn them back.
        try scratch.convert([try TestEnvironment.imageDirectory() + "/obama.jpg", "-rotate", rotation, "-strip", "-quality", "95",
                             scratch.file("stored.jpg")])
        let stored = try scratch.read("stored.jpg")
        let tagged = insertingAfterSOI(stored, exifOrientationSegment(UInt16(orientation), bigEndian: bigEndian))

        let header = try ImageProbe.inspect(tagged)
        #expect(header.format == "jpeg" && header.width == 910 && header.height == 1137)
        let storedAnalysis = try await SharedPool.analyze(stored)
        #expect(storedAnalysis.width == 1137 && storedAnalysis.height == 910, "without the tag the picture lies on its side")

        let analysis = try await SharedPool.analyze(tagged)
        #expect(analysis.width == 910 && analysis.height == 1137)
        let upright = try decodePixels(tagged), reference = try decodePixels(original)
        let difference = meanDifference(upright.pixels, reference.pixels)
        print("orientation \(orientation): mean pixel difference to obama.jpg \(difference)")
        #expect(difference < 4, "decoded pixels should be the upright photo again (up to JPEG re-encoding)")
        let distance = euclideanDistance(try await SharedPool.embedding(of: tagged), try await SharedPool.embedding(of: original))
        print("orientation \(orientation): descriptor distance to obama.jpg \(distance)")
        #expect(distance < 0.1)
    }

    @Test func appliesEveryOrientation() throws {
        let scratch = try ScratchDirectory()
        try scratch.convert([try TestEnvironment.imageDirectory() + "/obama.jpg", "-resize", "60x80!", "-quality", "100",
                             scratch.file("upright.jpg")])
        let upright = try decodePixels(try scratch.read("upright.jpg"))
        // Operation that turns the upright picture into what a camera with that orientation stores.
        let storage = [1: [], 2: ["-flop"], 3: ["-rotate", "180"], 4: ["-flip"], 5: ["-transpose"],
                       6: ["-rotate", "-90"], 7: ["-transverse"], 8: ["-rotate", "90"]]
        for (orientation, operation) in storage.sorted(by: { $0.key < $1.key }) {
            let name = "stored\(orientation).jpg"
            try scratch.convert([scratch.file("upright.jpg")] + operation + ["-strip", "-quality", "100", scratch.file(name)])
            let tagged = insertingAfterSOI(try scratch.read(name),
                                           exifOrientationSegment(UInt16(orientation), bigEndian: orientation % 2 == 0))
            let decoded = try decodePixels(tagged)
            #expect(decoded.width == 60 && decoded.height == 80, "orientation \(orientation)")
            let difference = meanDifference(decoded.pixels, upright.pixels)
            #expect(difference < 3, "orientation \(orientation): mean difference \(difference)")
        }
    }

    @Test func rejectsBrokenInputsWithoutAllocating() throws {
        let engine = try TestEnvironment.engine()
        let photo = try TestEnvironment.photo("obama.jpg")
        let png = try TestEnvironment.photo("32bit.png")
        var hugeJpeg = photo
        // Patch the frame header (marker, length, precision, height, width) to 65000 × 65000.
        let frame = try #require(jpegFrameHeaderOffset(hugeJpeg), "obama.jpg has no frame header")
        hugeJpeg.replaceSubrange((frame + 5)..<(frame + 9), with: [0xFD, 0xE8, 0xFD, 0xE8])

        let measurable = resetPeakMemory()
        let before = residentMemory()
        #expect(failure { try engine.analyze(pngHeader(width: 100_000, height: 100_000)) }
            == .imageTooLarge(width: 100_000, height: 100_000))
        #expect(failure { try engine.analyze(hugeJpeg) } == .imageTooLarge(width: 65_000, height: 65_000))
        // Under the cap but with almost no data: refused before the pixel buffer exists.
        guard case .imageFormat(let message)? = failure(of: { try engine.analyze(pngHeader(width: 3_500, height: 3_500)) }) else {
            Issue.record("a 3500×3500 PNG header (under the 16 MP cap) with 8 bytes of data should be an image format error")
            return
        }
        #expect(message.contains("too short"))
        let after = residentMemory()
        let growth = measurable ? after.peak - before.current : after.current - before.current
        print("resident memory growth while rejecting oversized headers: \(growth) kB (peak measurable: \(measurable))")
        #expect(growth < 50_000, "rejecting must not allocate pixel buffers")

        let truncated = Array(photo.prefix(photo.count * 2 / 5))
        for (label, bytes) in [("truncated JPEG", truncated), ("truncated PNG", Array(png.prefix(png.count * 3 / 5))),
                               ("text", Array("name,score\nobama,1\n".utf8)), ("zero bytes", [])] {
            guard case .imageFormat(let message)? = failure(of: { try engine.analyze(bytes) }) else {
                Issue.record("\(label) should be an image format error")
                continue
            }
            print("\(label): \(message)")
            #expect(!message.isEmpty)
        }
        guard case .imageFormat? = failure(of: { try ImageProbe.inspect([]) }) else {
            Issue.record("probing zero bytes should fail")
            return
        }
        let probed = try ImageProbe.inspect(pngHeader(width: 100_000, height: 100_000))
        #expect(probed.format == "png" && probed.width == 100_000 && probed.height == 100_000)
        #expect(FaceEngineError.imageTooLarge(width: 1, height: 1).isRetriable == false)
    }

    @Test func capsPixelsAsConfigured() throws {
        let engine = try TestEnvironment.engine { $0.maxPixels = 500_000 }
        #expect(failure { try engine.analyze(try! TestEnvironment.photo("obama.jpg")) } == .imageTooLarge(width: 910, height: 1137))
    }

    @Test func decodesPngVariants() async throws {
        let scratch = try ScratchDirectory()
        let source = try TestEnvironment.imageDirectory() + "/obama2.jpg"
        try scratch.convert([source, "PNG24:" + scratch.file("rgb8.png")])
        try scratch.convert([source, "-depth", "16", "PNG48:" + scratch.file("rgb16.png")])
        try scratch.convert([source, "-interlace", "PNG", "PNG24:" + scratch.file("interlaced.png")])
        try scratch.convert([source, "PNG8:" + scratch.file("palette.png")])
        try scratch.convert([source, "-colorspace", "Gray", "-depth", "8", "-define", "png:color-type=0", scratch.file("grey.png")])
        try scratch.convert([source, "-colorspace", "Gray", "-alpha", "on", "-define", "png:color-type=4", scratch.file("grey-alpha.png")])
        try scratch.convert([source, "-depth", "16", "-colorspace", "Gray", "-define", "png:color-type=0", "-define", "png:bit-depth=16",
                             scratch.file("grey16.png")])

        // IHDR bytes 24, 25, 28: bit depth, colour type, interlace method.
        let expected: [(String, UInt8, UInt8, UInt8)] = [
            ("rgb8.png", 8, 2, 0), ("rgb16.png", 16, 2, 0), ("interlaced.png", 8, 2, 1), ("palette.png", 8, 3, 0),
            ("grey.png", 8, 0, 0), ("grey-alpha.png", 8, 4, 0), ("grey16.png", 16, 0, 0),
        ]
        for (name, depth, colorType, interlace) in expected {
            let bytes = try scratch.read(name)
            #expect(bytes[24] == depth && bytes[25] == colorType && bytes[28] == interlace,
                    "\(name) was written as depth \(bytes[24]), colour type \(bytes[25]), interlace \(bytes[28])")
        }

        let base = try decodePixels(try scratch.read("rgb8.png"))
        #expect(try decodePixels(try scratch.read("rgb16.png")).pixels == base.pixels, "16-bit samples keep their high byte")
        #expect(try decodePixels(try scratch.read("interlaced.png")).pixels == base.pixels)
        for name in ["grey.png", "grey-alpha.png", "grey16.png"] {
            let grey = try decodePixels(try scratch.read(name))
            #expect(grey.width == 626 && grey.height == 1200)
            var neutral = true
            for i in stride(from: 0, to: grey.pixels.count, by: 3) where grey.pixels[i] != grey.pixels[i + 1] || grey.pixels[i] != grey.pixels[i + 2] {
                neutral = false
                break
            }
            #expect(neutral, "\(name) should become neutral RGB")
        }
        let palette = try decodePixels(try scratch.read("palette.png"))
        let paletteError = meanDifference(palette.pixels, base.pixels)
        #expect(paletteError < 16, "palette colours should approximate the photo (mean difference \(paletteError))")

        let reference = try await SharedPool.embedding(of: "obama2.jpg")
        for (name, _, _, _) in expected {
            let distance = euclideanDistance(reference, try await SharedPool.embedding(of: try scratch.read(name)))
            print("\(name) ↔ obama2.jpg: \(distance)")
            #expect(distance < 0.35, "\(name)")
        }
    }

    @Test func measuresQuality() async throws {
        let scratch = try ScratchDirectory()
        let directory = try TestEnvironment.imageDirectory()
        try scratch.convert([directory + "/obama.jpg", "-blur", "0x6", scratch.file("blurred.jpg")])
        try scratch.convert([directory + "/obama.jpg", "-modulate", "40", scratch.file("dark.jpg")])
        try scratch.convert([directory + "/obama2.jpg", "-flop", scratch.file("mirrored.jpg")])
        try scratch.convert([directory + "/obama.jpg", "-quality", "95", scratch.file("reencoded.jpg")])

        let sharp = try #require(try await SharedPool.analyze(try TestEnvironment.photo("obama.jpg")).faces.first)
        print("obama.jpg quality: \(sharp.quality)")
        #expect(sharp.quality.faceWidth == sharp.box.width)
        #expect(sharp.quality.faceWidth > 150 && sharp.quality.faceWidth < 400)
        #expect(sharp.quality.sharpness > 100)
        #expect(sharp.quality.brightness > 60 && sharp.quality.brightness < 200)
        #expect(abs(sharp.quality.yaw) < 10, "obama.jpg looks straight into the camera")

        // Re-encoding moves the landmarks by a pixel or so; the figure must not jump with them.
        let reencoded = try #require(try await SharedPool.analyze(try scratch.read("reencoded.jpg")).faces.first)
        print("re-encoded quality: \(reencoded.quality)")
        #expect(abs(reencoded.quality.sharpness - sharp.quality.sharpness) < 0.2 * sharp.quality.sharpness)
        #expect(abs(reencoded.quality.brightness - sharp.quality.brightness) < 2)

        let blurred = try #require(try await SharedPool.analyze(try scratch.read("blurred.jpg")).faces.first)
        print("blurred quality: \(blurred.quality)")
        #expect(blurred.quality.sharpness < sharp.quality.sharpness / 4)
        let dark = try #require(try await SharedPool.analyze(try scratch.read("dark.jpg")).faces.first)
        print("darkened quality: \(dark.quality)")
        #expect(dark.quality.brightness < sharp.quality.brightness * 0.6)

        // obama2.jpg: the nose lies left of the eyes' midpoint in the picture: turned to his right, negative yaw.
        let turned = try #require(try await SharedPool.analyze(try TestEnvironment.photo("obama2.jpg")).faces.first)
        let mirrored = try #require(try await SharedPool.analyze(try scratch.read("mirrored.jpg")).faces.first)
        print("obama2.jpg yaw \(turned.quality.yaw), mirrored \(mirrored.quality.yaw)")
        #expect(turned.quality.yaw < -10)
        #expect(mirrored.quality.yaw > 10)
        #expect(abs(turned.quality.yaw + mirrored.quality.yaw) < 8)
    }

    @Test func returnsLandmarksAndDescriptorsOnRequest() async throws {
        let image = try TestEnvironment.photo("obama3.jpg")
        let full = try await SharedPool.analyze(image, options: FaceAnalysisOptions(embeddings: true, landmarks68: true))
        let face = try #require(full.faces.first)
        let landmarks = try #require(face.landmarks68)
        #expect(landmarks.count == 68)
        #expect(face.landmarks5.count == 5)
        let margin = Double(face.box.width) * 0.3
        for point in landmarks + face.landmarks5 {
            #expect(point.x > Double(face.box.left) - margin && point.x < Double(face.box.right) + margin)
            #expect(point.y > Double(face.box.top) - margin && point.y < Double(face.box.bottom) + margin)
        }
        #expect(face.embedding?.count == 128)
        #expect(face.detectorScore > 0)

        let lean = try await SharedPool.analyze(image, options: FaceAnalysisOptions(embeddings: false))
        #expect(lean.faces.first?.embedding == nil && lean.faces.first?.landmarks68 == nil)
        #expect(lean.faces.first?.box == face.box && lean.faces.first?.quality == face.quality)
        let none = try await SharedPool.analyze(image, options: FaceAnalysisOptions(embeddings: true, landmarks68: true, maxFaces: 0))
        #expect(none.faces.first?.embedding == nil && none.faces.first?.landmarks68 == nil)
    }

    @Test func ordersSeveralFacesLargestFirst() async throws {
        let scratch = try ScratchDirectory()
        let directory = try TestEnvironment.imageDirectory()
        try scratch.convert([directory + "/obama.jpg", directory + "/biden.jpg", "-background", "white", "+append", scratch.file("pair.jpg")])
        let image = try scratch.read("pair.jpg")
        let one = try await SharedPool.analyze(image)
        #expect(one.faceCount == 2)
        #expect(one.faces.count == 2)
        guard one.faces.count == 2 else { return }
        #expect(one.faces[0].box.width * one.faces[0].box.height >= one.faces[1].box.width * one.faces[1].box.height)
        #expect(one.faces[0].embedding != nil && one.faces[1].embedding == nil)

        let both = try await SharedPool.analyze(image, options: FaceAnalysisOptions(maxFaces: 2))
        let first = try #require(both.faces[0].embedding), second = try #require(both.faces[1].embedding)
        let biden = try await SharedPool.embedding(of: "biden.jpg"), obama = try await SharedPool.embedding(of: "obama.jpg")
        #expect(euclideanDistance(first, biden) < 0.3, "biden's face is the larger one")
        #expect(euclideanDistance(second, obama) < 0.3)
        #expect(both.faces[1].box.left < 910, "obama sits in the left half")
    }

    @Test func boxEmbeddingRepeatsTheAnalysis() throws {
        let engine = try TestEnvironment.engine()
        let image = try TestEnvironment.photo("obama3.jpg")
        let face = try #require(try engine.analyze(image).faces.first)
        let again = try engine.embedding(image, box: face.box)
        #expect(again == face.embedding)
        let outside = failure { try engine.embedding(image, box: FaceBox(left: 5000, top: 5000, right: 5100, bottom: 5100)) }
        #expect(outside?.code == 5 && outside?.isRetriable == false)
    }

    @Test func upsamplesSmallImagesOnlyWhenAllowed() throws {
        let scratch = try ScratchDirectory()
        try scratch.convert([try TestEnvironment.imageDirectory() + "/obama.jpg", "-resize", "15%", scratch.file("small.jpg")])
        let image = try scratch.read("small.jpg")
        let upsampling = try TestEnvironment.engine().analyze(image)
        let plain = try TestEnvironment.engine { $0.upsampleSmallImages = false }.analyze(image)
        print("small image \(upsampling.width)×\(upsampling.height): \(upsampling.faceCount) face(s) with upsampling, \(plain.faceCount) without")
        #expect(plain.faceCount == 0, "a ~36 px face is below the HOG window")
        let face = try #require(upsampling.faces.first)
        #expect(face.box.left >= 0 && face.box.right < upsampling.width && face.box.width > 20)
    }

    @Test func reducedDetectionFindsTheFullResolutionFace() throws {
        let image = try TestEnvironment.photo("obama3.jpg")
        let reduced = try #require(try TestEnvironment.engine().analyze(image).faces.first)
        let full = try #require(try TestEnvironment.engine { $0.detectionMaxSide = 4096 }.analyze(image).faces.first)
        let overlapWidth = min(reduced.box.right, full.box.right) - max(reduced.box.left, full.box.left) + 1
        let overlapHeight = min(reduced.box.bottom, full.box.bottom) - max(reduced.box.top, full.box.top) + 1
        let intersection = Double(max(0, overlapWidth) * max(0, overlapHeight))
        let union = Double(reduced.box.width * reduced.box.height + full.box.width * full.box.height) - intersection
        print("obama3.jpg box reduced \(reduced.box) full \(full.box), IoU \(intersection / union)")
        #expect(intersection / union > 0.6)
        #expect(euclideanDistance(try #require(reduced.embedding), try #require(full.embedding)) < 0.15)
    }

    @Test func reportsMissingModels() throws {
        let scratch = try ScratchDirectory()
        let error = failure { try FaceEngine(configuration: FaceEngineConfiguration(modelDirectory: scratch.path)) }
        guard case .modelMissing(let message)? = error else {
            Issue.record("expected modelMissing, got \(String(describing: error))")
            return
        }
        #expect(message.contains(".dat"))
        let poolError: FaceEngineError?
        do {
            _ = try FaceEnginePool(configuration: FaceEngineConfiguration(modelDirectory: scratch.path), count: 2)
            poolError = nil
        } catch {
            poolError = error
        }
        #expect(poolError == error)

        // Present but not a model: reported as such, not as a crash or an internal error.
        let models = try TestEnvironment.modelDirectory()
        for file in ["shape_predictor_68_face_landmarks.dat", "dlib_face_recognition_resnet_model_v1.dat"] {
            try FileManager.default.createSymbolicLink(atPath: scratch.file(file), withDestinationPath: models + "/" + file)
        }
        try Data("not a shape predictor".utf8).write(to: URL(fileURLWithPath: scratch.file("shape_predictor_5_face_landmarks.dat")))
        guard case .modelMissing(let corrupt)? = failure(of: { try FaceEngine(configuration: FaceEngineConfiguration(modelDirectory: scratch.path)) }) else {
            Issue.record("a corrupt model file should be reported as modelMissing")
            return
        }
        print("corrupt model: \(corrupt)")
        #expect(corrupt.hasPrefix("unreadable model"))

        // The 68-point model is read on the first analysis that asks for 68 points: a corrupt one lets the engine
        // start and match, and fails that analysis the same way.
        let lazy = try ScratchDirectory()
        for file in ["shape_predictor_5_face_landmarks.dat", "dlib_face_recognition_resnet_model_v1.dat"] {
            try FileManager.default.createSymbolicLink(atPath: lazy.file(file), withDestinationPath: models + "/" + file)
        }
        try Data("not a shape predictor".utf8).write(to: URL(fileURLWithPath: lazy.file("shape_predictor_68_face_landmarks.dat")))
        let engine = try FaceEngine(configuration: FaceEngineConfiguration(modelDirectory: lazy.path))
        let photo = try TestEnvironment.photo("obama.jpg")
        #expect(try engine.analyze(photo, options: FaceAnalysisOptions(embeddings: true, landmarks68: false)).faces.first?.embedding != nil)
        guard case .modelMissing(let unread)? = failure(of: { try engine.analyze(photo, options: FaceAnalysisOptions(landmarks68: true)) }) else {
            Issue.record("a corrupt 68-point model should fail the analysis that needs it as modelMissing")
            return
        }
        #expect(unread.hasPrefix("unreadable model"))
    }

    @Test func poolServesConcurrentCallers() async throws {
        let pool = try SharedPool.pool.get()
        let names = ["obama.jpg", "biden.jpg", "obama2.jpg"]
        let engine = try TestEnvironment.engine()
        var expected: [String: [Float]] = [:]
        for name in names { expected[name] = try engine.analyze(try TestEnvironment.photo(name)).faces.first?.embedding }
        try await withThrowingTaskGroup(of: (String, [Float]?).self) { group in
            for round in 0..<6 {
                let name = names[round % names.count]
                let image = try TestEnvironment.photo(name)
                group.addTask { (name, try await pool.analyze(image).faces.first?.embedding) }
            }
            for try await (name, embedding) in group {
                let difference = zip(try #require(embedding), try #require(expected[name])).map { abs($0 - $1) }.max() ?? 1
                #expect(difference < 1e-5, "\(name): pool and engine disagree by \(difference)")
            }
        }
        do {
            _ = try await pool.analyze(Array("not an image".utf8))
            Issue.record("text should fail")
        } catch {
            guard case .imageFormat = error else {
                Issue.record("expected imageFormat, got \(error)")
                return
            }
        }
    }

    @Test func probesHeadersAndMeasuresDistances() throws {
        let jpeg = try ImageProbe.inspect(try TestEnvironment.photo("obama.jpg"))
        #expect(jpeg.format == "jpeg" && jpeg.width == 910 && jpeg.height == 1137)
        let png = try ImageProbe.inspect(try TestEnvironment.photo("32bit.png"))
        #expect(png.format == "png" && png.width == 626 && png.height == 1200)
        #expect(euclideanDistance([0, 3], [4, 0]) == 5)
        #expect(euclideanDistance([1], [1, 2]) == .infinity)
    }
}
