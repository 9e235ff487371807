@testable import AuthGateway
import FaceGateCore
import Foundation
import Testing

/// The OpenAPI document is generated: schemas from the contract types' decoders, operations from the routes'
/// declarations. (That it has an operation for exactly the served routes, on the real gateway: AuditTests; that a
/// third-party generator makes a working client of it: Tests/openapi.)
@Suite struct OpenAPIDocumentTests {
    struct Nested: Decodable, DocumentedSchema {
        var value: Double
    }

    struct Sample: Decodable, DocumentedSchema {
        var id: UUID
        var name: String?
        var tags: [String]
        var nested: Nested
        var model: FaceModel?
        var counts: [String: Int]
        var at: Date

        static let schemaNotes: [String: DocumentValue] = ["": ["description": "A sample"], "name": ["maxLength": 8]]
    }

    struct StaleNote: Decodable, DocumentedSchema {
        var kept: Int
        static let schemaNotes: [String: DocumentValue] = ["removed": ["description": "a field that is gone"]]
    }

    static func component(_ name: String, of recorder: SchemaRecorder) -> DocumentValue? {
        recorder.components.first { $0.0 == name }?.1
    }

    @Test func aTypesSchemaIsWhatItsDecoderAsksFor() throws {
        let recorder = SchemaRecorder()
        #expect(try recorder.schema(Sample.self) == ["$ref": "#/components/schemas/Sample"])
        let sample = try #require(Self.component("Sample", of: recorder))
        #expect(sample["required"] == ["id", "tags", "nested", "counts", "at"], "optionals are not required")
        #expect(sample["description"] == "A sample")
        let properties = try #require(sample["properties"])
        #expect(properties.keys == ["id", "name", "tags", "nested", "model", "counts", "at"])
        #expect(properties["id"] == ["type": "string", "format": "uuid"])
        #expect(properties["name"] == ["type": "string", "maxLength": 8])
        #expect(properties["tags"] == ["type": "array", "items": ["type": "string"]])
        #expect(properties["nested"] == ["$ref": "#/components/schemas/Nested"])
        #expect(properties["model"] == ["$ref": "#/components/schemas/FaceModel"])
        #expect(properties["counts"] == ["type": "object", "additionalProperties": ["type": "integer"]])
        #expect(properties["at"] == ["type": "string", "format": "date-time"])
        #expect(Self.component("Nested", of: recorder) == ["type": "object", "required": ["value"], "properties": ["value": ["type": "number"]]])
        #expect(Self.component("FaceModel", of: recorder)?["enum"] == .array(FaceModel.allCases.map { .string($0.rawValue) }))
    }

    @Test func aNoteOnAFieldTheTypeDoesNotHaveFailsTheDocument() {
        #expect(throws: DocumentError.self) { try SchemaRecorder().schema(StaleNote.self) }
    }

    @Test func anAnswerOfSeveralShapesIsOneOfThemByItsStatus() throws {
        let recorder = SchemaRecorder()
        _ = try recorder.schema(FaceLoginOutcome.self)
        let result = try #require(Self.component("FaceLoginResult", of: recorder))
        #expect(result["oneOf"] == [["$ref": "#/components/schemas/LoginSuccess"], ["$ref": "#/components/schemas/ConfirmRequired"]])
        #expect(result["discriminator"]?["mapping"]?["SUCCESS"] == "#/components/schemas/LoginSuccess")
        // `status` is only written, never read back: it is declared so.
        let success = try #require(Self.component("LoginSuccess", of: recorder))
        #expect(success["properties"]?["status"] == ["type": "string", "const": "SUCCESS"])
        #expect(success["required"].map { elementStrings($0) }?.contains("status") == true)
    }

    static func route(_ method: String, _ pattern: String, _ operationId: String, caller: CallerDocumentation = .appOperator,
                      body: RequestBody = .none, answers: [Answer] = [.noContent("Done")], errors: [ErrorCode] = [],
                      because: [ErrorCode: String] = [:], idempotent: Bool = false) -> RouteDeclaration {
        RouteDeclaration(method: method, pattern: pattern, documentation: RouteDocumentation(
            operationId: operationId, summary: "A route", tag: .faces, caller: caller, body: body, parameters: [], answers: answers,
            errors: errors, because: because, idempotent: idempotent), doors: [])
    }

