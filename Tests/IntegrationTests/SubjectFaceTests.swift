import FaceEngine
import FaceGateContracts
import FaceGateTestSupport
import Foundation
@testable import MatcherWorker
import Testing

/// Photos with more than one face, made from the real test photos: each person's face cropped from a portrait,
/// scaled to a chosen width and placed on a plain canvas (ImageMagick), so the sizes and places of subject and bystander
/// are known.
enum FaceComposite {
    struct Piece {
        var photo: String
        /// The face's width on the canvas, in pixels.
        var faceWidth: Int
        /// Where the face's centre goes, as shares of the canvas (0 … 1).
        var x: Double
        var y: Double
    }

    static func compose(width: Int = 1400, height: Int = 900, _ pieces: [Piece]) throws -> Data {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("composite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var arguments = ["-size", "\(width)x\(height)", "xc:#8a8f96"]
        for (index, piece) in pieces.enumerated() {
            let source = try TestEnvironment.value("FACEGATE_TEST_IMAGES") + "/" + piece.photo
            let face = try faceBox(of: source)
            // A square of twice the face's width around its centre, scaled so the face is `faceWidth` wide.
            let side = face.width * 2
            let (left, top) = (face.left + face.width / 2 - side / 2, face.top + face.height / 2 - side / 2)
            let crop = directory.appendingPathComponent("\(index).png").path
            let scaled = piece.faceWidth * 2
            try run(["convert", source, "-auto-orient", "-crop", "\(side)x\(side)\(signed(left))\(signed(top))", "+repage",
                     "-resize", "\(scaled)x\(scaled)!", crop])
            let x = Int(piece.x * Double(width)) - scaled / 2, y = Int(piece.y * Double(height)) - scaled / 2
            arguments += [crop, "-geometry", "\(signed(x))\(signed(y))", "-composite"]
        }
        let out = directory.appendingPathComponent("composite.jpg").path
        try run(["convert"] + arguments + ["-quality", "92", out])
        return try Data(contentsOf: URL(fileURLWithPath: out))
    }

    static func signed(_ value: Int) -> String { value < 0 ? "\(value)" : "+\(value)" }

    static func faceBox(of path: String) throws -> FaceBox {
        var configuration = FaceEngineConfiguration(modelDirectory: try TestEnvironment.value("FACEGATE_MODEL_DIR"))
        configuration.model = .sface2021dec
        let analysis = try FaceEngine(configuration: configuration).analyze(Array(try Data(contentsOf: URL(fileURLWithPath: path))),
                                                                            options: FaceAnalysisOptions(embeddings: false))
        guard let face = analysis.faces.first else { throw TestSetupError("no face in \(path)") }
        return face.box
    }

    static func run(_ arguments: [String]) throws {
        let result = try ChildProcess.run("/usr/bin/env", arguments)
        guard result.exitCode == 0 else { throw TestSetupError("\(arguments[0]) failed: \(result.errorText)") }
    }
}

/// Choosing a photo's subject: the rules alone, then on the real stack with the real models and composites of real photos.
@Suite struct SubjectFaceTests {
    static func face(_ left: Int, _ top: Int, width: Int, sharpness: Double = 300, score: Double = 0.9) -> DetectedFace {
        DetectedFace(box: FaceBox(left: left, top: top, right: left + width - 1, bottom: top + width - 1), detectorScore: score,
                     landmarks5: [], landmarks68: nil, embedding: nil,
                     quality: FaceQuality(faceWidth: width, sharpness: sharpness, brightness: 120, yaw: 0))
    }

