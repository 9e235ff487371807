import FaceGateCore
import Foundation

/// The OpenAPI 3.1 description served at `/openapi.json`, generated from the route table: each route's declaration
/// (`RouteDocumentation`) gives its operation, parameters, body and answers; its caller's proof gives its security, header
/// parameters and refusals; the contract types give the schemas (`SchemaRecorder`). A route cannot be served undocumented,
/// and a field added to a contract type is documented with it. Tests/openapi generates a client from it and logs in
/// through that.
///
/// Conventions kept for client generators: every operation has an `operationId`, a tag and a response for every status
/// it answers (errors through `components/responses`); bodies are named schemas; a field the server leaves out when
/// empty is optional.
enum OpenAPIDocument {
    static let version = "1.1.0"

    /// The document for `routes`, its server `serverURL`: `FACEGATE_PUBLIC_URL`, or `/` (relative to where the document
    /// was read). Throws on a declaration the document cannot describe (a test generates it).
    static func generate(_ routes: [RouteDeclaration], serverURL: String) throws -> DocumentValue {
        let recorder = SchemaRecorder()
        var paths: [(String, DocumentValue)] = []
        var operationIds = Set<String>()
        for route in routes {
            let documentation = route.documentation
            guard operationIds.insert(documentation.operationId).inserted else {
                throw DocumentError(description: "two routes are operation \(documentation.operationId)")
            }
            let operation = try self.operation(route, recorder: recorder)
            if let index = paths.firstIndex(where: { $0.0 == route.pattern }) {
                paths[index].1[route.method.lowercased()] = operation
            } else {
                var item: DocumentValue = [:]
                let parameters = pathParameters(route.pattern)
                if !parameters.isEmpty { item["parameters"] = .array(parameters) }
                item[route.method.lowercased()] = operation
                paths.append((route.pattern, item))
            }
        }
        var schemas = sharedSchemas
        for (name, schema) in recorder.components {
            guard schemas[name] == nil else { throw DocumentError(description: "a contract type takes the shared schema name \(name)") }
            schemas[name] = schema
        }
        return [
            "openapi": "3.1.0",
            "info": [
                "title": "FaceGate API",
                "version": .string(version),
                "description": "Face login, identity tokens, CTID, kiosk, operator and auditor API. JSON field names are camelCase; times are RFC 3339 UTC. Every error is {\"error\": {\"code\", \"message\", \"transactionId\"?}} with a code from ErrorCode; transactionId is there when the call was recorded in the transaction log.",
            ],
            "servers": [["url": .string(serverURL)]],
            "tags": .array(APITag.allCases.map { ["name": .string($0.rawValue), "description": .string($0.description)] }),
            "components": [
                "securitySchemes": securitySchemes,
                "parameters": parameters,
                "headers": headers,
                "responses": responses,
                "schemas": schemas,
            ],
            "paths": .object(paths),
        ]
    }

    private static func operation(_ route: RouteDeclaration, recorder: SchemaRecorder) throws -> DocumentValue {
        let documentation = route.documentation
        var operation: DocumentValue = [
            "operationId": .string(documentation.operationId),
            "tags": [.string(documentation.tag.rawValue)],
            "summary": .string(documentation.summary),
            "security": .array(documentation.caller.security.map { alternative in
                .object(alternative.map { ($0.rawValue, []) })
            }),
        ]
        var parameters = documentation.caller.headers.map(reference(parameter:))
        if documentation.idempotent { parameters.append(reference(parameter: "idempotencyKey")) }
        for query in documentation.parameters {
            if let component = query.component {
                parameters.append(reference(parameter: component))
                continue
            }
            var parameter: DocumentValue = ["name": .string(query.name), "in": .string(query.location.rawValue)]
            if query.required { parameter["required"] = true }
            parameter["schema"] = query.schema
            if let description = query.description { parameter["description"] = .string(description) }
            parameters.append(parameter)
        }
        if !parameters.isEmpty { operation["parameters"] = .array(parameters) }
        switch documentation.body {
        case .none: break
        case .json(let type, let required):
            operation["requestBody"] = ["required": .bool(required), "content": ["application/json": ["schema": try recorder.schema(type)]]]
        case .document(let type):
            operation["requestBody"] = ["required": true, "content": ["application/json": ["schema": try recorder.schema(type)]]]
        case .upload(let form):
            operation["requestBody"] = ["required": true, "content": [
                "image/jpeg": ["schema": ["type": "string", "contentMediaType": "image/jpeg"]],
                "image/png": ["schema": ["type": "string", "contentMediaType": "image/png"]],
                "multipart/form-data": ["schema": try recorder.schema(form)],
            ]]
        }
        var answers: [(String, DocumentValue)] = []
        for answer in documentation.answers {
            var response: DocumentValue = ["description": .string(answer.description)]
            if documentation.idempotent, answer.status < 300 {
                response["headers"] = ["Idempotent-Replayed": ["$ref": "#/components/headers/IdempotentReplayed"]]
            }
            if let type = answer.type {
                response["content"] = ["application/json": ["schema": try recorder.schema(type)]]
            } else if !answer.media.isEmpty {
                response["content"] = .object(answer.media.map { ($0.0, ["schema": $0.1]) })
            }
            answers.append((String(answer.status), response))
        }
        for (status, refusal) in refusals(route) {
            answers.append((String(status), refusal))
        }
        answers.append(("default", ["$ref": "#/components/responses/Unexpected"]))
        operation["responses"] = .object(answers)
        return operation
    }