    @Test func aRouteAnswersEveryRefusalOfItsCallerItselfAndItsKind() throws {
        let enroll = Self.route("POST", "/v1/apps/{appId}/users/{userId}/faces", "enroll", body: .upload(form: EnrollmentUpload.self),
                                answers: [.created(OperatorRoutes.Enrolled.self, "Enrolled")], errors: [.faceLimitReached, .noFace, .lowQuality],
                                because: [.lowQuality: "no face is clearly the subject"], idempotent: true)
        let document = try OpenAPIDocument.generate([enroll], serverURL: "https://faces.example")
        #expect(document["servers"] == [["url": "https://faces.example"]])
        let path = try #require(document["paths"]?["/v1/apps/{appId}/users/{userId}/faces"])
        #expect(path["parameters"] == [["$ref": "#/components/parameters/appId"], ["$ref": "#/components/parameters/userId"]])
        let operation = try #require(path["post"])
        #expect(operation["security"] == [["operatorKey": []]])
        #expect(operation["parameters"] == [["$ref": "#/components/parameters/idempotencyKey"]])
        #expect(operation["requestBody"]?["content"]?.keys == ["image/jpeg", "image/png", "multipart/form-data"])
        let responses = try #require(operation["responses"])
        #expect(responses.keys == ["201", "400", "401", "403", "404", "409", "413", "415", "422", "503", "default"])
        #expect(responses["201"]?["headers"]?["Idempotent-Replayed"] != nil)
        #expect(responses["201"]?["content"]?["application/json"]?["schema"] == ["$ref": "#/components/schemas/EnrolledFace"])
        // The status's own code alone is the shared answer; several codes, or a cause, are named.
        #expect(responses["404"] == ["$ref": "#/components/responses/NotFound"])
        #expect(responses["409"]?["description"] == "FACE_LIMIT_REACHED, CONFLICT (another request under this Idempotency-Key), IDEMPOTENCY_IN_PROGRESS")
        #expect(responses["422"]?["description"] == "NO_FACE, LOW_QUALITY (no face is clearly the subject)")
        let image = document["components"]?["schemas"]?["EnrollmentUpload"]?["properties"]?["image"]
        #expect(image?["type"] == "string" && image?["format"] == "binary")
    }

    @Test func aPublicBodilessRouteAnswersOnlyWhatItDeclares() throws {
        let route = Self.route("GET", "/.well-known/jwks.json", "jwks", caller: .public,
                               answers: [.ok(DiscoveryRoutes.JsonWebKeySet.self, "JWKS")])
        let operation = try #require(try OpenAPIDocument.generate([route], serverURL: "/")["paths"]?["/.well-known/jwks.json"]?["get"])
        #expect(operation["security"] == [])
        #expect(operation["responses"]?.keys == ["200", "default"])
    }

    @Test func twoRoutesCannotBeOneOperation() {
        let routes = [Self.route("GET", "/a", "same"), Self.route("GET", "/b", "same")]
        #expect(throws: DocumentError.self) { try OpenAPIDocument.generate(routes, serverURL: "/") }
    }

    /// The kinds are strings written where each call is recorded; the document lists them for auditors' tools.
    @Test func everyKindOfTransactionTheServicesRecordIsDocumented() throws {
        let services = GatewayArchitectureTests.sources.deletingLastPathComponent().deletingLastPathComponent()
        var recorded = Set<String>()
        let enumerator = try #require(FileManager.default.enumerator(at: services, includingPropertiesForKeys: nil))
        for case let file as URL in enumerator where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in text.matches(of: /kind: "([a-z][a-z.-]*)"/) { recorded.insert(String(match.1)) }
            for match in text.matches(of: /kind: "\\\(role\.rawValue\)-([a-z.-]+)"/) {
                recorded.formUnion(["operator", "auditor"].map { "\($0)-\(match.1)" })
            }
        }
        #expect(recorded.count > 30)
        #expect(recorded.subtracting(OpenAPIDocument.transactionKinds).isEmpty, "recorded but not documented")
        #expect(Set(OpenAPIDocument.transactionKinds).subtracting(recorded).isEmpty, "documented but recorded nowhere")
    }
}

private func elementStrings(_ value: DocumentValue) -> [String] {
    guard case .array(let items) = value else { return [] }
    return items.compactMap { if case .string(let text) = $0 { text } else { nil } }
}