    @Test func theRulesPickByRiskAndRefuseANearTie() {
        let (width, height) = (1000, 800)
        let centred = Self.face(420, 320, width: 160), sideSmaller = Self.face(800, 350, width: 110)
        let sideSame = Self.face(800, 330, width: 160), cut = Self.face(940, 300, width: 170)
        // Strict: size alone; a second face at 80 % of the largest's width or more is a tie.
        #expect(SubjectSelection.choose([centred, sideSmaller], width: width, height: height, lenient: false) == .face(0))
        #expect(SubjectSelection.choose([centred, sideSame], width: width, height: height, lenient: false) == .ambiguous)
        #expect(SubjectSelection.choose([cut, centred], width: width, height: height, lenient: false) == .ambiguous)
        // Lenient: the centred subject beats a same-size bystander at the edge, and a face cut by the border loses its size.
        #expect(SubjectSelection.choose([centred, sideSmaller], width: width, height: height, lenient: true) == .face(0))
        #expect(SubjectSelection.choose([centred, sideSame], width: width, height: height, lenient: true) == .face(0))
        #expect(SubjectSelection.choose([cut, centred], width: width, height: height, lenient: true) == .face(1))
        // Position alone does not decide: two alike faces a little off the centre on either side are a tie…
        let left = Self.face(250, 320, width: 160), right = Self.face(590, 320, width: 160)
        #expect(SubjectSelection.choose([left, right], width: width, height: height, lenient: true) == .ambiguous)
        // …which a sharper, surer face breaks; and a box names either face.
        let blurred = Self.face(590, 320, width: 160, sharpness: 60, score: 0.6)
        #expect(SubjectSelection.choose([left, blurred], width: width, height: height, lenient: true) == .face(0))
        #expect(SubjectSelection.choose([left, right], width: width, height: height, lenient: true, box: FaceRegion(x: 600, y: 330, width: 140, height: 140)) == .face(1))
        #expect(SubjectSelection.choose([left, right], width: width, height: height, lenient: true, box: FaceRegion(x: 10, y: 10, width: 50, height: 50)) == .notInBox)
        #expect(SubjectSelection.choose([left], width: width, height: height, lenient: false) == .face(0))
    }

    /// The subject centred at 200 px, a bystander at the side at 130 px; and two faces of 180 px side by side.
    static func withBystander() throws -> Data {
        try FaceComposite.compose([.init(photo: "obama.jpg", faceWidth: 200, x: 0.45, y: 0.45), .init(photo: "biden.jpg", faceWidth: 130, x: 0.85, y: 0.5)])
    }

    static func nearEqual() throws -> Data {
        try FaceComposite.compose([.init(photo: "obama.jpg", faceWidth: 180, x: 0.3, y: 0.5), .init(photo: "biden.jpg", faceWidth: 180, x: 0.7, y: 0.5)])
    }

    func enroll(_ stack: TestStack, _ app: TestStack.App, user: String, image: Data, faceBox: String? = nil) async throws -> TestStack.Reply {
        try await stack.call("POST", "/v1/apps/\(app.id)/users/\(user)/faces" + (faceBox.map { "?faceBox=\($0)" } ?? ""), bearer: stack.adminKey,
                             body: image, contentType: "image/jpeg")
    }

    @Test func aBystanderIsNeitherEnrolledNorLoggedIn() async throws {
        try await TestStack.with { stack in
            let app = try await stack.createApp(extra: ["faceModel": "sface-2021dec"])
            let obama = try await stack.createUser(app, employeeNumber: "S1", name: "Barack Obama")
            let enrolled = try await enroll(stack, app, user: obama, image: try Self.withBystander())
            #expect(enrolled.status == 201, "\(enrolled.json)")
            #expect(enrolled.json["otherFaces"] as? Int == 1)
            let box = try #require(enrolled.json["faceBox"] as? [String: Int])
            #expect((box["x"] ?? 0) + (box["width"] ?? 0) / 2 < 1400 * 6 / 10, "the face enrolled is the one left of the bystander: \(box)")
            let token = try await stack.accessToken(app)
            #expect(try await stack.faceLogin(token, device: "phone-s1", photo: "obama2.jpg").json["status"] as? String == "CONFIRM_REQUIRED",
                    "the subject is found by another photo of him")
            let bystander = try await stack.faceLogin(token, device: "phone-s2", photo: "biden.jpg")
            #expect(bystander.errorCode == "NO_MATCH_FACE", "the bystander's own photo matches no one: \(bystander.json)")
        }
    }