    /// The route's refusals (`RouteDocumentation.refusals`) by status, each a shared response that names the codes and
    /// causes beyond its own.
    private static func refusals(_ route: RouteDeclaration) -> [(Int, DocumentValue)] {
        let documentation = route.documentation
        var because = documentation.caller.because.merging(documentation.because) { $1 }
        if documentation.idempotent {
            because[.conflict] = [because[.conflict], "another request under this Idempotency-Key"].compactMap { $0 }.joined(separator: ", or ")
        }
        let codes = documentation.refusals
        var byStatus: [Int: [ErrorCode]] = [:]
        for code in codes where code.httpStatus != 500 { byStatus[code.httpStatus, default: []].append(code) }
        if case .upload = documentation.body { byStatus[415] = [] }
        return byStatus.keys.sorted().compactMap { status in
            guard let name = responseNames[status] else { return nil }
            var refusal: DocumentValue = ["$ref": .string("#/components/responses/" + name)]
            let atStatus = byStatus[status] ?? []
            let noted = atStatus.contains { because[$0] != nil }
            // The status's own code without a cause is what the shared response already says.
            if noted || atStatus.count > 1 || atStatus.first.map({ $0 != primaryCodes[status] }) == true {
                let described = atStatus.map { code in
                    guard let note = because[code] else { return code.rawValue }
                    return atStatus.count == 1 ? "\(code.rawValue): \(note)" : "\(code.rawValue) (\(note))"
                }
                if !described.isEmpty { refusal["description"] = .string(described.joined(separator: ", ")) }
            }
            return (status, refusal)
        }
    }

    /// The code each shared error response is named for.
    private static let primaryCodes: [Int: ErrorCode] = [400: .invalidRequest, 401: .unauthorized, 403: .forbidden, 404: .notFound, 409: .conflict,
                                                         410: .sessionExpired, 413: .payloadTooLarge, 423: .credentialLocked, 429: .rateLimited,
                                                         503: .serviceUnavailable]

    private static let responseNames = [400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
                                        410: "Gone", 413: "PayloadTooLarge", 415: "UnsupportedMediaType", 422: "Unprocessable",
                                        423: "Locked", 429: "RateLimited", 503: "ServiceUnavailable"]

    /// The path's `{name}` parameters, as references to `components/parameters` (a device id in a path is `deviceIdPath`).
    private static func pathParameters(_ pattern: String) -> [DocumentValue] {
        pattern.split(separator: "/").compactMap { segment -> DocumentValue? in
            guard segment.hasPrefix("{"), segment.hasSuffix("}") else { return nil }
            let name = String(segment.dropFirst().dropLast())
            if name == "deviceId" { return reference(parameter: "deviceIdPath") }
            if parameters[name] != nil { return reference(parameter: name) }
            return ["name": .string(name), "in": "path", "required": true, "schema": ["type": "string", "pattern": "^[A-Za-z0-9_-][A-Za-z0-9._-]*$"]]
        }
    }

