import FaceGateCore
import FaceGateTestSupport
import Foundation
import PostgresClient
import ServiceKit
import Testing

/// Face models per app: a dlib app and an SFace app served side by side by the same matcher, each
/// template recording its model, and never a comparison across models.
@Suite(.serialized, .sharedStack()) struct FaceModelTests {
    @Test func aDlibAppAndAnSFaceAppLogInSideBySide() async throws {
        try await TestStack.with { stack in
            let dlib = try await stack.createApp(extra: ["faceModel": "dlib-resnet-v1"])
            let sface = try await stack.createApp(extra: ["faceModel": "sface-2021dec"])
            let plain = try await stack.createApp()
            let shown = try await stack.call("GET", "/v1/apps/\(plain.id)", bearer: stack.adminKey)
            #expect(shown.string("faceModel") == FaceModel.defaultForNewApps.rawValue, "new apps get the default model")
            #expect(shown.json["matchThreshold"] as? Double == Double(FaceModel.defaultForNewApps.defaultThreshold))

            for (app, model) in [(dlib, "dlib-resnet-v1"), (sface, "sface-2021dec")] {
                let user = try await stack.createUser(app, employeeNumber: "M1", name: "Barack Obama")
                let enrolled = try await stack.enroll(app, user: user, photo: "obama.jpg")
                #expect(enrolled.status == 201, "\(model): \(String(decoding: enrolled.body, as: UTF8.self))")
                let faces = try await stack.call("GET", "/v1/apps/\(app.id)/users/\(user)/faces", bearer: stack.adminKey)
                #expect((faces.json["items"] as? [[String: Any]])?.first?["model"] as? String == model)

                let token = try await stack.accessToken(app)
                let login = try await stack.faceLogin(token, device: "phone", photo: "obama2.jpg")
                #expect(login.string("status") == "CONFIRM_REQUIRED", "\(model): \(String(decoding: login.body, as: UTF8.self))")
                let stranger = try await stack.faceLogin(token, device: "phone", photo: "biden.jpg")
                #expect(stranger.errorCode == "NO_MATCH_FACE", "\(model)")
            }

            // An SFace threshold is in SFace's units; a dlib figure is refused for it, and the other way round.
            let wrong = try await stack.call("POST", "/v1/apps", bearer: stack.adminKey,
                                             json: ["name": "units", "faceModel": "sface-2021dec", "matchThreshold": 0.3])
            #expect(wrong.status == 400)
            let unknown = try await stack.call("POST", "/v1/apps", bearer: stack.adminKey, json: ["name": "x", "faceModel": "arcface"])
            #expect(unknown.status == 400)
        }
    }

    /// A dlib app moves to SFace without asking everyone back: a confident login on a bound device re-enrolls the
    /// user with SFace in the background, the operator sees who is ready, switches, and the ready user logs in on
    /// SFace while the one who never logged in is listed for a new enrollment.
    @Test func aDlibAppMovesToSFaceAsItsUsersLogIn() async throws {
        try await TestStack.with { stack in
            let app = try await stack.createApp(extra: ["faceModel": "dlib-resnet-v1"])
            let obama = try await stack.createUser(app, employeeNumber: "E1", name: "Barack Obama")
            let biden = try await stack.createUser(app, employeeNumber: "E2", name: "Joe Biden")
            #expect(try await stack.enroll(app, user: obama, photo: "obama.jpg").status == 201)
            #expect(try await stack.enroll(app, user: biden, photo: "biden.jpg").status == 201)
            func status() async throws -> [String: Any] {
                try await stack.call("GET", "/v1/apps/\(app.id)/face-model-migration", bearer: stack.adminKey).json
            }
            #expect(try await status()["users"] as? Int == 2)
            #expect(try await status()["ready"] as? Int == 0)

            // The first login binds the phone (confirmation); the next one, confident and on a bound device, re-enrolls.
            let token = try await stack.accessToken(app)
            let first = try await stack.faceLogin(token, device: "phone", photo: "obama.jpg")
            let confirmation = try #require(first.string("confirmationId"), "\(first.json)")
            let confirmed = try await stack.call("POST", "/v1/face-login/confirm", bearer: token,
                                                 json: ["confirmationId": confirmation, "employeeNumber": "E1"], headers: ["X-Device-Id": "phone"])
            #expect(confirmed.string("status") == "SUCCESS")
            #expect(try await status()["ready"] as? Int == 0, "a confirmation does not re-enroll")
            #expect(try await stack.faceLogin(token, device: "phone", photo: "obama.jpg").string("status") == "SUCCESS")
            var ready = 0
            for _ in 0..<40 where ready == 0 {
                try await Task.sleep(for: .milliseconds(250))
                ready = try await status()["ready"] as? Int ?? 0
            }
            #expect(ready == 1)
            let pending = try await status()["notReady"] as? [[String: Any]]
            #expect(pending?.map { $0["userId"] as? String } == [biden])
            let faces = try await stack.call("GET", "/v1/apps/\(app.id)/users/\(obama)/faces", bearer: stack.adminKey)
            #expect(Set((faces.json["items"] as? [[String: Any]] ?? []).compactMap { $0["model"] as? String }) == ["dlib-resnet-v1", "sface-2021dec"])
            // The template is stored (ready) when the matcher has it; the gateway records face.migrate when the reply is in.
            var migrated: String?
            for _ in 0..<40 where migrated == nil {
                let trail = try await stack.call("GET", "/v1/audit/transactions?appId=\(app.id)&kind=face.migrate", bearer: stack.adminKey)
                migrated = (trail.json["items"] as? [[String: Any]])?.first?["outcome"] as? String
                if migrated == nil { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(migrated == "SUCCESS")

            // The switch: one step; the app then runs on SFace with SFace's default threshold.
            let switched = try await stack.call("POST", "/v1/apps/\(app.id)/face-model-migration", bearer: stack.adminKey, json: ["to": "sface-2021dec"])
            #expect(switched.status == 200, "\(switched.json)")
            #expect((switched.json["app"] as? [String: Any])?["faceModel"] as? String == "sface-2021dec")
            #expect((switched.json["notReady"] as? [[String: Any]])?.count == 1)
            #expect(try await stack.call("POST", "/v1/apps/\(app.id)/face-model-migration", bearer: stack.adminKey,
                                         json: ["to": "sface-2021dec"]).status == 409)
            try await Task.sleep(for: .seconds(6))  // the matcher re-reads an app's model after 5 s
            let after = try await stack.faceLogin(token, device: "phone", photo: "obama2.jpg")
            #expect(after.string("status") == "SUCCESS", "\(after.json)")
            #expect(after.string("userId") == obama)
            let notMigrated = try await stack.faceLogin(token, device: "biden-phone", photo: "biden.jpg")
            #expect(notMigrated.errorCode == "NO_MATCH_FACE", "a user without an SFace template must enroll again")
        }
    }

    /// An app that keeps enrollment photos (with each person's consent) moves to SFace at once: the matcher re-embeds
    /// the kept photos, the users without one are listed, the gateway can never read a photo, and erasing the user
    /// erases it.
    @Test func keptEnrollmentPhotosMoveADlibAppAtOnce() async throws {
        try await TestStack.with { stack in
            let app = try await stack.createApp(extra: ["faceModel": "dlib-resnet-v1", "keepEnrollmentPhotos": true])
            let obama = try await stack.createUser(app, employeeNumber: "E1", name: "Barack Obama")
            let biden = try await stack.createUser(app, employeeNumber: "E2", name: "Joe Biden")
            func enroll(_ user: String, _ photo: String, consent: String?) async throws -> TestStack.Reply {
                try await stack.call("POST", "/v1/apps/\(app.id)/users/\(user)/faces" + (consent.map { "?photoConsent=\($0)" } ?? ""),
                                     bearer: stack.adminKey, body: try TestEnvironment.image(photo), contentType: "image/jpeg")
            }
            #expect(try await enroll(obama, "obama.jpg", consent: "yes").errorCode == "INVALID_REQUEST")
            let kept = try await enroll(obama, "obama.jpg", consent: "true")
            #expect(kept.status == 201)
            #expect(kept.json["photoKept"] as? Bool == true)
            #expect(try await enroll(biden, "biden.jpg", consent: nil).json["photoKept"] as? Bool == false, "no consent, no photo")

            // Sealed at rest and bound to its template; the gateway's login cannot read the photo column at all.
            let rows = try await stack.database.pool.query("SELECT template_id, user_id, photo_sealed FROM enrollment_photos WHERE app_id = \(UUID(uuidString: app.id)!)")
            #expect(rows.rows.count == 1)
            let sealed = try #require(try rows.first?.decode("photo_sealed", as: [UInt8].self))
            #expect(!sealed.starts(with: [0xFF, 0xD8]), "not the JPEG itself")
            #expect(try rows.first?.decode("template_id", as: UUID.self).wire == kept.string("templateId"))
            let gateway = PostgresPool(configuration: try PostgresConfiguration(url: stack.database.url(for: "auth-gateway")))
            await #expect(throws: PostgresError.self) {
                _ = try await Tenant.acrossApps { try await gateway.query("SELECT photo_sealed FROM enrollment_photos") }
            }
            await gateway.close()

            let status = try await stack.call("GET", "/v1/apps/\(app.id)/face-model-migration", bearer: stack.adminKey).json
            #expect(status["keptPhotos"] as? Int == 1)
            let pending = status["notReady"] as? [[String: Any]] ?? []
            #expect(pending.map { $0["employeeNumber"] as? String } == ["E1", "E2"])
            #expect(pending.map { $0["keptPhoto"] as? Bool } == [true, false])

            // Re-embedded at once: E1 is ready without logging in, E2 still needs a new enrollment.
            let reembedded = try await stack.call("POST", "/v1/apps/\(app.id)/face-model-migration/re-embed", bearer: stack.adminKey, json: [:])
            #expect(reembedded.status == 200, "\(reembedded.json)")
            #expect(reembedded.json["reembedded"] as? Int == 1)
            #expect((reembedded.json["refused"] as? [Any])?.isEmpty == true)
            #expect(reembedded.json["next"] == nil || reembedded.json["next"] is NSNull)
            let after = reembedded.json["status"] as? [String: Any] ?? [:]
            #expect(after["ready"] as? Int == 1)
            #expect((after["notReady"] as? [[String: Any]])?.map { $0["userId"] as? String } == [biden])
            let again = try await stack.call("POST", "/v1/apps/\(app.id)/face-model-migration/re-embed", bearer: stack.adminKey, json: [:])
            #expect(again.json["reembedded"] as? Int == 0, "a user once ready is not re-embedded again")

            // After the switch the re-embedded template finds E1 from another photo, on SFace.
            #expect(try await stack.call("POST", "/v1/apps/\(app.id)/face-model-migration", bearer: stack.adminKey,
                                         json: ["to": "sface-2021dec"]).status == 200)
            #expect(try await stack.call("POST", "/v1/apps/\(app.id)/face-model-migration/re-embed", bearer: stack.adminKey,
                                         json: [:]).status == 409, "nothing to move to any more")
            try await Task.sleep(for: .seconds(6))  // the matcher re-reads an app's model after 5 s
            let searched = try await stack.call("POST", "/v1/apps/\(app.id)/faces/search", bearer: stack.adminKey,
                                                body: try TestEnvironment.image("obama2.jpg"), contentType: "image/jpeg")
            #expect(searched.string("outcome") == "MATCH", "\(searched.json)")
            #expect((searched.json["match"] as? [String: Any])?["employeeNumber"] as? String == "E1")

            // Erasing the person erases the kept photo.
            #expect(try await stack.call("DELETE", "/v1/apps/\(app.id)/users/\(obama)", bearer: stack.adminKey).status == 204)
            #expect(try await stack.database.pool.query("SELECT 1 FROM enrollment_photos WHERE app_id = \(UUID(uuidString: app.id)!)").rows.isEmpty)
        }
    }

    /// Templates made by one model are never compared with another model's probe: when an app's model
    /// changes, the old templates stop matching (until re-enrolled) instead of matching by accident.
    @Test func templatesOfAnotherModelAreNeverCompared() async throws {
        try await TestStack.with { stack in
            let app = try await stack.createApp(extra: ["faceModel": "dlib-resnet-v1"])
            let user = try await stack.createUser(app, employeeNumber: "M2", name: "Barack Obama")
            #expect(try await stack.enroll(app, user: user, photo: "obama.jpg").status == 201)
            let token = try await stack.accessToken(app)
            #expect(try await stack.faceLogin(token, device: "phone", photo: "obama2.jpg").string("status") == "CONFIRM_REQUIRED")

            _ = try await stack.database.pool.query("UPDATE apps SET face_model = 'sface-2021dec', match_threshold = 1.0 WHERE id = \(UUID(uuidString: app.id)!)")
            try await Task.sleep(for: .seconds(6))  // the matcher re-reads an app's model after 5 s
            let after = try await stack.faceLogin(token, device: "phone", photo: "obama2.jpg")
            #expect(after.errorCode == "NO_MATCH_FACE", "\(String(decoding: after.body, as: UTF8.self))")
            // Enrolled again under the new model, the person logs in again.
            #expect(try await stack.enroll(app, user: user, photo: "obama.jpg").status == 201)
            #expect(try await stack.faceLogin(token, device: "phone", photo: "obama2.jpg").string("status") == "CONFIRM_REQUIRED")
        }
    }

    /// A photo with a small face in the background enrolls its dominant person; two faces of about the
    /// same size are refused, since nobody can tell whose photo it is.
    @Test func enrollmentTakesTheDominantFace() async throws {
        try await TestStack.with { stack in
            let app = try await stack.createApp(extra: ["faceModel": "sface-2021dec"])
            let user = try await stack.createUser(app, employeeNumber: "M3", name: "Barack Obama")
            let directory = try TestEnvironment.value("FACEGATE_TEST_IMAGES")
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("dominant-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: scratch) }
            let group = scratch.appendingPathComponent("group.jpg").path, pair = scratch.appendingPathComponent("pair.jpg").path
            try IDCard.runConvert([directory + "/obama.jpg", "(", directory + "/biden.jpg", "-resize", "25%", ")",
                                   "-background", "white", "-gravity", "north", "+append", group])
            try IDCard.runConvert([directory + "/obama.jpg", directory + "/biden.jpg", "-background", "white", "+append", pair])

            let pairReply = try await stack.call("POST", "/v1/apps/\(app.id)/users/\(user)/faces", bearer: stack.adminKey,
                                                 body: try Data(contentsOf: URL(fileURLWithPath: pair)), contentType: "image/jpeg")
            #expect(pairReply.errorCode == "LOW_QUALITY", "\(String(decoding: pairReply.body, as: UTF8.self))")
            let groupReply = try await stack.call("POST", "/v1/apps/\(app.id)/users/\(user)/faces", bearer: stack.adminKey,
                                                  body: try Data(contentsOf: URL(fileURLWithPath: group)), contentType: "image/jpeg")
            #expect(groupReply.status == 201, "\(String(decoding: groupReply.body, as: UTF8.self))")
            let token = try await stack.accessToken(app)
            #expect(try await stack.faceLogin(token, device: "phone", photo: "obama2.jpg").string("status") == "CONFIRM_REQUIRED")
            #expect(try await stack.faceLogin(token, device: "phone", photo: "biden.jpg").errorCode == "NO_MATCH_FACE",
                    "the background face was not enrolled")
        }
    }
}