    @Test func nearEqualFacesAreRefusedWithTheirBoxesUntilAFaceBoxNamesOne() async throws {
        try await TestStack.with { stack in
            let app = try await stack.createApp(extra: ["faceModel": "sface-2021dec"])
            let obama = try await stack.createUser(app, employeeNumber: "T1", name: "Barack Obama")
            let biden = try await stack.createUser(app, employeeNumber: "T2", name: "Joe Biden")
            let photo = try Self.nearEqual()
            let refused = try await enroll(stack, app, user: obama, image: photo)
            #expect(refused.status == 422 && refused.errorCode == "LOW_QUALITY", "\(refused.json)")
            let error = try #require(refused.json["error"] as? [String: Any])
            #expect(error["reason"] as? String == "AMBIGUOUS_SUBJECT")
            let faces = try #require(error["faces"] as? [[String: Int]])
            #expect(faces.count == 2, "\(faces)")
            // faceBox picks either face: the left one for Obama, the right one for Biden.
            let ordered = faces.sorted { $0["x"]! < $1["x"]! }
            func text(_ box: [String: Int]) -> String { "\(box["x"]!),\(box["y"]!),\(box["width"]!),\(box["height"]!)" }
            #expect(try await enroll(stack, app, user: obama, image: photo, faceBox: text(ordered[0])).status == 201)
            #expect(try await enroll(stack, app, user: biden, image: photo, faceBox: text(ordered[1])).status == 201)
            let nowhere = try await enroll(stack, app, user: biden, image: photo, faceBox: "1,1,20,20")
            #expect((nowhere.json["error"] as? [String: Any])?["reason"] as? String == "NO_FACE_IN_BOX")
            #expect(try await enroll(stack, app, user: biden, image: photo, faceBox: "1,1,0,20").errorCode == "INVALID_REQUEST")
            let search = try await stack.call("POST", "/v1/apps/\(app.id)/faces/search", bearer: stack.adminKey,
                                              body: try TestEnvironment.image("biden.jpg"), contentType: "image/jpeg")
            #expect((search.json["match"] as? [String: Any])?["employeeNumber"] as? String == "T2", "\(search.json)")

            // A login photo with the two near-equal faces is refused, though both are enrolled.
            let token = try await stack.accessToken(app)
            let login = try await stack.faceLogin(token, device: "phone-t", image: photo)
            #expect(login.status == 422 && login.errorCode == "LOW_QUALITY", "\(login.json)")
            #expect((login.json["error"] as? [String: Any])?["reason"] as? String == "AMBIGUOUS_SUBJECT")
        }
    }

    @Test func aKioskBurstWithANearEqualSecondFaceIsRefused() async throws {
        try await TestStack.with(extra: LivenessTests.extra) { stack in
            let app = try await stack.createApp()
            let obama = try await stack.createUser(app, employeeNumber: "K9", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: obama, photo: "obama2.jpg").status == 201)
            let token = try await stack.accessToken(app)
            let issued = try await stack.kioskChallenge(token, app: app, device: "kiosk-9")
            let challengeId = try #require(issued.string("challengeId"))
            let actions = try #require((issued.json["actions"] as? [String])?.compactMap(LivenessAction.init(rawValue:)))
            let pair = FileManager.default.temporaryDirectory.appendingPathComponent("pair-\(UUID().uuidString).jpg")
            defer { try? FileManager.default.removeItem(at: pair) }
            try Self.nearEqual().write(to: pair)
            // Frames of the two faces (held still: without the rule this would be a spoof; with it, nobody is searched).
            let burst = try (0..<(actions.count * 3 + 1)).map { try SyntheticFrames.frame(photo: pair, quality: 90 - $0) }
            let login = try await stack.kioskLogin(token, app: app, device: "kiosk-9", challengeId: challengeId, frames: burst)
            #expect(login.status == 422 && login.errorCode == "LOW_QUALITY", "a bystander nearly as large as the face: \(login.json)")
            #expect((login.json["error"] as? [String: Any])?["reason"] as? String == "AMBIGUOUS_SUBJECT" && login.json["token"] == nil)
        }
    }
}