    private static func reference(parameter name: String) -> DocumentValue { ["$ref": .string("#/components/parameters/" + name)] }

    /// Every kind of transaction the services record (a test reads their sources for any kind not listed).
    static let transactionKinds = [
        "app.create", "app.update", "app.delete", "app.secret.rotate", "app.secret.revoke-previous", "app.face-model.switch",
        "operator-key.create", "operator-key.revoke", "auditor-key.create", "auditor-key.revoke", "auth.refused", "user.create",
        "user.delete", "user.reset", "face.enroll", "face.delete", "face.search", "face.migrate",
        "face.migrate.re-embed", "face.login", "face.login.confirm", "face.verify", "identity.exchange", "liveness.challenge.refused",
        "device.binding.ticket", "device.register", "device.challenge", "device.assert", "device.revoke", "device.reset",
        "device.credential.reset", "ctid.verify", "kiosk.register", "kiosk.revoke", "kiosk.login", "kiosk.refused",
        "kiosk.flow", "kiosk.onboarding",
    ]

    /// The schemas no contract type stands for: the error envelope (every code the server sends: `ErrorCode`, and the
    /// HTTP server's own two), the audit trail's vocabularies, device-credential policies.
    private static var sharedSchemas: DocumentValue {
        [
            "ErrorCode": [
                "type": "string",
                "description": "Every code the server sends. CONFIRM_REQUIRED and TIMEOUT appear as transaction outcomes and matcher answers; TIMEOUT reaches a client as SERVICE_UNAVAILABLE.",
                "enum": .array((ErrorCode.allCases.map(\.rawValue) + ["METHOD_NOT_ALLOWED", "UNSUPPORTED_MEDIA_TYPE"]).map { .string($0) }),
            ],
            "ErrorBody": [
                "type": "object",
                "required": ["code", "message"],
                "properties": [
                    "code": ["$ref": "#/components/schemas/ErrorCode"],
                    "message": ["type": "string"],
                    "transactionId": ["type": "string", "format": "uuid", "description": "The call's transaction, when it was recorded"],
                    "reason": [
                        "type": "string",
                        "enum": ["AMBIGUOUS_SUBJECT", "NO_FACE_IN_BOX"],
                        "description": "With LOW_QUALITY for a photo of several faces: none is clearly its subject (enrollment and an operator's search: no face leads the others on size, sharpness, detector confidence and position; face login and verify: another face is at least 80 % as wide as the largest), or no detected face overlaps the faceBox given",
                    ],
                    "faces": [
                        "type": "array",
                        "items": ["$ref": "#/components/schemas/FaceRegion"],
                        "description": "With reason: every face seen, largest first; send one back as faceBox to enroll it",
                    ],
                ],
            ],
            "FaceRegion": [
                "type": "object",
                "required": ["x", "y", "width", "height"],
                "description": "A face's box in pixels of the upright photo",
                "properties": ["x": ["type": "integer"], "y": ["type": "integer"], "width": ["type": "integer"], "height": ["type": "integer"]],
            ],
            "Error": ["type": "object", "required": ["error"], "properties": ["error": ["$ref": "#/components/schemas/ErrorBody"]]],
            "TransactionKind": [
                "type": "string",
                "description": "What was done. Platform rows (app.create, keys, refusals naming no existing app, their summaries) are on the platform chain (appId 00000000-0000-0000-0000-000000000000); app.delete is the last row of the deleted app's own chain",
                "enum": .array(transactionKinds.map { .string($0) }),
            ],
            "TransactionOutcome": [
                "type": "string",
                "description": "SUCCESS; REPEATED on an auth.refused summary of repeated refusals; else the ErrorCode the call ended with",
                "enum": .array((["SUCCESS", "REPEATED"] + ErrorCode.allCases.map(\.rawValue) + ["METHOD_NOT_ALLOWED", "UNSUPPORTED_MEDIA_TYPE"]).map { .string($0) }),
            ],
            "TransactionChange": [
                "type": "object",
                "description": "Each changed setting as [old, new], e.g. {\"matchThreshold\": [1.0, 0.95]}, modules one by one (modules.ctid); never a secret or a photo",
                "additionalProperties": ["type": "array", "items": [:], "minItems": 2, "maxItems": 2],
            ],
            "DeviceCredentialPolicy": ["type": "string", "enum": .array(DeviceCredentialPolicy.known.map { .string($0.rawValue) })],
        ]
    }

