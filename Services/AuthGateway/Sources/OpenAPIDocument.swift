/// The OpenAPI 3.1 description served at `/openapi.json`. A test checks that its paths and methods
/// are exactly the routes the gateway serves; Tests/openapi generates a client from it and logs in through that.
///
/// Conventions kept for client generators: every operation has an `operationId`, tags and a response for every
/// status it answers (errors through `components/responses`); bodies are named schemas; a field the server
/// leaves out when empty is optional, a field it sends as null is nullable.
enum OpenAPIDocument {
    /// The document, its server `serverURL`: `FACEGATE_PUBLIC_URL`, or `/` (relative to where the document was read).
    static func json(serverURL: String) -> String {
        #"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "FaceGate API",
    "version": "1.1.0",
    "description": "Face login, identity tokens, CTID, kiosk, operator and auditor API. JSON field names are camelCase; times are RFC 3339 UTC. Every error is {\"error\": {\"code\", \"message\", \"transactionId\"?}} with a code from ErrorCode; transactionId is there when the call was recorded in the transaction log."
  },
  "servers": [{"url": "\#(serverURL)"}],
  "tags": [
    {"name": "apps", "description": "Apps: modules, thresholds, liveness and device-binding policy, secrets (operator)"},
    {"name": "users", "description": "Users of an app (operator)"},
    {"name": "faces", "description": "Face templates: enrollment, listing, deletion, 1:N search (operator or app server)"},
    {"name": "face-login", "description": "Face login, new-device confirmation and 1:1 verification (client app)"},
    {"name": "identity", "description": "Access tokens and identity-token exchange (app server)"},
    {"name": "device-credentials", "description": "Device biometric keys (module deviceAuth)"},
    {"name": "device-bindings", "description": "Tickets binding a new device key to a user"},
    {"name": "liveness", "description": "Active-liveness challenges"},
    {"name": "ctid", "description": "CTID identity verification"},
    {"name": "kiosk", "description": "Kiosk login and onboarding sessions"},
    {"name": "audit", "description": "Transaction log search, export and verification (auditor)"},
    {"name": "keys", "description": "Operator and auditor keys (operator key covering every app)"},
    {"name": "discovery", "description": "Public documents"},
    {"name": "console", "description": "The web console's static files"}
  ],
  "components": {
    "securitySchemes": {
      "operatorKey": {"type": "http", "scheme": "bearer", "description": "Operator key: the bootstrap key (FACEGATE_ADMIN_KEY) or one from POST /v1/operator-keys. A key limited to some apps gets 403 FORBIDDEN outside them, on app creation and on key management; an expired or revoked key gets 401 UNAUTHORIZED."},
      "auditorKey": {"type": "http", "scheme": "bearer", "description": "Auditor key from POST /v1/auditors (an operator key works too); limited to its apps when created with appIds. Expired or revoked: 401 UNAUTHORIZED."},
      "appServer": {"type": "http", "scheme": "basic", "description": "The app server: appId:appSecret (the previous secret also works during its grace period after a rotation)"},
      "accessToken": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "Client app: access token from POST /v1/access-tokens (EdDSA JWT). The device is proven by the DPoP header on apps with deviceBinding dpop, or named by X-Device-Id on apps with deviceBinding header."},
      "deviceProof": {"type": "apiKey", "in": "header", "name": "DPoP", "description": "RFC 9449 proof of the device's P-256 key, one per request (also declared as the DPoP header parameter for client generators): a JWS with header {typ: dpop+jwt, alg: ES256, jwk: the public key} and claims {jti (unique), htm (the method), htu (FACEGATE_PUBLIC_URL + the path, no query), iat (within 60 s), ath: base64url(SHA-256(the access token)), dgst: base64url(SHA-256(the exact body bytes)) on a request with a body}. The signature is r‖s (64 bytes), not DER. The device is the key's RFC 7638 thumbprint. Required together with the access token on apps with deviceBinding dpop (the default) and on every kiosk call; apps with deviceBinding header use the access token alone. Client/python/facegate_dpop.py signs proofs in 60 lines."},
      "interviewToken": {"type": "apiKey", "in": "header", "name": "X-Interview-Token", "description": "The token issued with a kiosk session (also declared as a header parameter for client generators)"}
    },
    "parameters": {
      "appId": {"name": "appId", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}},
      "userId": {"name": "userId", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}},
      "templateId": {"name": "templateId", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}},
      "credentialId": {"name": "credentialId", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}},
      "interviewId": {"name": "interviewId", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}},
      "operatorKeyId": {"name": "operatorKeyId", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}},
      "auditorId": {"name": "auditorId", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}},
      "deviceIdPath": {"name": "deviceId", "in": "path", "required": true, "schema": {"type": "string", "minLength": 1, "maxLength": 128}},
      "kioskId": {"name": "kioskId", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}},
      "deviceId": {"name": "X-Device-Id", "in": "header", "schema": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[!-~]+$"},
        "description": "1–128 printable ASCII. Required on apps with deviceBinding header (it is the device); on apps with deviceBinding dpop only a label"},
      "dpop": {"name": "DPoP", "in": "header", "schema": {"type": "string"},
        "description": "RFC 9449 proof (typ dpop+jwt, ES256, P-256 jwk; claims htm, htu, iat, jti, ath = base64url(SHA-256(access token)), dgst = base64url(SHA-256(body)) when there is a body). Required on apps with deviceBinding dpop: the device is its key's RFC 7638 thumbprint; each proof is single use"},
      "idempotencyKey": {"name": "Idempotency-Key", "in": "header", "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
        "description": "1–255 printable ASCII, per caller credential. The same key with the same request within 24 h answers the first answer again (same status and body, header Idempotent-Replayed: true; 2xx and 4xx answers except 401, 403 and 429 are kept, 5xx are not); the same key with another request is 409 CONFLICT; while the first request still runs, 409 IDEMPOTENCY_IN_PROGRESS"},
      "interviewToken": {"name": "X-Interview-Token", "in": "header", "required": true, "schema": {"type": "string"}, "description": "The token issued with the kiosk session"},
      "cursor": {"name": "cursor", "in": "query", "schema": {"type": "string"}, "description": "nextCursor of the previous page"}
    },
    "headers": {
      "RetryAfter": {"description": "Seconds to wait before trying again", "schema": {"type": "integer", "minimum": 0}},
      "WWWAuthenticate": {"description": "Bearer, or DPoP algs=\"ES256\", error=\"invalid_dpop_proof\"", "schema": {"type": "string"}},
      "IdempotentReplayed": {"description": "true when this is the stored answer to an earlier request with the same Idempotency-Key", "schema": {"type": "string", "enum": ["true"]}}
    },
    "responses": {
      "BadRequest": {"description": "INVALID_REQUEST: malformed JSON or multipart, a missing or invalid field, parameter or header (the message names it)",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "Unauthorized": {"description": "UNAUTHORIZED (operator, auditor or app-server credential missing, wrong, expired or revoked), ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID",
        "headers": {"WWW-Authenticate": {"$ref": "#/components/headers/WWWAuthenticate"}},
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "Forbidden": {"description": "FORBIDDEN (the credential does not cover this app or action), MODULE_DISABLED, MODULE_NOT_FORMAL (trial quota used up), KIOSK_NOT_REGISTERED (a kiosk route called without a DPoP proof by a registered, unrevoked kiosk key of the app, or from an address the kiosk is not pinned to)",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "NotFound": {"description": "NOT_FOUND", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "Conflict": {"description": "CONFLICT, IDEMPOTENCY_IN_PROGRESS", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "Gone": {"description": "SESSION_EXPIRED", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "PayloadTooLarge": {"description": "PAYLOAD_TOO_LARGE: the body exceeds the route's limit", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "UnsupportedMediaType": {"description": "UNSUPPORTED_MEDIA_TYPE: a multipart body that is not multipart/form-data", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "Unprocessable": {"description": "The request was understood but refused on its merits (codes per operation)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "Locked": {"description": "CREDENTIAL_LOCKED: too many failed attempts; an operator reset unlocks", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "RateLimited": {"description": "RATE_LIMITED: too many failed attempts in a row; wait Retry-After seconds",
        "headers": {"Retry-After": {"$ref": "#/components/headers/RetryAfter"}},
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "ServiceUnavailable": {"description": "SERVICE_UNAVAILABLE: a worker did not answer in time, the broker or the audit trail is unavailable, or the server is shutting down; try again",
        "headers": {"Retry-After": {"$ref": "#/components/headers/RetryAfter"}},
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "Unexpected": {"description": "INTERNAL (500), METHOD_NOT_ALLOWED (405, with Allow), RATE_LIMITED (429 with Retry-After, on any route, once the client address exceeds FACEGATE_CLIENT_RATE; on search, app-server verify and enrollment once the credential exceeds FACEGATE_SERVER_CALL_RATE; on kiosk login once the kiosk exceeds FACEGATE_KIOSK_LOGIN_RATE), SERVICE_UNAVAILABLE (503 while shutting down or while PostgreSQL is unreachable)",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    },
    "schemas": {
      "ErrorCode": {"type": "string", "description": "Every code the server sends. CONFIRM_REQUIRED and TIMEOUT appear as transaction outcomes and matcher answers; TIMEOUT reaches a client as SERVICE_UNAVAILABLE.",
        "enum": ["INVALID_REQUEST", "UNAUTHORIZED", "FORBIDDEN", "NOT_FOUND", "CONFLICT", "PAYLOAD_TOO_LARGE", "MODULE_DISABLED", "MODULE_NOT_FORMAL",
          "ACCESS_TOKEN_INVALID", "ACCESS_TOKEN_EXPIRED", "NO_FACE", "NO_MATCH_FACE", "IMAGE_FORMAT_ERROR", "CONFIRM_REQUIRED", "EMPLOYEE_NUMBER_MISMATCH",
          "SPOOF_DETECTED", "AMBIGUOUS_MATCH", "LOW_QUALITY", "DUPLICATE_FACE", "AUTHENTICATION_FAILED", "CREDENTIAL_LOCKED", "CREDENTIAL_NOT_ENROLLED",
          "RATE_LIMITED", "SERVICE_UNAVAILABLE", "TIMEOUT", "INVALID_ENVELOPE", "IDENTITY_TOKEN_INVALID", "IDENTITY_TOKEN_EXPIRED", "IDENTITY_TOKEN_USED",
          "CONFIRMATION_INVALID", "DOCUMENT_UNREADABLE", "DOCUMENT_EXPIRED", "DOCUMENT_INVALID", "DOCUMENT_ALREADY_REGISTERED", "NO_PORTRAIT", "FACE_MISMATCH",
          "SESSION_EXPIRED", "TOO_MANY_ATTEMPTS", "APPROVAL_DENIED", "DPOP_PROOF_INVALID", "BINDING_TICKET_INVALID", "KIOSK_NOT_REGISTERED", "FACE_LIMIT_REACHED",
          "IDEMPOTENCY_IN_PROGRESS", "INTERNAL", "METHOD_NOT_ALLOWED", "UNSUPPORTED_MEDIA_TYPE"]},
      "ErrorBody": {"type": "object", "required": ["code", "message"], "properties": {
        "code": {"$ref": "#/components/schemas/ErrorCode"}, "message": {"type": "string"},
        "transactionId": {"type": "string", "format": "uuid", "description": "The call's transaction, when it was recorded"},
        "reason": {"type": "string", "enum": ["AMBIGUOUS_SUBJECT", "NO_FACE_IN_BOX"], "description": "With LOW_QUALITY for a photo of several faces: none is clearly its subject (enrollment and an operator's search: no face leads the others on size, sharpness, detector confidence and position; face login and verify: another face is at least 80 % as wide as the largest), or no detected face overlaps the faceBox given"},
        "faces": {"type": "array", "items": {"$ref": "#/components/schemas/FaceRegion"}, "description": "With reason: every face seen, largest first; send one back as faceBox to enroll it"}}},
      "FaceRegion": {"type": "object", "required": ["x", "y", "width", "height"], "description": "A face's box in pixels of the upright photo",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}, "width": {"type": "integer"}, "height": {"type": "integer"}}},
      "Error": {"type": "object", "required": ["error"], "properties": {"error": {"$ref": "#/components/schemas/ErrorBody"}}},
      "ModuleState": {"type": "string", "enum": ["disabled", "trial", "formal"]},
      "LivenessMode": {"type": "string", "enum": ["off", "active"]},
      "Modules": {"type": "object", "required": ["faceLogin", "ctid", "kiosk", "deviceAuth"], "properties": {
        "faceLogin": {"$ref": "#/components/schemas/ModuleState"}, "ctid": {"$ref": "#/components/schemas/ModuleState"},
        "kiosk": {"$ref": "#/components/schemas/ModuleState"}, "deviceAuth": {"$ref": "#/components/schemas/ModuleState"}}},
      "ModulesChange": {"type": "object", "additionalProperties": false, "description": "Modules to change; absent ones keep their state (new apps: trial, kiosk disabled); a module name not listed here is refused with 400 INVALID_REQUEST", "properties": {
        "faceLogin": {"$ref": "#/components/schemas/ModuleState"}, "ctid": {"$ref": "#/components/schemas/ModuleState"},
        "kiosk": {"$ref": "#/components/schemas/ModuleState"}, "deviceAuth": {"$ref": "#/components/schemas/ModuleState"}}},
      "Liveness": {"type": "object", "required": ["faceLogin", "kiosk"], "description": "Defaults: faceLogin off, kiosk active", "properties": {
        "faceLogin": {"$ref": "#/components/schemas/LivenessMode"}, "kiosk": {"$ref": "#/components/schemas/LivenessMode"}}},
      "DeviceBinding": {"type": "string", "enum": ["dpop", "header"],
        "description": "dpop (default for new apps): devices are P-256 keys proven on every call (RFC 9449); header: the caller-chosen X-Device-Id, weaker (anyone who learns a device id can claim it)"},
      "DeviceBindingPolicy": {"type": "string", "enum": ["employeeNumber", "appServerTicket", "boundDevice"],
        "description": "What binds a new device key to a user after a face match on a dpop app: the employee number alone (weakest), plus a ticket from the app server (default), or plus a ticket from a bound device of the user (the app server's ticket binds only a first key)"},
      "FaceModel": {"type": "string", "enum": ["dlib-resnet-v1", "sface-2021dec"], "description": "The app's face model; new apps get sface-2021dec unless they name one"},
      "KioskApproval": {"type": "object", "description": "Extra rules for approving a new kiosk customer; absent fields add no rule", "properties": {
        "faceMatchThreshold": {"type": "number"}, "minimumAge": {"type": "integer"},
        "documentTypes": {"type": "array", "items": {"type": "string"}}, "issuingStates": {"type": "array", "items": {"type": "string"}}}},
      "Quotas": {"type": "object", "required": ["dailyCalls", "gallerySize"], "description": "Limits of the trial state (defaults: 1000 calls a day per module, 100 enrolled users)",
        "properties": {"dailyCalls": {"type": "integer", "minimum": 0}, "gallerySize": {"type": "integer", "minimum": 0}}},
      "NewApp": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 200}, "modules": {"$ref": "#/components/schemas/ModulesChange"},
        "faceModel": {"$ref": "#/components/schemas/FaceModel"},
        "matchThreshold": {"type": "number", "description": "In the face model's units (Euclidean distance); the model's default when absent"},
        "falseMatchRate": {"type": "number", "minimum": 1e-8, "maximum": 1e-3, "description": "Instead of matchThreshold: a per-comparison false-match rate target (e.g. 1e-5 for 1 in 100,000), turned into the model's threshold by its calibration table"},
        "falsePositiveIdentificationRate": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "description": "Instead of matchThreshold or falseMatchRate: the chance that the face of someone not enrolled is identified as someone, over forGallerySize templates (1 − (1 − FMR)^N, comparisons taken as independent), turned into the per-comparison rate and then the model's threshold; refused when that rate falls outside the calibration (1e-8 … 1e-3)"},
        "forGallerySize": {"type": "integer", "minimum": 1, "maximum": 100000000, "description": "With falsePositiveIdentificationRate: the templates it is for; the larger of the app's templates now and 1,000 when absent"},
        "liveness": {"$ref": "#/components/schemas/Liveness"}, "kioskApproval": {"$ref": "#/components/schemas/KioskApproval"},
        "deviceBinding": {"$ref": "#/components/schemas/DeviceBinding"}, "deviceBindingPolicy": {"$ref": "#/components/schemas/DeviceBindingPolicy"},
        "quotas": {"$ref": "#/components/schemas/Quotas"}, "keepEnrollmentPhotos": {"type": "boolean", "default": false, "description": "Keep each enrollment photo whose subject consented (photoConsent=true), sealed and bound to its template, so a move to another face model can re-embed it; erased with the template; never returned"}}},
      "AppChanges": {"type": "object", "properties": {
        "modules": {"$ref": "#/components/schemas/ModulesChange"}, "matchThreshold": {"type": "number"}, "falseMatchRate": {"type": "number", "minimum": 1e-8, "maximum": 1e-3, "description": "Instead of matchThreshold: a per-comparison false-match rate target (e.g. 1e-5 for 1 in 100,000), turned into the model's threshold by its calibration table"},
        "falsePositiveIdentificationRate": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "description": "Instead of matchThreshold or falseMatchRate: the chance that the face of someone not enrolled is identified as someone, over forGallerySize templates (1 − (1 − FMR)^N, comparisons taken as independent), turned into the per-comparison rate and then the model's threshold; refused when that rate falls outside the calibration (1e-8 … 1e-3)"},
        "forGallerySize": {"type": "integer", "minimum": 1, "maximum": 100000000, "description": "With falsePositiveIdentificationRate: the templates it is for; the larger of the app's templates now and 1,000 when absent"},
        "liveness": {"$ref": "#/components/schemas/Liveness"}, "kioskApproval": {"$ref": "#/components/schemas/KioskApproval"},
        "deviceBinding": {"$ref": "#/components/schemas/DeviceBinding"}, "deviceBindingPolicy": {"$ref": "#/components/schemas/DeviceBindingPolicy"},
        "quotas": {"$ref": "#/components/schemas/Quotas"}, "keepEnrollmentPhotos": {"type": "boolean", "description": "Turning it off keeps the photos already kept (they go with their templates)"}}},
      "App": {"type": "object", "required": ["appId", "name", "modules", "faceModel", "matchThreshold", "liveness", "deviceBinding", "deviceBindingPolicy", "kioskApproval", "quotas", "keepEnrollmentPhotos", "createdAt"], "properties": {
        "appId": {"type": "string", "format": "uuid"}, "name": {"type": "string"}, "modules": {"$ref": "#/components/schemas/Modules"},
        "faceModel": {"$ref": "#/components/schemas/FaceModel"},
        "matchThreshold": {"type": "number", "description": "Euclidean distance between the face model's vectors (sface-2021dec: unit vectors, cosine = 1 − d²/2)"},
        "estimatedFalseMatchRate": {"type": "number", "description": "The per-comparison false-match rate the threshold stands for by the model's calibration; absent beyond its table (1e-8 … 1e-3)"},
        "galleryTemplates": {"type": "integer", "minimum": 0, "description": "The app's templates of its face model, which a search compares a probe with (GET and PATCH of one app; absent from the list)"},
        "estimatedFalsePositiveIdentificationRate": {"type": "number", "description": "The chance that the face of someone not enrolled is identified as someone at the current gallery size: estimatedFalseMatchRate over galleryTemplates comparisons (1 − (1 − FMR)^N); absent where either is"},
        "liveness": {"$ref": "#/components/schemas/Liveness"},
        "deviceBinding": {"$ref": "#/components/schemas/DeviceBinding"}, "deviceBindingPolicy": {"$ref": "#/components/schemas/DeviceBindingPolicy"},
        "kioskApproval": {"$ref": "#/components/schemas/KioskApproval"}, "quotas": {"$ref": "#/components/schemas/Quotas"},
        "keepEnrollmentPhotos": {"type": "boolean", "description": "Keep each enrollment photo whose subject consented (photoConsent=true), sealed and bound to its template, so a move to another face model can re-embed it; erased with the template; never returned"},
        "createdAt": {"type": "string", "format": "date-time"}}},
      "CreatedApp": {"type": "object", "description": "The new app with its secrets, shown only here",
        "required": ["appId", "name", "appSecret", "ctidKey", "modules", "faceModel", "matchThreshold", "liveness", "deviceBinding", "deviceBindingPolicy", "kioskApproval", "quotas", "keepEnrollmentPhotos"], "properties": {
        "appId": {"type": "string", "format": "uuid"}, "name": {"type": "string"}, "appSecret": {"type": "string"},
        "ctidKey": {"type": "string", "contentEncoding": "base64", "description": "The CTID institution key, 16 bytes"},
        "modules": {"$ref": "#/components/schemas/Modules"}, "faceModel": {"$ref": "#/components/schemas/FaceModel"}, "matchThreshold": {"type": "number"}, "estimatedFalseMatchRate": {"type": "number", "description": "The per-comparison false-match rate the threshold stands for by the model's calibration; absent beyond its table (1e-8 … 1e-3)"},
        "liveness": {"$ref": "#/components/schemas/Liveness"},
        "deviceBinding": {"$ref": "#/components/schemas/DeviceBinding"}, "deviceBindingPolicy": {"$ref": "#/components/schemas/DeviceBindingPolicy"},
        "kioskApproval": {"$ref": "#/components/schemas/KioskApproval"}, "quotas": {"$ref": "#/components/schemas/Quotas"},
        "keepEnrollmentPhotos": {"type": "boolean"}}},
      "AppList": {"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/App"}}}},
      "NewKiosk": {"type": "object", "required": ["name", "jkt"], "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "jkt": {"type": "string", "minLength": 43, "maxLength": 43, "description": "RFC 7638 SHA-256 thumbprint (base64url) of the kiosk's P-256 DPoP key"},
        "allowedAddresses": {"type": "array", "minItems": 1, "maxItems": 32, "items": {"type": "string"}, "description": "Client addresses the kiosk may call from; absent: any"}}},
      "Kiosk": {"type": "object", "required": ["kioskId", "name", "jkt", "createdAt"], "properties": {
        "kioskId": {"type": "string", "format": "uuid"}, "name": {"type": "string"}, "jkt": {"type": "string"},
        "allowedAddresses": {"type": "array", "items": {"type": "string"}}, "createdAt": {"type": "string", "format": "date-time"},
        "revokedAt": {"type": "string", "format": "date-time"}}},
      "KioskList": {"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/Kiosk"}}}},
      "RotateSecret": {"type": "object", "properties": {
        "previousSecretValidFor": {"type": "integer", "minimum": 0, "maximum": 86400, "description": "Seconds the previous secret keeps minting access tokens and exchanging identity tokens (nothing else); 0 cuts it off now. Default FACEGATE_SECRET_GRACE_SECONDS (3600)"}}},
      "RotatedSecret": {"type": "object", "required": ["appId", "appSecret", "previousSecretValidForSeconds"], "properties": {
        "appId": {"type": "string", "format": "uuid"}, "appSecret": {"type": "string"}, "previousSecretValidForSeconds": {"type": "integer"}}},
      "MigrationPending": {"type": "object", "required": ["userId", "employeeNumber", "keptPhoto"], "properties": {"userId": {"type": "string", "format": "uuid"}, "employeeNumber": {"type": "string"},
        "keptPhoto": {"type": "boolean", "description": "The user has a kept enrollment photo: POST …/face-model-migration/re-embed makes the new template without them"}}},
      "FaceModelMigration": {"type": "object", "required": ["appId", "from", "to", "users", "ready", "readyShare", "keptPhotos", "notReady"], "properties": {
        "appId": {"type": "string", "format": "uuid"}, "from": {"$ref": "#/components/schemas/FaceModel"}, "to": {"$ref": "#/components/schemas/FaceModel"},
        "users": {"type": "integer", "description": "Users holding a template of the app's current model"},
        "ready": {"type": "integer", "description": "Of those, the users that also hold a template of the target model (enrolled, or re-enrolled at a confident login on a bound device)"},
        "readyShare": {"type": "number"}, "keptPhotos": {"type": "integer", "description": "Of the users not ready, those with a kept enrollment photo"},
        "notReady": {"type": "array", "maxItems": 1000, "items": {"$ref": "#/components/schemas/MigrationPending"}, "description": "Users who need a new enrollment before a switch, oldest first"}}},
      "FaceModelSwitch": {"type": "object", "required": ["to"], "properties": {"to": {"$ref": "#/components/schemas/FaceModel"},
        "matchThreshold": {"type": "number", "description": "In the new model's units (Euclidean distance); its default otherwise"}}},
      "FaceModelReembed": {"type": "object", "properties": {"to": {"$ref": "#/components/schemas/FaceModel"},
        "after": {"type": "string", "format": "uuid", "description": "The next of an earlier answer: continue after it"}}},
      "FaceModelReembedded": {"type": "object", "required": ["reembedded", "refused", "status"], "properties": {
        "reembedded": {"type": "integer", "description": "New templates of the target model made from kept photos in this call"},
        "refused": {"type": "array", "items": {"type": "object", "required": ["userId", "templateId", "error"], "properties": {
          "userId": {"type": "string", "format": "uuid"}, "templateId": {"type": "string", "format": "uuid", "description": "The template whose kept photo was refused"},
          "error": {"type": "string", "description": "NO_FACE, LOW_QUALITY, IMAGE_FORMAT_ERROR or INTERNAL"}, "message": {"type": "string"}}}},
        "next": {"type": "string", "format": "uuid", "description": "Present when the call ran out of time with photos left: send it as after"},
        "status": {"$ref": "#/components/schemas/FaceModelMigration"}}},
      "FaceModelSwitched": {"type": "object", "required": ["app", "users", "ready", "notReady"], "properties": {"app": {"$ref": "#/components/schemas/App"},
        "users": {"type": "integer"}, "ready": {"type": "integer"}, "notReady": {"type": "array", "items": {"$ref": "#/components/schemas/MigrationPending"}}}},
      "NewUser": {"type": "object", "required": ["employeeNumber", "name"], "properties": {
        "employeeNumber": {"type": "string", "minLength": 1, "maxLength": 64}, "name": {"type": "string", "minLength": 1, "maxLength": 200}}},
      "CreatedUser": {"type": "object", "required": ["userId", "employeeNumber", "name"], "properties": {
        "userId": {"type": "string", "format": "uuid"}, "employeeNumber": {"type": "string"}, "name": {"type": "string"}}},
      "User": {"type": "object", "required": ["userId", "employeeNumber", "name", "faces", "createdAt"], "properties": {
        "userId": {"type": "string", "format": "uuid"}, "employeeNumber": {"type": "string"}, "name": {"type": "string"},
        "faces": {"type": "integer", "description": "Enrolled templates"}, "createdAt": {"type": "string", "format": "date-time"}}},
      "UserPage": {"type": "object", "required": ["items"], "properties": {
        "items": {"type": "array", "items": {"$ref": "#/components/schemas/User"}}, "nextCursor": {"type": "string", "description": "Absent on the last page"}}},
      "ImageUpload": {"type": "object", "required": ["image"], "properties": {"image": {"type": "string", "format": "binary", "description": "JPEG or PNG"}}},
      "EnrollmentUpload": {"type": "object", "required": ["image"], "properties": {"image": {"type": "string", "format": "binary", "description": "JPEG or PNG"},
        "faceBox": {"type": "string", "pattern": "^[0-9]+,[0-9]+,[0-9]+,[0-9]+$", "description": "x,y,width,height: the face to enroll (as the faceBox query parameter)"}}},
      "Quality": {"type": "object", "required": ["faceWidth", "sharpness", "brightness", "yaw"], "properties": {
        "faceWidth": {"type": "integer"}, "sharpness": {"type": "number"}, "brightness": {"type": "number"}, "yaw": {"type": "number"}}},
      "EnrolledFace": {"type": "object", "required": ["templateId", "quality", "photoKept"], "properties": {
        "templateId": {"type": "string", "format": "uuid"}, "quality": {"$ref": "#/components/schemas/Quality"},
        "photoKept": {"type": "boolean", "description": "The photo is kept, sealed, for a later move to another face model (the app keeps enrollment photos and photoConsent=true)"},
        "faceBox": {"$ref": "#/components/schemas/FaceRegion", "description": "The face enrolled"},
        "otherFaces": {"type": "integer", "description": "How many other faces the photo showed"}}},
      "FaceTemplate": {"type": "object", "required": ["templateId", "model", "quality", "createdAt"], "properties": {
        "templateId": {"type": "string", "format": "uuid"}, "model": {"$ref": "#/components/schemas/FaceModel"},
        "quality": {"$ref": "#/components/schemas/Quality"}, "createdAt": {"type": "string", "format": "date-time"}}},
      "FaceTemplateList": {"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/FaceTemplate"}}}},
      "FaceSearchCandidate": {"type": "object", "required": ["userId", "employeeNumber", "score"], "properties": {
        "userId": {"type": "string", "format": "uuid"}, "employeeNumber": {"type": "string"},
        "score": {"type": "number", "description": "Euclidean distance in the model's units; lower is closer"}}},
      "FaceSearchResult": {"type": "object", "required": ["outcome", "model", "threshold", "transactionId"], "properties": {
        "outcome": {"type": "string", "enum": ["MATCH", "NO_MATCH_FACE", "AMBIGUOUS_MATCH"]},
        "match": {"description": "The decision at the app's operating point: the matched user when outcome is MATCH, else absent or null",
          "oneOf": [{"$ref": "#/components/schemas/FaceSearchCandidate"}, {"type": "null"}]},
        "model": {"$ref": "#/components/schemas/FaceModel"}, "threshold": {"type": "number"},
        "transactionId": {"type": "string", "format": "uuid"},
        "candidates": {"type": "array", "items": {"$ref": "#/components/schemas/FaceSearchCandidate"},
          "description": "Operators only (absent for the app server): the closest users, best first, at most limit"}}},
      "VerifyUpload": {"type": "object", "required": ["image"], "properties": {
        "image": {"type": "string", "format": "binary", "description": "JPEG or PNG"},
        "userId": {"type": "string", "format": "uuid"}, "employeeNumber": {"type": "string"}}},
      "FaceVerification": {"type": "object", "required": ["match", "transactionId"], "properties": {
        "match": {"type": "boolean", "description": "Whether the face is the claimed user's, at the app's threshold. A client naming an unknown user gets false"},
        "transactionId": {"type": "string", "format": "uuid"},
        "userId": {"type": "string", "format": "uuid", "description": "App server only"},
        "score": {"type": "number", "description": "App server only: Euclidean distance in the model's units, lower is closer"},
        "threshold": {"type": "number", "description": "App server only"},
        "model": {"$ref": "#/components/schemas/FaceModel"}}},
      "FaceLoginUpload": {"type": "object", "properties": {
        "image": {"type": "string", "format": "binary", "description": "JPEG or PNG; apps with liveness.faceLogin off"},
        "challengeId": {"type": "string", "description": "Apps with liveness.faceLogin active: from GET /v1/liveness/challenges"},
        "frame": {"type": "array", "minItems": 2, "maxItems": 12, "items": {"type": "string", "format": "binary"},
          "description": "Apps with liveness.faceLogin active: 2–12 JPEG/PNG frames in capture order doing the challenge's actions"}}},
      "LoginSuccess": {"type": "object", "required": ["status", "identityToken", "expiresIn", "transactionId", "userId"], "properties": {
        "status": {"type": "string", "const": "SUCCESS"}, "identityToken": {"type": "string", "description": "Single use, for POST /v1/identity/exchange"},
        "expiresIn": {"type": "integer"}, "transactionId": {"type": "string", "format": "uuid"}, "userId": {"type": "string", "format": "uuid"}}},
      "ConfirmRequired": {"type": "object", "required": ["status", "confirmationId", "transactionId", "expiresIn"], "properties": {
        "status": {"type": "string", "const": "CONFIRM_REQUIRED"}, "confirmationId": {"type": "string", "format": "uuid"},
        "transactionId": {"type": "string", "format": "uuid"}, "expiresIn": {"type": "integer"}}},
      "FaceLoginResult": {"oneOf": [{"$ref": "#/components/schemas/LoginSuccess"}, {"$ref": "#/components/schemas/ConfirmRequired"}],
        "discriminator": {"propertyName": "status", "mapping": {"SUCCESS": "#/components/schemas/LoginSuccess", "CONFIRM_REQUIRED": "#/components/schemas/ConfirmRequired"}}},
      "Confirmation": {"type": "object", "required": ["confirmationId", "employeeNumber"], "properties": {
        "confirmationId": {"type": "string", "format": "uuid"}, "employeeNumber": {"type": "string"},
        "bindingTicket": {"type": "string", "description": "Required on dpop apps whose deviceBindingPolicy is appServerTicket or boundDevice"}}},
      "AccessToken": {"type": "object", "required": ["accessToken", "tokenType", "expiresIn"], "properties": {
        "accessToken": {"type": "string"}, "tokenType": {"type": "string", "const": "Bearer"}, "expiresIn": {"type": "integer"}}},
      "IdentityTokenExchange": {"type": "object", "required": ["identityToken"], "properties": {"identityToken": {"type": "string"}}},
      "Identity": {"type": "object", "required": ["userId", "employeeNumber", "name", "appId", "deviceId", "method", "amr", "transactionId"], "properties": {
        "userId": {"type": "string", "format": "uuid"}, "employeeNumber": {"type": "string"}, "name": {"type": "string"},
        "appId": {"type": "string", "format": "uuid"}, "deviceId": {"type": "string"},
        "method": {"type": "string", "description": "How the user was verified: face, device_biometric, kiosk"},
        "amr": {"type": "array", "items": {"type": "string", "enum": ["face", "swk"]}, "description": "RFC 8176 methods the login proved: face (a face match), swk (a device key bound to the user). Face login on a bound key: face, swk; on a header-mode app: face; kiosk login: face (the kiosk's key is not the user's); device-credential assertion: swk"},
        "kioskId": {"type": "string", "format": "uuid", "description": "The registered kiosk that asked, on kiosk logins; refuse these where you want the user's own device"},
        "transactionId": {"type": "string", "format": "uuid", "description": "The verifying call's transaction"}}},
      "BindingTicketRequest": {"type": "object", "description": "The user; a bound device may send {} when it is bound to one user", "properties": {
        "userId": {"type": "string", "format": "uuid"}, "employeeNumber": {"type": "string"}}},
      "BindingTicket": {"type": "object", "required": ["bindingTicket", "userId", "expiresIn"], "properties": {
        "bindingTicket": {"type": "string"}, "userId": {"type": "string", "format": "uuid"}, "expiresIn": {"type": "integer"}}},
      "DeviceCredentialPolicy": {"type": "string", "enum": ["biometryCurrentSet", "biometryAny", "devicePasscode"]},
      "DeviceCredentialRegistration": {"type": "object", "required": ["identityToken", "publicKey", "policy"], "properties": {
        "identityToken": {"type": "string", "description": "A fresh, unused face-login identity token of this app and device; consumed here"},
        "publicKey": {"type": "string", "contentEncoding": "base64", "description": "SubjectPublicKeyInfo DER of a P-256 key"},
        "policy": {"$ref": "#/components/schemas/DeviceCredentialPolicy"},
        "attestation": {"type": "string", "contentEncoding": "base64", "description": "At most 16 KiB; stored, not verified"}}},
      "OperatorDeviceCredentialRegistration": {"type": "object", "required": ["deviceId", "publicKey", "policy"], "properties": {
        "deviceId": {"type": "string", "minLength": 1, "maxLength": 128}, "publicKey": {"type": "string", "contentEncoding": "base64"},
        "policy": {"$ref": "#/components/schemas/DeviceCredentialPolicy"}, "attestation": {"type": "string", "contentEncoding": "base64"}}},
      "CredentialRegistered": {"type": "object", "required": ["credentialId"], "properties": {"credentialId": {"type": "string", "format": "uuid"}}},
      "DeviceChallengeRequest": {"type": "object", "required": ["credentialId"], "properties": {"credentialId": {"type": "string", "format": "uuid"}}},
      "DeviceChallenge": {"type": "object", "required": ["challenge", "expiresIn", "deviceId"], "properties": {
        "challenge": {"type": "string", "description": "32 random bytes, base64url; single use"}, "expiresIn": {"type": "integer"},
        "deviceId": {"type": "string", "description": "The device identity the assertion signs"}}},
      "DeviceAssertion": {"type": "object", "required": ["credentialId", "challenge", "counter", "signature"], "properties": {
        "credentialId": {"type": "string", "format": "uuid"}, "challenge": {"type": "string"}, "counter": {"type": "integer", "minimum": 0},
        "signature": {"type": "string", "contentEncoding": "base64", "description": "DER ECDSA/SHA-256 over the UTF-8 of facegate.device-assertion.v1\\n{appId}\\n{deviceId}\\n{credentialId}\\n{challenge}\\n{counter}"}}},
      "DeviceCredential": {"type": "object", "required": ["credentialId", "userId", "deviceId", "policy", "counter", "hasAttestation", "createdAt"], "properties": {
        "credentialId": {"type": "string", "format": "uuid"}, "userId": {"type": "string", "format": "uuid"}, "deviceId": {"type": "string"},
        "policy": {"$ref": "#/components/schemas/DeviceCredentialPolicy"}, "counter": {"type": "integer"}, "hasAttestation": {"type": "boolean"},
        "createdAt": {"type": "string", "format": "date-time"}, "lastUsedAt": {"type": "string", "format": "date-time"},
        "flaggedAt": {"type": "string", "format": "date-time"}, "revokedAt": {"type": "string", "format": "date-time"}}},
      "DeviceCredentialList": {"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/DeviceCredential"}}}},
      "LivenessAction": {"type": "string", "enum": ["BLINK", "TURN_LEFT", "TURN_RIGHT"]},
      "LivenessChallenge": {"type": "object", "required": ["challengeId", "actions", "expiresIn"], "properties": {
        "challengeId": {"type": "string"}, "actions": {"type": "array", "minItems": 2, "maxItems": 3, "items": {"$ref": "#/components/schemas/LivenessAction"}},
        "expiresIn": {"type": "integer"}}},
      "CtidSerialRequest": {"type": "object", "required": ["authMode"], "properties": {"authMode": {"type": "string", "enum": ["0x40", "0x42", "0x10", "0x12"]}}},
      "CtidSerial": {"type": "object", "required": ["bizSerialNum", "randNum", "expiresIn"], "properties": {
        "bizSerialNum": {"type": "string"}, "randNum": {"type": "string", "description": "6-digit challenge code"}, "expiresIn": {"type": "integer"}}},
      "CtidEnvelope": {"type": "object", "required": ["version", "appId", "iv", "data", "mac"], "description": "AES-128-CBC + HMAC-SHA256 envelope (README: CTID envelope)", "properties": {
        "version": {"type": "string", "enum": ["v1"]}, "appId": {"type": "string", "format": "uuid"}, "iv": {"type": "string", "contentEncoding": "base64"},
        "data": {"type": "string", "contentEncoding": "base64"}, "mac": {"type": "string", "contentEncoding": "base64"}}},
      "CtidRegistration": {"type": "object", "required": ["number", "name", "validDateStart", "validDateEnd"], "properties": {
        "number": {"type": "string", "pattern": "^[0-9]{17}[0-9Xx]$"}, "name": {"type": "string"}, "validDateStart": {"type": "string", "pattern": "^[0-9]{8}$"},
        "validDateEnd": {"type": "string", "description": "YYYYMMDD or 长期"}, "photoData": {"type": "string", "contentEncoding": "base64"}}},
      "CtidRegistered": {"type": "object", "required": ["number", "registered"], "properties": {
        "number": {"type": "string", "description": "Masked"}, "registered": {"type": "boolean"}}},
      "KioskFrames": {"type": "object", "properties": {
        "challengeId": {"type": "string", "description": "From GET /v1/liveness/challenges; not needed when the app's kiosk liveness is off"},
        "frame": {"type": "array", "minItems": 1, "maxItems": 12, "items": {"type": "string", "format": "binary"},
          "description": "JPEG/PNG frames in capture order: 2–12 answering the challenge, or one photo when kiosk liveness is off"}}},
      "KioskLoginResult": {"type": "object", "required": ["success", "customerUUID", "token", "interviewId", "interviewToken", "transactionId", "spoofAttempt", "firstName", "error"], "properties": {
        "success": {"type": "boolean"}, "customerUUID": {"type": ["string", "null"], "format": "uuid"},
        "token": {"type": ["string", "null"], "description": "An identity token (method kiosk)"},
        "interviewId": {"type": ["string", "null"], "format": "uuid", "description": "The kiosk session that onboarded the customer"},
        "interviewToken": {"type": "null", "description": "Always null: an onboarding session's token is never handed to a login"},
        "transactionId": {"type": "string", "format": "uuid"}, "spoofAttempt": {"type": "boolean"}, "firstName": {"type": ["string", "null"]},
        "error": {"type": ["string", "null"], "description": "On success false: SPOOF_DETECTED, NO_FACE, NO_MATCH_FACE, AMBIGUOUS_MATCH or IMAGE_FORMAT_ERROR"}}},
      "KioskSessionCreated": {"type": "object", "required": ["interviewId", "interviewToken", "expiresIn"], "properties": {
        "interviewId": {"type": "string", "format": "uuid"}, "interviewToken": {"type": "string"}, "expiresIn": {"type": "integer"}}},
      "KioskState": {"type": "string", "enum": ["selfie", "idFront", "idBack", "faceMatch", "approval", "completed", "failed", "cancelled", "expired"]},
      "KioskStep": {"type": "object", "required": ["name", "success", "at"], "properties": {
        "name": {"type": "string"}, "success": {"type": "boolean"}, "at": {"type": "string", "format": "date-time"}}},
      "KioskResult": {"type": "object", "required": ["success", "existingUser"], "properties": {
        "success": {"type": "boolean"}, "customerUUID": {"type": "string", "format": "uuid"}, "token": {"type": "string"},
        "name": {"type": "string"}, "existingUser": {"type": "boolean"}}},
      "KioskEventName": {"type": "string", "enum": ["selfieScanCompleted", "idFrontCompleted", "idBackCompleted", "idProcessed", "faceMatchCompleted", "kioskFlowCompleted", "kioskError", "userCancelledSession"]},
      "KioskDocumentSummary": {"type": "object", "required": ["documentType", "issuingState", "surname", "givenNames", "nationality", "sex", "expiryDate"], "properties": {
        "documentType": {"type": "string"}, "issuingState": {"type": "string"}, "surname": {"type": "string"}, "givenNames": {"type": "string"},
        "nationality": {"type": "string"}, "sex": {"type": "string"}, "expiryDate": {"type": "string"}}},
      "KioskEventData": {"type": "object", "description": "Absent fields do not apply", "properties": {
        "success": {"type": "boolean"}, "existingUser": {"type": "boolean"}, "spoofAttempt": {"type": "boolean"},
        "error": {"$ref": "#/components/schemas/ErrorCode"}, "message": {"type": "string"}, "ocrData": {"$ref": "#/components/schemas/KioskDocumentSummary"},
        "distance": {"type": "number"}, "customerUUID": {"type": "string", "format": "uuid"}, "name": {"type": "string"},
        "code": {"$ref": "#/components/schemas/ErrorCode"}}},
      "KioskEvent": {"type": "object", "required": ["seq", "event", "data", "at"], "properties": {
        "seq": {"type": "integer"}, "event": {"$ref": "#/components/schemas/KioskEventName"},
        "data": {"$ref": "#/components/schemas/KioskEventData"}, "at": {"type": "string", "format": "date-time"}}},
      "KioskSession": {"type": "object", "required": ["interviewId", "state", "steps", "expiresAt"], "properties": {
        "interviewId": {"type": "string", "format": "uuid"}, "state": {"$ref": "#/components/schemas/KioskState"},
        "steps": {"type": "array", "items": {"$ref": "#/components/schemas/KioskStep"}},
        "result": {"$ref": "#/components/schemas/KioskResult"}, "expiresAt": {"type": "string", "format": "date-time"},
        "events": {"type": "array", "description": "Step calls: the events this call produced", "items": {"$ref": "#/components/schemas/KioskEvent"}}}},
      "KioskEventTicket": {"type": "object", "required": ["ticket", "expiresIn"], "properties": {"ticket": {"type": "string"}, "expiresIn": {"type": "integer"}}},
      "Transaction": {"type": "object", "required": ["transactionId", "appId", "kind", "outcome", "userId", "deviceId", "clientIp", "score", "latencyMs", "createdAt", "actor", "detail"], "properties": {
        "transactionId": {"type": "string", "format": "uuid"}, "appId": {"type": "string", "format": "uuid"},
        "kind": {"$ref": "#/components/schemas/TransactionKind"},
        "outcome": {"$ref": "#/components/schemas/TransactionOutcome"},
        "userId": {"type": ["string", "null"], "format": "uuid"},
        "deviceId": {"type": ["string", "null"]}, "clientIp": {"type": ["string", "null"]}, "score": {"type": ["number", "null"]},
        "latencyMs": {"type": "integer"}, "createdAt": {"type": "string", "format": "date-time"},
        "actor": {"oneOf": [{"$ref": "#/components/schemas/TransactionActor"}, {"type": "null"}],
          "description": "Who acted; null where no caller was authenticated (a refused credential) and on rows written before actors were recorded"},
        "change": {"oneOf": [{"$ref": "#/components/schemas/TransactionChange"}, {"type": "null"}],
          "description": "What an administrative call changed; null on other rows"},
        "detail": {"type": "object", "additionalProperties": {"type": "string"}, "description": "The row's other context: ids it touched, counts, masked numbers"}}},
      "TransactionKind": {"type": "string", "description": "What was done. Platform rows (app.create, keys, refusals naming no existing app, their summaries) are on the platform chain (appId 00000000-0000-0000-0000-000000000000); app.delete is the last row of the deleted app's own chain",
        "enum": ["app.create", "app.update", "app.delete", "app.secret.rotate", "app.secret.revoke-previous", "app.face-model.switch",
                   "operator-key.create", "operator-key.revoke", "auditor-key.create", "auditor-key.revoke", "auth.refused",
                   "user.create", "user.delete", "user.reset", "face.enroll", "face.delete", "face.search", "face.migrate", "face.migrate.re-embed",
                   "face.login", "face.login.confirm", "face.verify", "identity.exchange", "liveness.challenge.refused",
                   "device.binding.ticket", "device.register", "device.challenge", "device.assert", "device.revoke", "device.reset", "device.credential.reset",
                   "ctid.verify", "kiosk.register", "kiosk.revoke", "kiosk.login", "kiosk.refused", "kiosk.flow", "kiosk.onboarding"]},
      "TransactionOutcome": {"type": "string", "description": "SUCCESS; REPEATED on an auth.refused summary of repeated refusals; else the ErrorCode the call ended with",
        "enum": ["SUCCESS", "REPEATED", "INVALID_REQUEST", "UNAUTHORIZED", "FORBIDDEN", "NOT_FOUND", "CONFLICT", "PAYLOAD_TOO_LARGE", "MODULE_DISABLED", "MODULE_NOT_FORMAL", "ACCESS_TOKEN_INVALID", "ACCESS_TOKEN_EXPIRED", "NO_FACE", "NO_MATCH_FACE", "IMAGE_FORMAT_ERROR", "CONFIRM_REQUIRED", "EMPLOYEE_NUMBER_MISMATCH", "SPOOF_DETECTED", "AMBIGUOUS_MATCH", "LOW_QUALITY", "DUPLICATE_FACE", "AUTHENTICATION_FAILED", "CREDENTIAL_LOCKED", "CREDENTIAL_NOT_ENROLLED", "RATE_LIMITED", "SERVICE_UNAVAILABLE", "TIMEOUT", "INVALID_ENVELOPE", "IDENTITY_TOKEN_INVALID", "IDENTITY_TOKEN_EXPIRED", "IDENTITY_TOKEN_USED", "CONFIRMATION_INVALID", "DOCUMENT_UNREADABLE", "DOCUMENT_EXPIRED", "DOCUMENT_INVALID", "DOCUMENT_ALREADY_REGISTERED", "NO_PORTRAIT", "FACE_MISMATCH", "SESSION_EXPIRED", "TOO_MANY_ATTEMPTS", "APPROVAL_DENIED", "DPOP_PROOF_INVALID", "BINDING_TICKET_INVALID", "KIOSK_NOT_REGISTERED", "FACE_LIMIT_REACHED", "IDEMPOTENCY_IN_PROGRESS", "INTERNAL", "METHOD_NOT_ALLOWED", "UNSUPPORTED_MEDIA_TYPE"]},
      "TransactionActor": {"type": "object", "required": ["type"], "properties": {
        "type": {"type": "string", "enum": ["operator", "auditor", "appServer", "client", "kiosk", "service"]},
        "id": {"type": "string", "description": "operator: the operator key's id or bootstrap; auditor: the auditor id; appServer: the app; client: the device (absent when it sent none); kiosk: the kiosk id; service: its name"}}},
      "TransactionChange": {"type": "object", "description": "Each changed setting as [old, new], e.g. {\"matchThreshold\": [1.0, 0.95]}, modules one by one (modules.ctid); never a secret or a photo",
        "additionalProperties": {"type": "array", "items": {}, "minItems": 2, "maxItems": 2}},
      "AuditedAppList": {"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "items": {
        "type": "object", "required": ["appId", "name"], "properties": {"appId": {"type": "string", "format": "uuid"}, "name": {"type": "string"}}}}}},
      "TransactionPage": {"type": "object", "required": ["items"], "properties": {
        "items": {"type": "array", "items": {"$ref": "#/components/schemas/Transaction"}}, "nextCursor": {"type": "string", "description": "Absent on the last page"}}},
      "ChainVerification": {"type": "object", "required": ["appId", "ok", "checked", "firstBrokenTransactionId"], "properties": {
        "appId": {"type": "string", "format": "uuid"}, "ok": {"type": "boolean"}, "checked": {"type": "integer"},
        "firstBrokenTransactionId": {"type": ["string", "null"], "format": "uuid"},
        "checkpoint": {"$ref": "#/components/schemas/CheckpointCheck"}}},
      "CheckpointCheck": {"type": "object", "required": ["count", "issuedAt", "ok"], "description": "Present when a checkpoint was given: whether the row it counted still holds the hash it signed", "properties": {
        "count": {"type": "integer"}, "issuedAt": {"type": "string", "format": "date-time"}, "ok": {"type": "boolean"}}},
      "AuditCheckpoint": {"type": "object", "required": ["appId", "count", "headHash", "issuedAt", "checkpoint"], "properties": {
        "appId": {"type": "string", "format": "uuid"}, "count": {"type": "integer", "description": "Rows in the app's chain"},
        "headHash": {"type": "string", "description": "base64url of the last row's hash"}, "issuedAt": {"type": "string", "format": "date-time"},
        "checkpoint": {"type": "string", "description": "The same, signed: a JWT (EdDSA, typ facegate-checkpoint+jwt, key in the JWKS); keep it outside the database and pass it to verify later"}}},
      "NewKey": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "appIds": {"type": "array", "minItems": 1, "maxItems": 1000, "items": {"type": "string", "format": "uuid"}, "description": "The apps the key covers; absent: every app for an operator key, no app for an auditor key (unless allApps)"},
        "allApps": {"type": "boolean", "description": "Auditor keys: read every app (instead of appIds)"},
        "expiresIn": {"type": "integer", "minimum": 1, "maximum": 315360000, "description": "Seconds from now (or expiresAt, not both); both absent: never expires"},
        "expiresAt": {"type": "string", "format": "date-time", "description": "In the future; both absent: never expires"}}},
      "CreatedOperatorKey": {"type": "object", "required": ["operatorKeyId", "operatorKey"], "properties": {
        "operatorKeyId": {"type": "string", "format": "uuid"}, "operatorKey": {"type": "string", "description": "Shown only here"}, "name": {"type": "string"},
        "appIds": {"type": ["array", "null"], "items": {"type": "string", "format": "uuid"}}, "expiresAt": {"type": ["string", "null"], "format": "date-time"}}},
      "CreatedAuditorKey": {"type": "object", "required": ["auditorId", "auditorKey"], "properties": {
        "auditorId": {"type": "string", "format": "uuid"}, "auditorKey": {"type": "string", "description": "Shown only here"}, "name": {"type": "string"},
        "appIds": {"type": ["array", "null"], "items": {"type": "string", "format": "uuid"}}, "expiresAt": {"type": ["string", "null"], "format": "date-time"}}},
      "ApiKey": {"type": "object", "required": ["role", "name", "createdAt"], "description": "A key as listed, never its secret: operatorKeyId for an operator key, auditorId for an auditor key", "properties": {
        "operatorKeyId": {"type": "string", "format": "uuid"}, "auditorId": {"type": "string", "format": "uuid"}, "role": {"type": "string", "enum": ["operator", "auditor"]}, "name": {"type": "string"},
        "appIds": {"type": ["array", "null"], "items": {"type": "string", "format": "uuid"}, "description": "null or absent: every app"},
        "createdAt": {"type": "string", "format": "date-time"}, "expiresAt": {"type": ["string", "null"], "format": "date-time"},
        "revokedAt": {"type": ["string", "null"], "format": "date-time"}}},
      "ApiKeyList": {"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/ApiKey"}}}},
      "JsonWebKey": {"type": "object", "required": ["kty", "crv", "kid", "x", "use", "alg"], "properties": {
        "kty": {"type": "string", "const": "OKP"}, "crv": {"type": "string", "const": "Ed25519"}, "kid": {"type": "string"}, "x": {"type": "string"},
        "use": {"type": "string", "const": "sig"}, "alg": {"type": "string", "const": "EdDSA"}}},
      "JsonWebKeySet": {"type": "object", "required": ["keys"], "properties": {"keys": {"type": "array", "items": {"$ref": "#/components/schemas/JsonWebKey"}}}}
    }
  },
  "paths": {
    "/v1/apps": {
      "post": {"operationId": "createApp", "tags": ["apps"], "summary": "Create an app (its secrets are shown only here)", "security": [{"operatorKey": []}],
        "parameters": [{"$ref": "#/components/parameters/idempotencyKey"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewApp"}, "example": {"name": "Acme HR", "modules": {"faceLogin": "formal"}, "falseMatchRate": 1e-5}}}},
        "responses": {
          "201": {"description": "Created", "headers": {"Idempotent-Replayed": {"$ref": "#/components/headers/IdempotentReplayed"}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CreatedApp"}, "example": {"appId": "3f0c9a52-8d1e-4b7a-9c55-2f6e1d0b7a11", "name": "Acme HR", "appSecret": "fgs_Vb3…", "ctidKey": "q83vEjRWeJq83vEjRWeJqw==", "modules": {"faceLogin": "formal", "ctid": "trial", "kiosk": "disabled", "deviceAuth": "trial"}, "faceModel": "sface-2021dec", "matchThreshold": 1.02, "estimatedFalseMatchRate": 1e-5, "liveness": {"faceLogin": "off", "kiosk": "active"}, "deviceBinding": "dpop", "deviceBindingPolicy": "appServerTicket", "kioskApproval": {}, "quotas": {"dailyCalls": 1000, "gallerySize": 100}, "keepEnrollmentPhotos": false}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN: an operator key limited to some apps"},
          "409": {"$ref": "#/components/responses/Conflict", "description": "CONFLICT (another request under this Idempotency-Key), IDEMPOTENCY_IN_PROGRESS"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}},
      "get": {"operationId": "listApps", "tags": ["apps"], "summary": "List the apps the operator key covers", "security": [{"operatorKey": []}],
        "responses": {
          "200": {"description": "The apps", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AppList"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}": {
      "parameters": [{"$ref": "#/components/parameters/appId"}],
      "get": {"operationId": "getApp", "tags": ["apps"], "summary": "Get an app (no secrets)", "security": [{"operatorKey": []}],
        "responses": {
          "200": {"description": "The app", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/App"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}, "default": {"$ref": "#/components/responses/Unexpected"}}},
      "patch": {"operationId": "updateApp", "tags": ["apps"], "summary": "Change modules, threshold, liveness policy, device binding, kiosk approval or quotas", "security": [{"operatorKey": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AppChanges"}}}},
        "responses": {
          "200": {"description": "The app after the change", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/App"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"}, "404": {"$ref": "#/components/responses/NotFound"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}},
      "delete": {"operationId": "deleteApp", "tags": ["apps"], "summary": "Delete the app and all its data: users, templates (dropped from every matcher), kept photos, devices, device credentials, kiosks and their sessions, CTID rows, counters; operator keys stop naming it (those that named only it are revoked). Its audit trail and chain stay, readable by its auditors, and end with the app.delete row", "security": [{"operatorKey": []}],
        "responses": {
          "204": {"description": "Deleted"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"}, "404": {"$ref": "#/components/responses/NotFound"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/secret": {
      "parameters": [{"$ref": "#/components/parameters/appId"}],
      "post": {"operationId": "rotateAppSecret", "tags": ["apps"], "summary": "Rotate the app secret. Access tokens issued before are refused; the previous secret may mint access tokens and exchange identity tokens during its grace (and those tokens die with it), nothing else", "security": [{"operatorKey": []}],
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RotateSecret"}}}},
        "responses": {
          "200": {"description": "The new secret", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RotatedSecret"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/secret/previous": {
      "parameters": [{"$ref": "#/components/parameters/appId"}],
      "delete": {"operationId": "revokePreviousAppSecret", "tags": ["apps"], "summary": "End the previous secret's grace now: it stops minting access tokens at once, and the access tokens it minted stop working", "security": [{"operatorKey": []}],
        "responses": {
          "204": {"description": "Revoked (also when it had no grace left)"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"}, "404": {"$ref": "#/components/responses/NotFound"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/kiosks": {
      "parameters": [{"$ref": "#/components/parameters/appId"}],
      "post": {"operationId": "registerKiosk", "tags": ["kiosk"], "summary": "Register a kiosk by its DPoP key's thumbprint: only a registered, unrevoked kiosk of the app may call the kiosk routes", "security": [{"operatorKey": []}],
        "parameters": [{"$ref": "#/components/parameters/idempotencyKey"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewKiosk"}}}},
        "responses": {
          "201": {"description": "Registered", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Kiosk"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"}, "404": {"$ref": "#/components/responses/NotFound"},
          "409": {"$ref": "#/components/responses/Conflict", "description": "CONFLICT: the key is already live in another kiosk of the app"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}},
      "get": {"operationId": "listKiosks", "tags": ["kiosk"], "summary": "The app's kiosks, revoked ones included", "security": [{"operatorKey": []}],
        "responses": {
          "200": {"description": "Kiosks", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KioskList"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/kiosks/{kioskId}": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/kioskId"}],
      "delete": {"operationId": "revokeKiosk", "tags": ["kiosk"], "summary": "Revoke a kiosk: refused from its next request, its open sessions cancelled", "security": [{"operatorKey": []}],
        "responses": {
          "204": {"description": "Revoked"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"}, "404": {"$ref": "#/components/responses/NotFound"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/face-model-migration": {
      "parameters": [{"$ref": "#/components/parameters/appId"}],
      "get": {"operationId": "getFaceModelMigration", "tags": ["apps"], "summary": "How many users are ready for the app's move to another face model, and who is not", "security": [{"operatorKey": []}],
        "parameters": [{"name": "to", "in": "query", "schema": {"$ref": "#/components/schemas/FaceModel"}, "description": "The target model; sface-2021dec by default"}],
        "responses": {
          "200": {"description": "The migration's state", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FaceModelMigration"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}},
      "post": {"operationId": "switchFaceModel", "tags": ["apps"], "summary": "Switch the app to another face model, in one step: from then on it matches only that model's templates", "security": [{"operatorKey": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FaceModelSwitch"}}}},
        "responses": {
          "200": {"description": "The app as switched, and who still needs a new enrollment", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FaceModelSwitched"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}, "409": {"$ref": "#/components/responses/Conflict", "description": "CONFLICT: the app already uses that model, its kiosk approval does not fit the new model, or it changed meanwhile"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/face-model-migration/re-embed": {
      "parameters": [{"$ref": "#/components/parameters/appId"}],
      "post": {"operationId": "reembedKeptPhotos", "tags": ["apps"], "summary": "Make target-model templates from the kept enrollment photos of the users not ready yet (before the switch)", "security": [{"operatorKey": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FaceModelReembed"}}}},
        "responses": {
          "200": {"description": "What became of each kept photo, and the migration's state", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FaceModelReembedded"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}, "409": {"$ref": "#/components/responses/Conflict", "description": "CONFLICT: the app already uses the target model, or the target is not the model apps move to (sface-2021dec)"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/users": {
      "parameters": [{"$ref": "#/components/parameters/appId"}],
      "post": {"operationId": "createUser", "tags": ["users"], "summary": "Create a user", "security": [{"operatorKey": []}],
        "parameters": [{"$ref": "#/components/parameters/idempotencyKey"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewUser"}}}},
        "responses": {
          "201": {"description": "Created", "headers": {"Idempotent-Replayed": {"$ref": "#/components/headers/IdempotentReplayed"}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CreatedUser"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"}, "404": {"$ref": "#/components/responses/NotFound"},
          "409": {"$ref": "#/components/responses/Conflict", "description": "CONFLICT (the employee number exists in this app, or another request under this Idempotency-Key), IDEMPOTENCY_IN_PROGRESS"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}},
      "get": {"operationId": "listUsers", "tags": ["users"], "summary": "List users in creation order (cursor pages)", "security": [{"operatorKey": []}],
        "parameters": [{"$ref": "#/components/parameters/cursor"},
          {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}}],
        "responses": {
          "200": {"description": "One page", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/UserPage"}}}},
          "400": {"$ref": "#/components/responses/BadRequest", "description": "INVALID_REQUEST: a cursor this API did not issue"},
          "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/users/{userId}": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/userId"}],
      "get": {"operationId": "getUser", "tags": ["users"], "summary": "Get a user", "security": [{"operatorKey": []}],
        "responses": {
          "200": {"description": "The user", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/User"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}, "default": {"$ref": "#/components/responses/Unexpected"}}},
      "delete": {"operationId": "deleteUser", "tags": ["users"], "summary": "Delete a user; templates are erased from storage and every matcher", "security": [{"operatorKey": []}],
        "responses": {
          "204": {"description": "Deleted"}, "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/users/{userId}/reset": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/userId"}],
      "post": {"operationId": "resetUserBinding", "tags": ["users"], "summary": "Clear the lock on binding new devices to a user (set after repeated wrong employee numbers)", "security": [{"operatorKey": []}],
        "responses": {
          "204": {"description": "Reset"}, "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/devices/{deviceId}/reset": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/deviceIdPath"}],
      "post": {"operationId": "resetDevice", "tags": ["users"], "summary": "Clear a device's failed-attempt counters and lock", "security": [{"operatorKey": []}],
        "responses": {
          "204": {"description": "Reset"}, "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/users/{userId}/faces": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/userId"}],
      "post": {"operationId": "enrollFace", "tags": ["faces"], "summary": "Enroll a face from a photo (quality gate, duplicate check); a user holds at most FACEGATE_MAX_FACES_PER_USER templates (default 5)", "security": [{"operatorKey": []}],
        "parameters": [{"$ref": "#/components/parameters/idempotencyKey"},
          {"name": "faceBox", "in": "query", "schema": {"type": "string", "pattern": "^[0-9]+,[0-9]+,[0-9]+,[0-9]+$"}, "description": "x,y,width,height in pixels: which face to enroll when the photo shows several (the detected face overlapping it most); without it the photo's clear subject is taken, or the photo refused with LOW_QUALITY, reason AMBIGUOUS_SUBJECT and every face's box"},
          {"name": "photoConsent", "in": "query", "schema": {"type": "boolean", "default": false}, "description": "The person agreed that the photo be kept, sealed, for a later move to another face model; kept only where the app's keepEnrollmentPhotos is on"}],
        "requestBody": {"required": true, "content": {"image/jpeg": {"schema": {"type": "string", "contentMediaType": "image/jpeg"}}, "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}},
          "multipart/form-data": {"schema": {"$ref": "#/components/schemas/EnrollmentUpload"}}}},
        "responses": {
          "201": {"description": "Enrolled", "headers": {"Idempotent-Replayed": {"$ref": "#/components/headers/IdempotentReplayed"}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/EnrolledFace"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN, MODULE_NOT_FORMAL (the trial gallery is full)"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "409": {"$ref": "#/components/responses/Conflict", "description": "FACE_LIMIT_REACHED, CONFLICT (another request under this Idempotency-Key), IDEMPOTENCY_IN_PROGRESS"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
          "422": {"$ref": "#/components/responses/Unprocessable", "description": "NO_FACE, IMAGE_FORMAT_ERROR, LOW_QUALITY, DUPLICATE_FACE"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}},
      "get": {"operationId": "listFaces", "tags": ["faces"], "summary": "The user's templates with the quality measured at enrollment (never the embedding)", "security": [{"operatorKey": []}],
        "responses": {
          "200": {"description": "The templates", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FaceTemplateList"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/users/{userId}/faces/{templateId}": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/userId"}, {"$ref": "#/components/parameters/templateId"}],
      "delete": {"operationId": "deleteFace", "tags": ["faces"], "summary": "Delete one template; gone from storage and every matcher", "security": [{"operatorKey": []}],
        "responses": {
          "204": {"description": "Deleted"}, "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound", "description": "NOT_FOUND: no such app, or no such template of that user"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/faces/search": {
      "parameters": [{"$ref": "#/components/parameters/appId"}],
      "post": {"operationId": "searchFaces", "tags": ["faces"], "summary": "1:N search of the app's gallery without a login: the decision at the app's operating point, and for operators the closest candidates",
        "security": [{"operatorKey": []}, {"appServer": []}],
        "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}, "description": "How many candidates (operators)"}],
        "requestBody": {"required": true, "content": {"image/jpeg": {"schema": {"type": "string", "contentMediaType": "image/jpeg"}}, "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}},
          "multipart/form-data": {"schema": {"$ref": "#/components/schemas/ImageUpload"}}}},
        "responses": {
          "200": {"description": "The search result", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FaceSearchResult"}}}},
          "400": {"$ref": "#/components/responses/BadRequest", "description": "INVALID_REQUEST: limit out of 1–20, a malformed multipart body"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN (app-server credentials of another app, an operator key not covering the app), MODULE_DISABLED, MODULE_NOT_FORMAL"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
          "422": {"$ref": "#/components/responses/Unprocessable", "description": "NO_FACE, IMAGE_FORMAT_ERROR, LOW_QUALITY"},
          "429": {"$ref": "#/components/responses/RateLimited"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/ctid-registry": {
      "parameters": [{"$ref": "#/components/parameters/appId"}],
      "post": {"operationId": "registerCtidIdentity", "tags": ["ctid"], "summary": "Add or replace a trusted identity record of the app (number hashed, name sealed, portrait kept as a sealed template)", "security": [{"operatorKey": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CtidRegistration"}}}},
        "responses": {
          "201": {"description": "Registered", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CtidRegistered"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"}, "404": {"$ref": "#/components/responses/NotFound"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"},
          "422": {"$ref": "#/components/responses/Unprocessable", "description": "LOW_QUALITY: the photo has no usable face"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/users/{userId}/device-credentials": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/userId"}],
      "post": {"operationId": "registerDeviceCredentialForUser", "tags": ["device-credentials"], "summary": "Register a device biometric key for a user (at a desk); replaces the user's credential on that device", "security": [{"operatorKey": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OperatorDeviceCredentialRegistration"}}}},
        "responses": {
          "201": {"description": "Registered", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CredentialRegistered"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"}, "404": {"$ref": "#/components/responses/NotFound"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}},
      "get": {"operationId": "listDeviceCredentials", "tags": ["device-credentials"], "summary": "A user's device credentials, revoked ones included", "security": [{"operatorKey": []}],
        "responses": {
          "200": {"description": "The credentials", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeviceCredentialList"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/device-credentials/{credentialId}": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/credentialId"}],
      "delete": {"operationId": "revokeDeviceCredential", "tags": ["device-credentials"], "summary": "Revoke a device credential (immediately)", "security": [{"operatorKey": []}],
        "responses": {
          "204": {"description": "Revoked"}, "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound", "description": "NOT_FOUND (app), CREDENTIAL_NOT_ENROLLED (no such live credential)"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/apps/{appId}/device-credentials/{credentialId}/reset": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/credentialId"}],
      "post": {"operationId": "resetDeviceCredential", "tags": ["device-credentials"], "summary": "Clear a credential's failed-attempt counters and lock (a blocked counter needs a new registration)", "security": [{"operatorKey": []}],
        "responses": {
          "204": {"description": "Reset"}, "401": {"$ref": "#/components/responses/Unauthorized"}, "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound", "description": "NOT_FOUND (app), CREDENTIAL_NOT_ENROLLED (no such credential)"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/operator-keys": {
      "post": {"operationId": "createOperatorKey", "tags": ["keys"], "summary": "Create an operator key, for every app or some", "security": [{"operatorKey": []}],
        "parameters": [{"$ref": "#/components/parameters/idempotencyKey"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewKey"}}}},
        "responses": {
          "201": {"description": "Created; the key is shown only here", "headers": {"Idempotent-Replayed": {"$ref": "#/components/headers/IdempotentReplayed"}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CreatedOperatorKey"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN: an operator key limited to some apps"},
          "409": {"$ref": "#/components/responses/Conflict", "description": "CONFLICT (another request under this Idempotency-Key), IDEMPOTENCY_IN_PROGRESS"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}},
      "get": {"operationId": "listOperatorKeys", "tags": ["keys"], "summary": "List operator keys (never the secret), revoked and expired ones included", "security": [{"operatorKey": []}],
        "responses": {
          "200": {"description": "The keys", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ApiKeyList"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN: an operator key limited to some apps"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/operator-keys/{operatorKeyId}": {
      "parameters": [{"$ref": "#/components/parameters/operatorKeyId"}],
      "delete": {"operationId": "revokeOperatorKey", "tags": ["keys"], "summary": "Revoke an operator key; it stops working at once", "security": [{"operatorKey": []}],
        "responses": {
          "204": {"description": "Revoked"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN: an operator key limited to some apps"},
          "404": {"$ref": "#/components/responses/NotFound"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/auditors": {
      "post": {"operationId": "createAuditorKey", "tags": ["keys"], "summary": "Create an auditor key, for every app or some", "security": [{"operatorKey": []}],
        "parameters": [{"$ref": "#/components/parameters/idempotencyKey"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewKey"}}}},
        "responses": {
          "201": {"description": "Created; the key is shown only here", "headers": {"Idempotent-Replayed": {"$ref": "#/components/headers/IdempotentReplayed"}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CreatedAuditorKey"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN: an operator key limited to some apps"},
          "409": {"$ref": "#/components/responses/Conflict", "description": "CONFLICT (another request under this Idempotency-Key), IDEMPOTENCY_IN_PROGRESS"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}},
      "get": {"operationId": "listAuditorKeys", "tags": ["keys"], "summary": "List auditor keys (never the secret), revoked and expired ones included", "security": [{"operatorKey": []}],
        "responses": {
          "200": {"description": "The keys", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ApiKeyList"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN: an operator key limited to some apps"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/auditors/{auditorId}": {
      "parameters": [{"$ref": "#/components/parameters/auditorId"}],
      "delete": {"operationId": "revokeAuditorKey", "tags": ["keys"], "summary": "Revoke an auditor key; it stops working at once", "security": [{"operatorKey": []}],
        "responses": {
          "204": {"description": "Revoked"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN: an operator key limited to some apps"},
          "404": {"$ref": "#/components/responses/NotFound"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/access-tokens": {
      "post": {"operationId": "issueAccessToken", "tags": ["identity"], "summary": "Issue an access token for the app's client apps (no body)", "security": [{"appServer": []}],
        "responses": {
          "200": {"description": "The token", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AccessToken"}, "example": {"accessToken": "eyJhbGciOiJFZERTQSIsImtpZCI6…", "tokenType": "Bearer", "expiresIn": 3600}}}},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "UNAUTHORIZED: unknown app or wrong secret"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/identity/exchange": {
      "post": {"operationId": "exchangeIdentityToken", "tags": ["identity"], "summary": "Exchange an identity token (single use) for the verified user", "security": [{"appServer": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/IdentityTokenExchange"}, "example": {"identityToken": "eyJhbGciOiJFZERTQSIsInR5cCI6ImZhY2VnYXRlLWlkK2p3dCJ9…"}}}},
        "responses": {
          "200": {"description": "The verified user", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Identity"}, "example": {"userId": "8b1f2c9e-44a0-4d3b-a1e7-5c2d9f0e6b13", "employeeNumber": "E1001", "name": "Ada Lovelace", "appId": "3f0c9a52-8d1e-4b7a-9c55-2f6e1d0b7a11", "deviceId": "qZ7yH0rP1mXg3kVb9sT2wL8nD4cF6jA5eU0oR1iY2tQ", "method": "face", "amr": ["face", "swk"], "transactionId": "d2a6e0f4-7b3c-4e19-8f5a-0c1b2d3e4f56"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "UNAUTHORIZED, IDENTITY_TOKEN_INVALID (another app's, tampered, wrong type), IDENTITY_TOKEN_EXPIRED"},
          "404": {"$ref": "#/components/responses/NotFound", "description": "NOT_FOUND: the user no longer exists"},
          "409": {"$ref": "#/components/responses/Conflict", "description": "IDENTITY_TOKEN_USED"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/face-login": {
      "post": {"operationId": "faceLogin", "tags": ["face-login"], "summary": "Log in with a photo: 1:1 against the users a bound device key belongs to, else 1:N. A device key bound to nobody always gets CONFIRM_REQUIRED. With the app's liveness.faceLogin active, send a burst answering a liveness challenge instead (multipart challengeId + 2–12 frame fields)",
        "security": [{"accessToken": [], "deviceProof": []}, {"accessToken": []}],
        "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"image/jpeg": {"schema": {"type": "string", "contentMediaType": "image/jpeg"}}, "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}},
          "multipart/form-data": {"schema": {"$ref": "#/components/schemas/FaceLoginUpload"}}}},
        "responses": {
          "200": {"description": "SUCCESS with an identity token, or CONFIRM_REQUIRED on a new device", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FaceLoginResult"}, "example": {"status": "CONFIRM_REQUIRED", "confirmationId": "0e7c3a1b-5d2f-4a6e-9b8c-1f2e3d4c5b6a", "expiresIn": 300, "transactionId": "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"}}}},
          "400": {"$ref": "#/components/responses/BadRequest", "description": "INVALID_REQUEST: no X-Device-Id on a header app, one image where liveness needs a burst, a malformed multipart body"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "MODULE_DISABLED, MODULE_NOT_FORMAL"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
          "422": {"$ref": "#/components/responses/Unprocessable", "description": "NO_FACE, NO_MATCH_FACE, AMBIGUOUS_MATCH, IMAGE_FORMAT_ERROR, LOW_QUALITY, SPOOF_DETECTED"},
          "423": {"$ref": "#/components/responses/Locked"}, "429": {"$ref": "#/components/responses/RateLimited"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/face-login/confirm": {
      "post": {"operationId": "confirmFaceLogin", "tags": ["face-login"], "summary": "Confirm a new device with the employee number (signed by the same device key on dpop apps); binds the device",
        "security": [{"accessToken": [], "deviceProof": []}, {"accessToken": []}],
        "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Confirmation"}}}},
        "responses": {
          "200": {"description": "SUCCESS with an identity token", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LoginSuccess"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "MODULE_DISABLED, MODULE_NOT_FORMAL, BINDING_TICKET_INVALID"},
          "409": {"$ref": "#/components/responses/Conflict", "description": "CONFIRMATION_INVALID: unknown, used, voided or expired"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"},
          "422": {"$ref": "#/components/responses/Unprocessable", "description": "EMPLOYEE_NUMBER_MISMATCH (a wrong number and a face that is not the claimed user's get the same answer; five void the confirmation)"},
          "423": {"$ref": "#/components/responses/Locked"}, "429": {"$ref": "#/components/responses/RateLimited"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/face-verify": {
      "post": {"operationId": "verifyFace", "tags": ["face-login"], "summary": "1:1: is this photo the claimed user (userId or employeeNumber, as multipart fields or query parameters)? Throttled per claimed user like face login. The client app learns only match; the app server also gets the score",
        "security": [{"accessToken": []}, {"appServer": []}],
        "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"},
          {"name": "userId", "in": "query", "schema": {"type": "string", "format": "uuid"}},
          {"name": "employeeNumber", "in": "query", "schema": {"type": "string"}}],
        "requestBody": {"required": true, "content": {"image/jpeg": {"schema": {"type": "string", "contentMediaType": "image/jpeg"}}, "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}},
          "multipart/form-data": {"schema": {"$ref": "#/components/schemas/VerifyUpload"}}}},
        "responses": {
          "200": {"description": "The decision", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FaceVerification"}}}},
          "400": {"$ref": "#/components/responses/BadRequest", "description": "INVALID_REQUEST: no claimed user, or no X-Device-Id on a header app"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "UNAUTHORIZED, ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "MODULE_DISABLED, MODULE_NOT_FORMAL"},
          "404": {"$ref": "#/components/responses/NotFound", "description": "NOT_FOUND: the app server named an unknown user (a client gets match false instead)"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
          "422": {"$ref": "#/components/responses/Unprocessable", "description": "NO_FACE, IMAGE_FORMAT_ERROR, LOW_QUALITY"},
          "423": {"$ref": "#/components/responses/Locked", "description": "CREDENTIAL_LOCKED: too many failed attempts on the claimed user or the device"},
          "429": {"$ref": "#/components/responses/RateLimited"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/device-bindings": {
      "post": {"operationId": "issueBindingTicket", "tags": ["device-bindings"], "summary": "A one-time ticket binding one new device key to one user, for the confirmation of a face login. Asked by the app server (Basic auth), or by a device key already bound to the user (Bearer access token + DPoP proof)",
        "security": [{"appServer": []}, {"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/BindingTicketRequest"}}}},
        "responses": {
          "201": {"description": "The ticket", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/BindingTicket"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "UNAUTHORIZED, ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN: a header app, or a device not bound to that user"},
          "404": {"$ref": "#/components/responses/NotFound"}, "413": {"$ref": "#/components/responses/PayloadTooLarge"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/device-credentials": {
      "post": {"operationId": "registerDeviceCredential", "tags": ["device-credentials"], "summary": "Register a device biometric key; proof of user: a fresh face-login identity token of this app and device, consumed here. Replaces the user's previous credential on this device. Error messages end with (fallback: faceLogin) or (fallback: none)",
        "security": [{"accessToken": [], "deviceProof": []}, {"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeviceCredentialRegistration"}}}},
        "responses": {
          "201": {"description": "Registered", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CredentialRegistered"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID, IDENTITY_TOKEN_INVALID, IDENTITY_TOKEN_EXPIRED"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "MODULE_DISABLED, MODULE_NOT_FORMAL"},
          "404": {"$ref": "#/components/responses/NotFound", "description": "NOT_FOUND: the user no longer exists"},
          "409": {"$ref": "#/components/responses/Conflict", "description": "IDENTITY_TOKEN_USED"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/device-credentials/challenges": {
      "post": {"operationId": "createDeviceChallenge", "tags": ["device-credentials"], "summary": "A single-use challenge for one credential (32 random bytes, base64url; 60 s)",
        "security": [{"accessToken": [], "deviceProof": []}, {"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeviceChallengeRequest"}}}},
        "responses": {
          "200": {"description": "The challenge", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeviceChallenge"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "MODULE_DISABLED, MODULE_NOT_FORMAL"},
          "404": {"$ref": "#/components/responses/NotFound", "description": "CREDENTIAL_NOT_ENROLLED"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"},
          "422": {"$ref": "#/components/responses/Unprocessable", "description": "AUTHENTICATION_FAILED: the credential is blocked (its counter went backwards)"},
          "423": {"$ref": "#/components/responses/Locked"}, "429": {"$ref": "#/components/responses/RateLimited"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/device-credentials/assertions": {
      "post": {"operationId": "assertDeviceCredential", "tags": ["device-credentials"], "summary": "Log in with a device key. A counter that does not advance (once non-zero) blocks the credential until it is registered again",
        "security": [{"accessToken": [], "deviceProof": []}, {"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeviceAssertion"}}}},
        "responses": {
          "200": {"description": "SUCCESS with an identity token (method device_biometric)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LoginSuccess"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "MODULE_DISABLED, MODULE_NOT_FORMAL"},
          "404": {"$ref": "#/components/responses/NotFound", "description": "CREDENTIAL_NOT_ENROLLED"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"},
          "422": {"$ref": "#/components/responses/Unprocessable", "description": "AUTHENTICATION_FAILED: unknown or spent challenge, bad signature, counter not advancing"},
          "423": {"$ref": "#/components/responses/Locked"}, "429": {"$ref": "#/components/responses/RateLimited"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/device-credentials/{credentialId}": {
      "parameters": [{"$ref": "#/components/parameters/credentialId"}],
      "delete": {"operationId": "revokeOwnDeviceCredential", "tags": ["device-credentials"], "summary": "Revoke this device's credential (immediately)",
        "security": [{"accessToken": [], "deviceProof": []}, {"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "responses": {
          "204": {"description": "Revoked"}, "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID"},
          "404": {"$ref": "#/components/responses/NotFound", "description": "CREDENTIAL_NOT_ENROLLED: no such live credential on this device"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/liveness/challenges": {
      "get": {"operationId": "getLivenessChallenge", "tags": ["liveness"], "summary": "A liveness challenge: 2–3 random actions to perform in front of the camera; single use, bound to the app and device, 120 s",
        "security": [{"accessToken": [], "deviceProof": []}, {"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "responses": {
          "200": {"description": "The challenge", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LivenessChallenge"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/ctid/serial-numbers": {
      "post": {"operationId": "issueCtidSerialNumber", "tags": ["ctid"], "summary": "Issue a single-use CTID serial number and challenge code bound to the app and auth mode",
        "security": [{"accessToken": [], "deviceProof": []}, {"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/idempotencyKey"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CtidSerialRequest"}}}},
        "responses": {
          "200": {"description": "The serial number", "headers": {"Idempotent-Replayed": {"$ref": "#/components/headers/IdempotentReplayed"}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CtidSerial"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "MODULE_DISABLED, MODULE_NOT_FORMAL"},
          "409": {"$ref": "#/components/responses/Conflict", "description": "CONFLICT (another request under this Idempotency-Key), IDEMPOTENCY_IN_PROGRESS"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/ctid/verifications": {
      "post": {"operationId": "verifyCtid", "tags": ["ctid"], "summary": "Verify an identity claim sent as a CTID envelope; the answer is an envelope whose plaintext is {bizSerialNum, authResult, resultCode, message, transactionId}",
        "security": [{"accessToken": [], "deviceProof": []}, {"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/deviceId"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CtidEnvelope"}}}},
        "responses": {
          "200": {"description": "The verifier's answer envelope", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CtidEnvelope"}}}},
          "400": {"$ref": "#/components/responses/BadRequest", "description": "INVALID_ENVELOPE: any envelope fault (MAC, key, padding, encoding), always the same body"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "MODULE_DISABLED, MODULE_NOT_FORMAL"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/kiosk/login": {
      "post": {"operationId": "kioskLogin", "tags": ["kiosk"], "summary": "Kiosk 1:N login (module kiosk): frames answering a liveness challenge, or one photo when the app's kiosk liveness is off. A refusal on the face's merits is 200 with success false and its code in error",
        "security": [{"accessToken": [], "deviceProof": []}, {"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"multipart/form-data": {"schema": {"$ref": "#/components/schemas/KioskFrames"}},
          "image/jpeg": {"schema": {"type": "string", "contentMediaType": "image/jpeg"}}, "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}}}},
        "responses": {
          "200": {"description": "The login's result", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KioskLoginResult"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "MODULE_DISABLED, MODULE_NOT_FORMAL"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "423": {"$ref": "#/components/responses/Locked"},
          "429": {"$ref": "#/components/responses/RateLimited"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/kiosk/sessions": {
      "post": {"operationId": "createKioskSession", "tags": ["kiosk"], "summary": "Start a kiosk onboarding session (no body)",
        "security": [{"accessToken": [], "deviceProof": []}, {"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "responses": {
          "201": {"description": "The session and its interview token", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KioskSessionCreated"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "MODULE_DISABLED, MODULE_NOT_FORMAL"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/kiosk/sessions/{interviewId}": {
      "parameters": [{"$ref": "#/components/parameters/interviewId"}, {"$ref": "#/components/parameters/interviewToken"}],
      "get": {"operationId": "getKioskSession", "tags": ["kiosk"], "summary": "The session: state, steps taken, result", "security": [{"interviewToken": []}],
        "responses": {
          "200": {"description": "The session", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KioskSession"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "UNAUTHORIZED: not this session's interview token"},
          "404": {"$ref": "#/components/responses/NotFound"}, "410": {"$ref": "#/components/responses/Gone"},
          "default": {"$ref": "#/components/responses/Unexpected"}}},
      "delete": {"operationId": "cancelKioskSession", "tags": ["kiosk"], "summary": "Cancel the session (event userCancelledSession)", "security": [{"interviewToken": []}],
        "responses": {
          "204": {"description": "Cancelled"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "UNAUTHORIZED: not this session's interview token"},
          "404": {"$ref": "#/components/responses/NotFound"}, "409": {"$ref": "#/components/responses/Conflict"},
          "410": {"$ref": "#/components/responses/Gone"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/kiosk/sessions/{interviewId}/selfie": {
      "parameters": [{"$ref": "#/components/parameters/interviewId"}, {"$ref": "#/components/parameters/interviewToken"}, {"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
      "post": {"operationId": "submitKioskSelfie", "tags": ["kiosk"], "summary": "Selfie burst (challengeId + repeated frame); with the app's kiosk liveness off one photo is enough (one frame field, or an image body). A known face completes the flow as an existing customer",
        "security": [{"accessToken": [], "interviewToken": []}],
        "requestBody": {"required": true, "content": {"multipart/form-data": {"schema": {"$ref": "#/components/schemas/KioskFrames"}},
          "image/jpeg": {"schema": {"type": "string", "contentMediaType": "image/jpeg"}}, "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}}}},
        "responses": {
          "200": {"description": "The session after the step, with its events (a failed check is an event, not an error)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KioskSession"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID, UNAUTHORIZED (interview token)"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "MODULE_DISABLED, MODULE_NOT_FORMAL"},
          "404": {"$ref": "#/components/responses/NotFound"}, "409": {"$ref": "#/components/responses/Conflict", "description": "CONFLICT: the session waits for another step"},
          "410": {"$ref": "#/components/responses/Gone"}, "413": {"$ref": "#/components/responses/PayloadTooLarge"},
          "422": {"$ref": "#/components/responses/Unprocessable", "description": "IMAGE_FORMAT_ERROR, SPOOF_DETECTED (unknown, spent or replayed challenge)"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/kiosk/sessions/{interviewId}/id-front": {
      "parameters": [{"$ref": "#/components/parameters/interviewId"}, {"$ref": "#/components/parameters/interviewToken"}, {"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
      "post": {"operationId": "submitKioskIdFront", "tags": ["kiosk"], "summary": "Photo of the document's front (portrait)", "security": [{"accessToken": [], "interviewToken": []}],
        "requestBody": {"required": true, "content": {"image/jpeg": {"schema": {"type": "string", "contentMediaType": "image/jpeg"}}, "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}},
          "multipart/form-data": {"schema": {"$ref": "#/components/schemas/ImageUpload"}}}},
        "responses": {
          "200": {"description": "The session after the step, with its events", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KioskSession"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID, UNAUTHORIZED (interview token)"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "MODULE_DISABLED, MODULE_NOT_FORMAL"},
          "404": {"$ref": "#/components/responses/NotFound"}, "409": {"$ref": "#/components/responses/Conflict", "description": "CONFLICT: the session waits for another step"},
          "410": {"$ref": "#/components/responses/Gone"}, "413": {"$ref": "#/components/responses/PayloadTooLarge"},
          "415": {"$ref": "#/components/responses/UnsupportedMediaType"}, "422": {"$ref": "#/components/responses/Unprocessable", "description": "IMAGE_FORMAT_ERROR"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/kiosk/sessions/{interviewId}/id-back": {
      "parameters": [{"$ref": "#/components/parameters/interviewId"}, {"$ref": "#/components/parameters/interviewToken"}, {"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
      "post": {"operationId": "submitKioskIdBack", "tags": ["kiosk"], "summary": "Photo of the document's MRZ side; runs OCR, the face match and approval", "security": [{"accessToken": [], "interviewToken": []}],
        "requestBody": {"required": true, "content": {"image/jpeg": {"schema": {"type": "string", "contentMediaType": "image/jpeg"}}, "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}},
          "multipart/form-data": {"schema": {"$ref": "#/components/schemas/ImageUpload"}}}},
        "responses": {
          "200": {"description": "The session after the steps, with their events", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KioskSession"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "ACCESS_TOKEN_INVALID, ACCESS_TOKEN_EXPIRED, DPOP_PROOF_INVALID, UNAUTHORIZED (interview token)"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "MODULE_DISABLED, MODULE_NOT_FORMAL"},
          "404": {"$ref": "#/components/responses/NotFound"}, "409": {"$ref": "#/components/responses/Conflict", "description": "CONFLICT: the session waits for another step"},
          "410": {"$ref": "#/components/responses/Gone"}, "413": {"$ref": "#/components/responses/PayloadTooLarge"},
          "415": {"$ref": "#/components/responses/UnsupportedMediaType"}, "422": {"$ref": "#/components/responses/Unprocessable", "description": "IMAGE_FORMAT_ERROR"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/kiosk/sessions/{interviewId}/event-tickets": {
      "parameters": [{"$ref": "#/components/parameters/interviewId"}, {"$ref": "#/components/parameters/interviewToken"}],
      "post": {"operationId": "createKioskEventTicket", "tags": ["kiosk"], "summary": "A single-use ticket (60 s) that opens the event stream once, for EventSource, which cannot send X-Interview-Token",
        "security": [{"interviewToken": []}],
        "responses": {
          "201": {"description": "The ticket", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KioskEventTicket"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "UNAUTHORIZED: not this session's interview token"},
          "404": {"$ref": "#/components/responses/NotFound"}, "410": {"$ref": "#/components/responses/Gone"},
          "413": {"$ref": "#/components/responses/PayloadTooLarge"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/kiosk/sessions/{interviewId}/events": {
      "parameters": [{"$ref": "#/components/parameters/interviewId"},
        {"name": "X-Interview-Token", "in": "header", "schema": {"type": "string"}, "description": "The session's token; or a ticket instead"},
        {"name": "Last-Event-ID", "in": "header", "schema": {"type": "string", "pattern": "^[0-9]+$"}}, {"name": "lastEventId", "in": "query", "schema": {"type": "string", "pattern": "^[0-9]+$"}},
        {"name": "ticket", "in": "query", "schema": {"type": "string"}, "description": "From POST …/event-tickets, spent on opening (tokens are never accepted in a URL)"}],
      "get": {"operationId": "streamKioskEvents", "tags": ["kiosk"], "summary": "Step events as Server-Sent Events (event names: KioskEventName; data: KioskEventData as JSON); replays after Last-Event-ID, ends after a final event or when the session expires",
        "security": [{"interviewToken": []}, {}],
        "responses": {
          "200": {"description": "The event stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
          "400": {"$ref": "#/components/responses/BadRequest", "description": "INVALID_REQUEST: Last-Event-ID is not an event id"},
          "401": {"$ref": "#/components/responses/Unauthorized", "description": "UNAUTHORIZED: neither this session's interview token nor a live ticket"},
          "404": {"$ref": "#/components/responses/NotFound"}, "410": {"$ref": "#/components/responses/Gone"},
          "429": {"$ref": "#/components/responses/RateLimited", "description": "RATE_LIMITED: this client already has FACEGATE_EVENT_STREAMS_PER_CLIENT streams open"},
          "503": {"$ref": "#/components/responses/ServiceUnavailable", "description": "SERVICE_UNAVAILABLE: this gateway already has FACEGATE_EVENT_STREAMS streams open"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/audit/transactions": {
      "get": {"operationId": "searchTransactions", "tags": ["audit"], "summary": "Search transactions (newest first, cursor pages)", "security": [{"auditorKey": []}],
        "parameters": [
          {"name": "appId", "in": "query", "schema": {"type": "string", "format": "uuid"}}, {"name": "kind", "in": "query", "schema": {"type": "string"}},
          {"name": "outcome", "in": "query", "schema": {"type": "string"}}, {"name": "userId", "in": "query", "schema": {"type": "string", "format": "uuid"}},
          {"name": "deviceId", "in": "query", "schema": {"type": "string"}}, {"name": "from", "in": "query", "schema": {"type": "string", "format": "date-time"}},
          {"name": "to", "in": "query", "schema": {"type": "string", "format": "date-time"}},
          {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}}, {"$ref": "#/components/parameters/cursor"}],
        "responses": {
          "200": {"description": "One page", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TransactionPage"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN: the key does not cover that app"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/audit/transactions.csv": {
      "get": {"operationId": "exportTransactions", "tags": ["audit"], "summary": "Export transactions as CSV (same filters, streamed; the columns of Transaction)", "security": [{"auditorKey": []}],
        "parameters": [
          {"name": "appId", "in": "query", "schema": {"type": "string", "format": "uuid"}}, {"name": "kind", "in": "query", "schema": {"type": "string"}},
          {"name": "outcome", "in": "query", "schema": {"type": "string"}}, {"name": "userId", "in": "query", "schema": {"type": "string", "format": "uuid"}},
          {"name": "deviceId", "in": "query", "schema": {"type": "string"}}, {"name": "from", "in": "query", "schema": {"type": "string", "format": "date-time"}},
          {"name": "to", "in": "query", "schema": {"type": "string", "format": "date-time"}}],
        "responses": {
          "200": {"description": "RFC 4180 CSV with a header row", "content": {"text/csv": {"schema": {"type": "string"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN: the key does not cover that app"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/audit/verify": {
      "get": {"operationId": "verifyTransactionChain", "tags": ["audit"], "summary": "Verify an app's transaction hash chain", "security": [{"auditorKey": []}],
        "parameters": [{"name": "appId", "in": "query", "required": true, "schema": {"type": "string", "format": "uuid"}},
          {"name": "checkpoint", "in": "query", "schema": {"type": "string"}, "description": "A checkpoint kept from GET /v1/audit/checkpoint (or the audit topic): also catches a removed tail or a deleted trail"}],
        "responses": {
          "200": {"description": "The verification", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChainVerification"}}}},
          "400": {"$ref": "#/components/responses/BadRequest", "description": "INVALID_REQUEST: no appId, or a checkpoint this platform did not sign for that app"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN: the key does not cover that app"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/audit/apps": {
      "get": {"operationId": "listAuditedApps", "tags": ["audit"], "summary": "The id and name of every app the key reads (its apps; every app for an operator key or an auditor key with allApps), oldest first, of the first 1,000 apps; deleted apps are not listed", "security": [{"auditorKey": []}],
        "responses": {
          "200": {"description": "The apps", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AuditedAppList"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}, "503": {"$ref": "#/components/responses/ServiceUnavailable"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/v1/audit/checkpoint": {
      "get": {"operationId": "getAuditCheckpoint", "tags": ["audit"], "summary": "The app's chain head (row count and last hash), signed", "security": [{"auditorKey": []}],
        "parameters": [{"name": "appId", "in": "query", "required": true, "schema": {"type": "string", "format": "uuid"}}],
        "responses": {
          "200": {"description": "The checkpoint", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AuditCheckpoint"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"}, "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden", "description": "FORBIDDEN: the key does not cover that app"},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/.well-known/jwks.json": {
      "get": {"operationId": "getJwks", "tags": ["discovery"], "summary": "Token signing keys (Ed25519), to verify tokens offline", "security": [],
        "responses": {"200": {"description": "JWKS", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonWebKeySet"}}}},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/openapi.json": {
      "get": {"operationId": "getOpenApiDocument", "tags": ["discovery"], "summary": "This document", "security": [],
        "responses": {"200": {"description": "OpenAPI 3.1", "content": {"application/json": {"schema": {"type": "object"}}}},
          "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/console": {
      "get": {"operationId": "redirectToConsole", "tags": ["console"], "summary": "Redirects to /console/", "security": [],
        "responses": {"301": {"description": "Location: /console/"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/console/": {
      "get": {"operationId": "getConsole", "tags": ["console"], "summary": "The web console for auditors and operators (static page; it calls this API with the key signed in with)", "security": [],
        "responses": {"200": {"description": "The page", "content": {"text/html": {"schema": {"type": "string"}}}}, "304": {"description": "Not modified (If-None-Match)"},
          "404": {"$ref": "#/components/responses/NotFound", "description": "NOT_FOUND: the console is not installed"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    },
    "/console/{file}": {
      "parameters": [{"name": "file", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-][A-Za-z0-9._-]*$"}}],
      "get": {"operationId": "getConsoleFile", "tags": ["console"], "summary": "A file of the web console (HTML, CSS, JavaScript, images)", "security": [],
        "responses": {"200": {"description": "The file", "content": {"text/html": {"schema": {"type": "string"}},
          "text/css": {"schema": {"type": "string"}}, "text/javascript": {"schema": {"type": "string"}}, "application/json": {"schema": {}},
          "text/plain": {"schema": {"type": "string"}}, "image/svg+xml": {"schema": {"type": "string"}}, "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}},
          "image/x-icon": {"schema": {"type": "string", "contentMediaType": "image/x-icon"}}}}, "304": {"description": "Not modified (If-None-Match)"},
          "404": {"$ref": "#/components/responses/NotFound"}, "default": {"$ref": "#/components/responses/Unexpected"}}}
    }
  }
}
"""#
    }
}