    static let securitySchemes: DocumentValue = [
        "operatorKey": [
            "type": "http",
            "scheme": "bearer",
            "description": "Operator key: the bootstrap key (FACEGATE_ADMIN_KEY) or one from POST /v1/operator-keys. A key limited to some apps gets 403 FORBIDDEN outside them, on app creation and on key management; an expired or revoked key gets 401 UNAUTHORIZED.",
        ],
        "auditorKey": [
            "type": "http",
            "scheme": "bearer",
            "description": "Auditor key from POST /v1/auditors (an operator key works too); limited to its apps when created with appIds. Expired or revoked: 401 UNAUTHORIZED.",
        ],
        "appServer": [
            "type": "http",
            "scheme": "basic",
            "description": "The app server: appId:appSecret (the previous secret also works during its grace period after a rotation)",
        ],
        "accessToken": [
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "Client app: access token from POST /v1/access-tokens (EdDSA JWT). The device is proven by the DPoP header on apps with deviceBinding dpop, or named by X-Device-Id on apps with deviceBinding header.",
        ],
        "deviceProof": [
            "type": "apiKey",
            "in": "header",
            "name": "DPoP",
            "description": "RFC 9449 proof of the device's P-256 key, one per request (also declared as the DPoP header parameter for client generators): a JWS with header {typ: dpop+jwt, alg: ES256, jwk: the public key} and claims {jti (unique), htm (the method), htu (FACEGATE_PUBLIC_URL + the path, no query), iat (within 60 s), ath: base64url(SHA-256(the access token)), dgst: base64url(SHA-256(the exact body bytes)) on a request with a body}. The signature is r‖s (64 bytes), not DER. The device is the key's RFC 7638 thumbprint. Required together with the access token on apps with deviceBinding dpop (the default) and on every kiosk call; apps with deviceBinding header use the access token alone. Client/python/facegate_dpop.py signs proofs in 60 lines.",
        ],
        "interviewToken": [
            "type": "apiKey",
            "in": "header",
            "name": "X-Interview-Token",
            "description": "The token issued with a kiosk session (also declared as a header parameter for client generators)",
        ],
    ]

    static let parameters: DocumentValue = [
        "appId": ["name": "appId", "in": "path", "required": true, "schema": ["type": "string", "format": "uuid"]],
        "userId": ["name": "userId", "in": "path", "required": true, "schema": ["type": "string", "format": "uuid"]],
        "templateId": ["name": "templateId", "in": "path", "required": true, "schema": ["type": "string", "format": "uuid"]],
        "credentialId": ["name": "credentialId", "in": "path", "required": true, "schema": ["type": "string", "format": "uuid"]],
        "interviewId": ["name": "interviewId", "in": "path", "required": true, "schema": ["type": "string", "format": "uuid"]],
        "operatorKeyId": ["name": "operatorKeyId", "in": "path", "required": true, "schema": ["type": "string", "format": "uuid"]],
        "auditorId": ["name": "auditorId", "in": "path", "required": true, "schema": ["type": "string", "format": "uuid"]],
        "deviceIdPath": ["name": "deviceId", "in": "path", "required": true, "schema": ["type": "string", "minLength": 1, "maxLength": 128]],
        "kioskId": ["name": "kioskId", "in": "path", "required": true, "schema": ["type": "string", "format": "uuid"]],
        "deviceId": [
            "name": "X-Device-Id",
            "in": "header",
            "schema": ["type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[!-~]+$"],
            "description": "1–128 printable ASCII. Required on apps with deviceBinding header (it is the device); on apps with deviceBinding dpop only a label",
        ],
        "dpop": [
            "name": "DPoP",
            "in": "header",
            "schema": ["type": "string"],
            "description": "RFC 9449 proof (typ dpop+jwt, ES256, P-256 jwk; claims htm, htu, iat, jti, ath = base64url(SHA-256(access token)), dgst = base64url(SHA-256(body)) when there is a body). Required on apps with deviceBinding dpop: the device is its key's RFC 7638 thumbprint; each proof is single use",
        ],
        "idempotencyKey": [
            "name": "Idempotency-Key",
            "in": "header",
            "schema": ["type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"],
            "description": "1–255 printable ASCII, per caller credential. The same key with the same request within 24 h answers the first answer again (same status and body, header Idempotent-Replayed: true; 2xx and 4xx answers except 401, 403 and 429 are kept, 5xx are not); the same key with another request is 409 CONFLICT; while the first request still runs, 409 IDEMPOTENCY_IN_PROGRESS",
        ],
        "interviewToken": [
            "name": "X-Interview-Token",
            "in": "header",
            "required": true,
            "schema": ["type": "string"],
            "description": "The token issued with the kiosk session",
        ],
        "cursor": ["name": "cursor", "in": "query", "schema": ["type": "string"], "description": "nextCursor of the previous page"],
    ]

    static let headers: DocumentValue = [
        "RetryAfter": ["description": "Seconds to wait before trying again", "schema": ["type": "integer", "minimum": 0]],
        "WWWAuthenticate": ["description": "Bearer, or DPoP algs=\"ES256\", error=\"invalid_dpop_proof\"", "schema": ["type": "string"]],
        "IdempotentReplayed": [
            "description": "true when this is the stored answer to an earlier request with the same Idempotency-Key",
            "schema": ["type": "string", "enum": ["true"]],
        ],
    ]

    static let responses: DocumentValue = [
        "BadRequest": [
            "description": "INVALID_REQUEST: malformed JSON or multipart, a missing or invalid field, parameter or header (the message names it)",
            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
        ],
        "Unauthorized": [
            "description": "UNAUTHORIZED (operator, auditor or app-server credential missing, wrong, expired or revoked), ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID",
            "headers": ["WWW-Authenticate": ["$ref": "#/components/headers/WWWAuthenticate"]],
            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
        ],
        "Forbidden": [
            "description": "FORBIDDEN (the credential does not cover this app or action), MODULE_DISABLED, MODULE_NOT_FORMAL (trial quota used up), KIOSK_NOT_REGISTERED (a kiosk route called without a DPoP proof by a registered, unrevoked kiosk key of the app, or from an address the kiosk is not pinned to)",
            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
        ],
        "NotFound": ["description": "NOT_FOUND", "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]]],
        "Conflict": [
            "description": "CONFLICT, IDEMPOTENCY_IN_PROGRESS",
            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
        ],
        "Gone": ["description": "SESSION_EXPIRED", "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]]],
        "PayloadTooLarge": [
            "description": "PAYLOAD_TOO_LARGE: the body exceeds the route's limit",
            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
        ],
        "UnsupportedMediaType": [
            "description": "UNSUPPORTED_MEDIA_TYPE: a multipart body that is not multipart/form-data",
            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
        ],
        "Unprocessable": [
            "description": "The request was understood but refused on its merits (codes per operation)",
            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
        ],
        "Locked": [
            "description": "CREDENTIAL_LOCKED: too many failed attempts; an operator reset unlocks",
            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
        ],
        "RateLimited": [
            "description": "RATE_LIMITED: too many failed attempts in a row; wait Retry-After seconds",
            "headers": ["Retry-After": ["$ref": "#/components/headers/RetryAfter"]],
            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
        ],
        "ServiceUnavailable": [
            "description": "SERVICE_UNAVAILABLE: a worker did not answer in time, the broker or the audit trail is unavailable, or the server is shutting down; try again",
            "headers": ["Retry-After": ["$ref": "#/components/headers/RetryAfter"]],
            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
        ],
        "Unexpected": [
            "description": "INTERNAL (500), METHOD_NOT_ALLOWED (405, with Allow), RATE_LIMITED (429 with Retry-After, on any route, once the client address exceeds FACEGATE_CLIENT_RATE; on search, app-server verify and enrollment once the credential exceeds FACEGATE_SERVER_CALL_RATE; on kiosk login once the kiosk exceeds FACEGATE_KIOSK_LOGIN_RATE), SERVICE_UNAVAILABLE (503 while shutting down or while PostgreSQL is unreachable)",
            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
        ],
    ]
}
