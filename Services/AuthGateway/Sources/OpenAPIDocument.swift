/// The OpenAPI 3.1 description served at `/openapi.json`. A test checks that its paths and methods
/// are exactly the routes the gateway serves.
enum OpenAPIDocument {
    static let json = #"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "FaceGate API",
    "version": "1.0.0",
    "description": "Face login, identity tokens, operator and auditor API. Errors: {\"error\":{\"code\",\"message\",\"transactionId\"}}. Times are RFC 3339 UTC."
  },
  "servers": [{"url": "http://127.0.0.1:8080"}],
  "components": {
    "securitySchemes": {
      "operatorKey": {"type": "http", "scheme": "bearer", "description": "Operator (admin) key"},
      "auditorKey": {"type": "http", "scheme": "bearer", "description": "Auditor key (or an operator key)"},
      "appServer": {"type": "http", "scheme": "basic", "description": "appId:appSecret"},
      "accessToken": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "Access token from POST /v1/access-tokens"}
    },
    "parameters": {
      "appId": {"name": "appId", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}},
      "userId": {"name": "userId", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}},
      "deviceIdPath": {"name": "deviceId", "in": "path", "required": true, "schema": {"type": "string", "minLength": 1, "maxLength": 128}},
      "deviceId": {"name": "X-Device-Id", "in": "header", "schema": {"type": "string", "minLength": 1, "maxLength": 128},
        "description": "The device on apps with deviceBinding header (required there); only a label on apps with deviceBinding dpop"},
      "dpop": {"name": "DPoP", "in": "header", "schema": {"type": "string"},
        "description": "RFC 9449 proof (ES256, P-256 jwk; claims htm, htu, iat, jti, ath over the access token, dgst over the body), required on apps with deviceBinding dpop: the device is its key's RFC 7638 thumbprint"},
      "credentialId": {"name": "credentialId", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}},
      "cursor": {"name": "cursor", "in": "query", "schema": {"type": "string"}},
      "interviewId": {"name": "interviewId", "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}},
      "interviewToken": {"name": "X-Interview-Token", "in": "header", "schema": {"type": "string"}, "description": "The token issued with the kiosk session"},
      "limit": {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1}}
    },
    "schemas": {
      "DeviceBinding": {"type": "string", "enum": ["dpop", "header"],
        "description": "dpop (new apps): devices are P-256 keys proven on every call (RFC 9449); header: the caller-chosen X-Device-Id, weaker (anyone who learns a device id can claim it)"},
      "DeviceBindingPolicy": {"type": "string", "enum": ["employeeNumber", "appServerTicket", "boundDevice"],
        "description": "What binds a new device key to a user after a face match on a dpop app: the employee number alone (weakest), plus a ticket from the app server (new apps), or plus a ticket from a bound device of the user (the app server's ticket binds only a first key)"},
      "FaceModel": {"type": "string", "enum": ["dlib-resnet-v1", "sface-2021dec"], "description": "The app's face model; new apps get sface-2021dec unless they name one"},
      "Error": {
        "type": "object", "required": ["error"],
        "properties": {"error": {"type": "object", "required": ["code", "message"], "properties": {
          "code": {"type": "string", "enum": ["INVALID_REQUEST", "UNAUTHORIZED", "FORBIDDEN", "NOT_FOUND", "CONFLICT", "PAYLOAD_TOO_LARGE",
            "MODULE_DISABLED", "MODULE_NOT_FORMAL", "ACCESS_TOKEN_INVALID", "ACCESS_TOKEN_EXPIRED", "NO_FACE", "NO_MATCH_FACE",
            "IMAGE_FORMAT_ERROR", "EMPLOYEE_NUMBER_MISMATCH", "SPOOF_DETECTED", "AMBIGUOUS_MATCH", "LOW_QUALITY", "DUPLICATE_FACE",
            "AUTHENTICATION_FAILED", "CREDENTIAL_LOCKED", "CREDENTIAL_NOT_ENROLLED", "RATE_LIMITED", "SERVICE_UNAVAILABLE",
            "INVALID_ENVELOPE", "IDENTITY_TOKEN_INVALID", "IDENTITY_TOKEN_EXPIRED", "IDENTITY_TOKEN_USED", "CONFIRMATION_INVALID",
            "DOCUMENT_UNREADABLE", "DOCUMENT_EXPIRED", "DOCUMENT_INVALID", "DOCUMENT_ALREADY_REGISTERED", "NO_PORTRAIT", "FACE_MISMATCH",
            "SESSION_EXPIRED", "TOO_MANY_ATTEMPTS", "APPROVAL_DENIED", "DPOP_PROOF_INVALID", "BINDING_TICKET_INVALID", "INTERNAL"]},
          "message": {"type": "string"},
          "transactionId": {"type": "string", "format": "uuid"}}}}
      },
      "ModuleState": {"type": "string", "enum": ["disabled", "trial", "formal"]},
      "Modules": {"type": "object", "properties": {
        "faceLogin": {"$ref": "#/components/schemas/ModuleState"}, "ctid": {"$ref": "#/components/schemas/ModuleState"},
        "kiosk": {"$ref": "#/components/schemas/ModuleState"}, "deviceAuth": {"$ref": "#/components/schemas/ModuleState"}}},
      "Liveness": {"type": "object", "properties": {
        "faceLogin": {"type": "string", "enum": ["off", "active"]}, "kiosk": {"type": "string", "enum": ["off", "active"]}}},
      "KioskApproval": {"type": "object", "description": "Extra rules for approving a new kiosk customer; absent fields add no rule.", "properties": {
        "faceMatchThreshold": {"type": "number", "minimum": 0.2, "maximum": 0.8}, "minimumAge": {"type": "integer"},
        "documentTypes": {"type": "array", "items": {"type": "string"}}, "issuingStates": {"type": "array", "items": {"type": "string"}}}},
      "KioskSession": {"type": "object", "required": ["interviewId", "state", "steps", "expiresAt"], "properties": {
        "interviewId": {"type": "string", "format": "uuid"},
        "state": {"type": "string", "enum": ["selfie", "idFront", "idBack", "faceMatch", "approval", "completed", "failed", "cancelled", "expired"]},
        "steps": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "success": {"type": "boolean"}, "at": {"type": "string", "format": "date-time"}}}},
        "result": {"type": ["object", "null"], "properties": {"success": {"type": "boolean"}, "customerUUID": {"type": "string", "format": "uuid"},
          "token": {"type": "string"}, "name": {"type": "string"}, "existingUser": {"type": "boolean"}}},
        "expiresAt": {"type": "string", "format": "date-time"},
        "events": {"type": "array", "description": "Step calls: the events this call produced", "items": {"type": "object", "properties": {
          "seq": {"type": "integer"}, "event": {"type": "string"}, "data": {"type": "object"}, "at": {"type": "string", "format": "date-time"}}}}}},
      "Quotas": {"type": "object", "description": "Limits of the trial state (defaults: 1000 calls a day per module, 100 enrolled users).",
        "properties": {"dailyCalls": {"type": "integer"}, "gallerySize": {"type": "integer"}}},
      "App": {"type": "object", "properties": {
        "appId": {"type": "string", "format": "uuid"}, "name": {"type": "string"}, "modules": {"$ref": "#/components/schemas/Modules"},
        "faceModel": {"$ref": "#/components/schemas/FaceModel"},
        "matchThreshold": {"type": "number", "description": "Euclidean distance between the face model's vectors (sface-2021dec: unit vectors, cosine = 1 − d²/2)"},
        "liveness": {"$ref": "#/components/schemas/Liveness"},
        "deviceBinding": {"$ref": "#/components/schemas/DeviceBinding"}, "deviceBindingPolicy": {"$ref": "#/components/schemas/DeviceBindingPolicy"},
        "kioskApproval": {"$ref": "#/components/schemas/KioskApproval"}, "quotas": {"$ref": "#/components/schemas/Quotas"},
        "createdAt": {"type": "string", "format": "date-time"}}},
      "User": {"type": "object", "properties": {
        "userId": {"type": "string", "format": "uuid"}, "employeeNumber": {"type": "string"}, "name": {"type": "string"},
        "faces": {"type": "integer"}, "createdAt": {"type": "string", "format": "date-time"}}},
      "Quality": {"type": "object", "properties": {
        "faceWidth": {"type": "integer"}, "sharpness": {"type": "number"}, "brightness": {"type": "number"}, "yaw": {"type": "number"}}},
      "LoginSuccess": {"type": "object", "required": ["status", "identityToken", "expiresIn", "transactionId", "userId"], "properties": {
        "status": {"const": "SUCCESS"}, "identityToken": {"type": "string"}, "expiresIn": {"type": "integer"},
        "transactionId": {"type": "string", "format": "uuid"}, "userId": {"type": "string", "format": "uuid"}}},
      "ConfirmRequired": {"type": "object", "required": ["status", "confirmationId", "transactionId"], "properties": {
        "status": {"const": "CONFIRM_REQUIRED"}, "confirmationId": {"type": "string", "format": "uuid"},
        "transactionId": {"type": "string", "format": "uuid"}, "expiresIn": {"type": "integer"}}},
      "DeviceCredentialPolicy": {"type": "string", "enum": ["biometryCurrentSet", "biometryAny", "devicePasscode"]},
      "CredentialRegistered": {"type": "object", "required": ["credentialId"], "properties": {"credentialId": {"type": "string", "format": "uuid"}}},
      "DeviceCredential": {"type": "object", "properties": {
        "credentialId": {"type": "string", "format": "uuid"}, "userId": {"type": "string", "format": "uuid"}, "deviceId": {"type": "string"},
        "policy": {"$ref": "#/components/schemas/DeviceCredentialPolicy"}, "counter": {"type": "integer"}, "hasAttestation": {"type": "boolean"},
        "createdAt": {"type": "string", "format": "date-time"}, "lastUsedAt": {"type": ["string", "null"], "format": "date-time"},
        "flaggedAt": {"type": ["string", "null"], "format": "date-time"}, "revokedAt": {"type": ["string", "null"], "format": "date-time"}}},
      "Transaction": {"type": "object", "properties": {
        "transactionId": {"type": "string", "format": "uuid"}, "appId": {"type": "string", "format": "uuid"}, "kind": {"type": "string"},
        "outcome": {"type": "string"}, "userId": {"type": ["string", "null"]}, "deviceId": {"type": ["string", "null"]},
        "clientIp": {"type": ["string", "null"]}, "score": {"type": ["number", "null"]}, "latencyMs": {"type": "integer"},
        "createdAt": {"type": "string", "format": "date-time"}}}
    },
    "responses": {
      "Error": {"description": "Error envelope", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    }
  },
  "paths": {
    "/v1/apps": {
      "post": {"summary": "Create an app (secrets are shown only here)", "security": [{"operatorKey": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["name"], "properties": {
          "name": {"type": "string"}, "modules": {"$ref": "#/components/schemas/Modules"}, "faceModel": {"$ref": "#/components/schemas/FaceModel"},
          "matchThreshold": {"type": "number"},
          "liveness": {"$ref": "#/components/schemas/Liveness"}, "kioskApproval": {"$ref": "#/components/schemas/KioskApproval"},
          "deviceBinding": {"$ref": "#/components/schemas/DeviceBinding"}, "deviceBindingPolicy": {"$ref": "#/components/schemas/DeviceBindingPolicy"},
          "quotas": {"$ref": "#/components/schemas/Quotas"}}}}}},
        "responses": {"201": {"description": "Created: the App plus appSecret and ctidKey (base64 of 16 bytes)"}, "default": {"$ref": "#/components/responses/Error"}}},
      "get": {"summary": "List apps", "security": [{"operatorKey": []}],
        "responses": {"200": {"description": "{items: [App]}"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/apps/{appId}": {
      "parameters": [{"$ref": "#/components/parameters/appId"}],
      "get": {"summary": "Get an app", "security": [{"operatorKey": []}],
        "responses": {"200": {"description": "App", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/App"}}}}, "default": {"$ref": "#/components/responses/Error"}}},
      "patch": {"summary": "Change modules, threshold, liveness policy, device binding or quotas", "security": [{"operatorKey": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {
          "modules": {"$ref": "#/components/schemas/Modules"}, "matchThreshold": {"type": "number"},
          "liveness": {"$ref": "#/components/schemas/Liveness"}, "kioskApproval": {"$ref": "#/components/schemas/KioskApproval"},
          "deviceBinding": {"$ref": "#/components/schemas/DeviceBinding"}, "deviceBindingPolicy": {"$ref": "#/components/schemas/DeviceBindingPolicy"},
          "quotas": {"$ref": "#/components/schemas/Quotas"}}}}}},
        "responses": {"200": {"description": "App", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/App"}}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/apps/{appId}/secret": {
      "parameters": [{"$ref": "#/components/parameters/appId"}],
      "post": {"summary": "Rotate the app secret; the previous one stays valid for the grace period", "security": [{"operatorKey": []}],
        "responses": {"201": {"description": "{appId, appSecret, previousSecretValidForSeconds}"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/apps/{appId}/users": {
      "parameters": [{"$ref": "#/components/parameters/appId"}],
      "post": {"summary": "Create a user", "security": [{"operatorKey": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["employeeNumber", "name"], "properties": {
          "employeeNumber": {"type": "string"}, "name": {"type": "string"}}}}}},
        "responses": {"201": {"description": "{userId, employeeNumber, name}"}, "409": {"$ref": "#/components/responses/Error"}, "default": {"$ref": "#/components/responses/Error"}}},
      "get": {"summary": "List users (cursor pages)", "security": [{"operatorKey": []}],
        "parameters": [{"$ref": "#/components/parameters/cursor"}, {"$ref": "#/components/parameters/limit"}],
        "responses": {"200": {"description": "{items: [User], nextCursor}"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/apps/{appId}/users/{userId}": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/userId"}],
      "get": {"summary": "Get a user", "security": [{"operatorKey": []}],
        "responses": {"200": {"description": "User", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/User"}}}}, "default": {"$ref": "#/components/responses/Error"}}},
      "delete": {"summary": "Delete a user; templates are erased from storage and every matcher", "security": [{"operatorKey": []}],
        "responses": {"204": {"description": "Deleted"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/apps/{appId}/users/{userId}/faces": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/userId"}],
      "post": {"summary": "Enroll a face from a photo (quality gate, duplicate check)", "security": [{"operatorKey": []}],
        "requestBody": {"required": true, "content": {"image/jpeg": {}, "image/png": {}, "multipart/form-data": {"schema": {"type": "object", "properties": {"image": {"type": "string", "format": "binary"}}}}}},
        "responses": {"201": {"description": "{templateId, quality}"}, "422": {"$ref": "#/components/responses/Error"}, "default": {"$ref": "#/components/responses/Error"}}},
      "get": {"summary": "The user's enrolled templates with the quality measured at enrollment", "security": [{"operatorKey": []}],
        "responses": {"200": {"description": "{items: [{templateId, model, quality, createdAt}]}", "content": {"application/json": {"schema": {"type": "object", "properties": {
          "items": {"type": "array", "items": {"type": "object", "properties": {"templateId": {"type": "string", "format": "uuid"},
            "model": {"$ref": "#/components/schemas/FaceModel"},
            "quality": {"$ref": "#/components/schemas/Quality"}, "createdAt": {"type": "string", "format": "date-time"}}}}}}}}},
          "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/apps/{appId}/devices/{deviceId}/reset": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/deviceIdPath"}],
      "post": {"summary": "Clear a device's failed-attempt counters and lock", "security": [{"operatorKey": []}],
        "responses": {"204": {"description": "Reset"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/apps/{appId}/users/{userId}/reset": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/userId"}],
      "post": {"summary": "Clear the lock on binding new devices to a user (set after repeated wrong employee numbers)", "security": [{"operatorKey": []}],
        "responses": {"204": {"description": "Reset"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/auditors": {
      "post": {"summary": "Create an auditor key, optionally limited to some apps", "security": [{"operatorKey": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["name"], "properties": {
          "name": {"type": "string"}, "appIds": {"type": "array", "items": {"type": "string", "format": "uuid"}}}}}}},
        "responses": {"201": {"description": "{auditorId, auditorKey, appIds}"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/access-tokens": {
      "post": {"summary": "Issue an access token for the app's client apps", "security": [{"appServer": []}],
        "responses": {"200": {"description": "{accessToken, tokenType: Bearer, expiresIn}"}, "401": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/identity/exchange": {
      "post": {"summary": "Exchange an identity token (single use) for the verified user", "security": [{"appServer": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["identityToken"], "properties": {"identityToken": {"type": "string"}}}}}},
        "responses": {"200": {"description": "{userId, employeeNumber, name, appId, deviceId, method, transactionId}"}, "401": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/face-login": {
      "post": {"summary": "Log in with a photo (1:N); with the app's liveness.faceLogin active, with a burst answering a liveness challenge instead (multipart challengeId + 2–12 frame fields; one image is refused with INVALID_REQUEST)", "security": [{"accessToken": []}],
        "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"image/jpeg": {}, "image/png": {}, "multipart/form-data": {"schema": {"type": "object", "properties": {"image": {"type": "string", "format": "binary"},
          "challengeId": {"type": "string"}, "frame": {"type": "array", "minItems": 2, "maxItems": 12, "items": {"type": "string", "format": "binary"}}}}}}},
        "responses": {"200": {"description": "SUCCESS with an identity token, or CONFIRM_REQUIRED on a new device",
          "content": {"application/json": {"schema": {"oneOf": [{"$ref": "#/components/schemas/LoginSuccess"}, {"$ref": "#/components/schemas/ConfirmRequired"}]}}}},
          "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"},
          "422": {"$ref": "#/components/responses/Error"}, "423": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"},
          "503": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/liveness/challenges": {
      "get": {"summary": "A liveness challenge: 2–3 random actions to perform in front of the camera; single use, bound to the app and device, 120 s", "security": [{"accessToken": []}],
        "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "responses": {"200": {"description": "{challengeId, actions, expiresIn}", "content": {"application/json": {"schema": {"type": "object", "required": ["challengeId", "actions", "expiresIn"], "properties": {
          "challengeId": {"type": "string"}, "actions": {"type": "array", "minItems": 2, "maxItems": 3, "items": {"type": "string", "enum": ["BLINK", "TURN_LEFT", "TURN_RIGHT"]}},
          "expiresIn": {"type": "integer"}}}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/kiosk/login": {
      "post": {"summary": "Kiosk 1:N login with active liveness (module kiosk): frames answering a challenge (not needed when the app's liveness.kiosk is off). A refusal on the face's merits is 200 with success false and error SPOOF_DETECTED, NO_FACE, NO_MATCH_FACE, AMBIGUOUS_MATCH or IMAGE_FORMAT_ERROR", "security": [{"accessToken": []}],
        "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"multipart/form-data": {"schema": {"type": "object", "required": ["frame"], "properties": {
          "challengeId": {"type": "string"}, "frame": {"type": "array", "minItems": 2, "maxItems": 12, "items": {"type": "string", "format": "binary"}}}}}}},
        "responses": {"200": {"description": "{success, customerUUID, token, interviewId, interviewToken, transactionId, spoofAttempt, firstName, error}; token: an identity token (method kiosk)",
          "content": {"application/json": {"schema": {"type": "object", "required": ["success", "transactionId", "spoofAttempt"], "properties": {
            "success": {"type": "boolean"}, "customerUUID": {"type": ["string", "null"], "format": "uuid"}, "token": {"type": ["string", "null"]},
            "interviewId": {"type": ["string", "null"], "format": "uuid"}, "interviewToken": {"type": ["string", "null"], "description": "always null: the onboarding session's token is never handed to a login"}, "transactionId": {"type": "string", "format": "uuid"},
            "spoofAttempt": {"type": "boolean"}, "firstName": {"type": ["string", "null"]}, "error": {"type": ["string", "null"]}}}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"},
          "413": {"$ref": "#/components/responses/Error"}, "423": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"},
          "503": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/face-login/confirm": {
      "post": {"summary": "Confirm a new device with the employee number", "security": [{"accessToken": []}],
        "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["confirmationId", "employeeNumber"], "properties": {
          "confirmationId": {"type": "string", "format": "uuid"}, "employeeNumber": {"type": "string"},
          "bindingTicket": {"type": "string", "description": "required on dpop apps whose deviceBindingPolicy is appServerTicket or boundDevice"}}}}}},
        "responses": {"200": {"description": "SUCCESS", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LoginSuccess"}}}},
          "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"},
          "409": {"$ref": "#/components/responses/Error"}, "422": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/device-bindings": {
      "post": {"summary": "A one-time ticket binding one new device key to one user, for the confirmation of a face login. Asked by the app server (Basic auth), or by a device key already bound to the user (Bearer access token + DPoP proof)",
        "security": [{"appServer": []}, {"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {
          "userId": {"type": "string", "format": "uuid"}, "employeeNumber": {"type": "string"}}, "description": "the user; a bound device may send {} when it is bound to one user"}}}},
        "responses": {"201": {"description": "The ticket", "content": {"application/json": {"schema": {"type": "object", "required": ["bindingTicket", "userId", "expiresIn"], "properties": {
          "bindingTicket": {"type": "string"}, "userId": {"type": "string", "format": "uuid"}, "expiresIn": {"type": "integer"}}}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"},
          "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/device-credentials": {
      "post": {"summary": "Register a device biometric key (module deviceAuth); proof of user: a fresh, unused face-login identity token of this app and device, consumed here. Replaces the user's previous credential on this device. The attestation is stored, not verified. Error messages end with (fallback: faceLogin) or (fallback: none).",
        "security": [{"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["identityToken", "publicKey", "policy"], "properties": {
          "identityToken": {"type": "string"}, "publicKey": {"type": "string", "description": "base64 SubjectPublicKeyInfo DER of a P-256 key"},
          "policy": {"$ref": "#/components/schemas/DeviceCredentialPolicy"}, "attestation": {"type": "string", "description": "base64, at most 16 KiB; stored, not verified"}}}}}},
        "responses": {"201": {"description": "{credentialId}", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CredentialRegistered"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"},
          "409": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/device-credentials/challenges": {
      "post": {"summary": "A single-use challenge for one credential (32 random bytes, base64url; 60 s)", "security": [{"accessToken": []}],
        "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["credentialId"], "properties": {
          "credentialId": {"type": "string", "format": "uuid"}}}}}},
        "responses": {"200": {"description": "{challenge, expiresIn, deviceId}", "content": {"application/json": {"schema": {"type": "object", "properties": {
          "challenge": {"type": "string"}, "expiresIn": {"type": "integer"}, "deviceId": {"type": "string", "description": "the device identity the assertion signs"}}}}}},
          "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "422": {"$ref": "#/components/responses/Error"},
          "423": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/device-credentials/assertions": {
      "post": {"summary": "Log in with a device key: base64 DER ECDSA/SHA-256 signature over the UTF-8 of facegate.device-assertion.v1\\n{appId}\\n{deviceId}\\n{credentialId}\\n{challenge}\\n{counter}. A counter that does not advance (once non-zero) blocks the credential until it is registered again.",
        "security": [{"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["credentialId", "challenge", "counter", "signature"], "properties": {
          "credentialId": {"type": "string", "format": "uuid"}, "challenge": {"type": "string"}, "counter": {"type": "integer", "minimum": 0},
          "signature": {"type": "string"}}}}}},
        "responses": {"200": {"description": "SUCCESS with an identity token (method device_biometric)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LoginSuccess"}}}},
          "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "422": {"$ref": "#/components/responses/Error"},
          "423": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/device-credentials/{credentialId}": {
      "parameters": [{"$ref": "#/components/parameters/credentialId"}],
      "delete": {"summary": "Revoke this device's credential (immediately)", "security": [{"accessToken": []}],
        "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "responses": {"204": {"description": "Revoked"}, "404": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/apps/{appId}/users/{userId}/device-credentials": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/userId"}],
      "post": {"summary": "Register a device biometric key for a user (operator)", "security": [{"operatorKey": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["deviceId", "publicKey", "policy"], "properties": {
          "deviceId": {"type": "string", "minLength": 1, "maxLength": 128}, "publicKey": {"type": "string"},
          "policy": {"$ref": "#/components/schemas/DeviceCredentialPolicy"}, "attestation": {"type": "string"}}}}}},
        "responses": {"201": {"description": "{credentialId}", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CredentialRegistered"}}}},
          "default": {"$ref": "#/components/responses/Error"}}},
      "get": {"summary": "List a user's device credentials, revoked ones included", "security": [{"operatorKey": []}],
        "responses": {"200": {"description": "{items: [DeviceCredential]}", "content": {"application/json": {"schema": {"type": "object", "properties": {
          "items": {"type": "array", "items": {"$ref": "#/components/schemas/DeviceCredential"}}}}}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/apps/{appId}/device-credentials/{credentialId}": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/credentialId"}],
      "delete": {"summary": "Revoke a device credential (immediately)", "security": [{"operatorKey": []}],
        "responses": {"204": {"description": "Revoked"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/apps/{appId}/device-credentials/{credentialId}/reset": {
      "parameters": [{"$ref": "#/components/parameters/appId"}, {"$ref": "#/components/parameters/credentialId"}],
      "post": {"summary": "Clear a credential's failed-attempt counters and lock (a blocked counter needs a new registration)", "security": [{"operatorKey": []}],
        "responses": {"204": {"description": "Reset"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/ctid/serial-numbers": {
      "post": {"summary": "Issue a single-use CTID serial number and challenge code bound to the app and auth mode", "security": [{"accessToken": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["authMode"], "properties": {
          "authMode": {"type": "string", "enum": ["0x40", "0x42", "0x10", "0x12"]}}}}}},
        "responses": {"200": {"description": "{bizSerialNum, randNum, expiresIn}", "content": {"application/json": {"schema": {"type": "object", "properties": {
          "bizSerialNum": {"type": "string"}, "randNum": {"type": "string"}, "expiresIn": {"type": "integer"}}}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/ctid/verifications": {
      "post": {"summary": "Verify an identity claim sent as a CTID envelope (see README: CTID envelope); the answer is an envelope whose plaintext is {bizSerialNum, authResult, resultCode, message, transactionId}", "security": [{"accessToken": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["version", "appId", "iv", "data", "mac"], "properties": {"version": {"type": "string", "enum": ["v1"]}, "appId": {"type": "string", "format": "uuid"}, "iv": {"type": "string", "contentEncoding": "base64"}, "data": {"type": "string", "contentEncoding": "base64"}, "mac": {"type": "string", "contentEncoding": "base64"}}}}}},
        "responses": {"200": {"description": "The verifier's answer envelope", "content": {"application/json": {"schema": {"type": "object", "required": ["version", "appId", "iv", "data", "mac"], "properties": {"version": {"type": "string", "enum": ["v1"]}, "appId": {"type": "string", "format": "uuid"}, "iv": {"type": "string", "contentEncoding": "base64"}, "data": {"type": "string", "contentEncoding": "base64"}, "mac": {"type": "string", "contentEncoding": "base64"}}}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/apps/{appId}/ctid-registry": {
      "post": {"summary": "Add or replace a trusted identity record of the app (number hashed, name sealed, portrait kept as a sealed template)", "security": [{"operatorKey": []}],
        "parameters": [{"$ref": "#/components/parameters/appId"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["number", "name", "validDateStart", "validDateEnd"], "properties": {
          "number": {"type": "string", "pattern": "^[0-9]{17}[0-9Xx]$"}, "name": {"type": "string"}, "validDateStart": {"type": "string", "pattern": "^[0-9]{8}$"},
          "validDateEnd": {"type": "string", "description": "YYYYMMDD or 长期"}, "photoData": {"type": "string", "contentEncoding": "base64"}}}}}},
        "responses": {"201": {"description": "{number (masked), registered}"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/kiosk/sessions": {
      "post": {"summary": "Start a kiosk onboarding session", "security": [{"accessToken": []}], "parameters": [{"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
        "responses": {"201": {"description": "{interviewId, interviewToken, expiresIn}"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/kiosk/sessions/{interviewId}": {
      "parameters": [{"$ref": "#/components/parameters/interviewId"}, {"$ref": "#/components/parameters/interviewToken"}],
      "get": {"summary": "The session: state, steps taken, result", "responses": {"200": {"description": "Session",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KioskSession"}}}}, "default": {"$ref": "#/components/responses/Error"}}},
      "delete": {"summary": "Cancel the session (event userCancelledSession)", "responses": {"204": {"description": "Cancelled"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/kiosk/sessions/{interviewId}/selfie": {
      "parameters": [{"$ref": "#/components/parameters/interviewId"}, {"$ref": "#/components/parameters/interviewToken"}, {"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
      "post": {"summary": "Selfie burst (multipart: challengeId + repeated frame); with the app's kiosk liveness off one photo is enough (one frame field, or an image/jpeg or image/png body). A known face completes the flow as an existing customer", "security": [{"accessToken": []}],
        "responses": {"200": {"description": "Session after the step, with its events", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KioskSession"}}}},
          "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/kiosk/sessions/{interviewId}/id-front": {
      "parameters": [{"$ref": "#/components/parameters/interviewId"}, {"$ref": "#/components/parameters/interviewToken"}, {"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
      "post": {"summary": "Photo of the document's front (portrait)", "security": [{"accessToken": []}],
        "requestBody": {"required": true, "content": {"image/jpeg": {}, "image/png": {}, "multipart/form-data": {}}},
        "responses": {"200": {"description": "Session after the step, with its events", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KioskSession"}}}},
          "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/kiosk/sessions/{interviewId}/id-back": {
      "parameters": [{"$ref": "#/components/parameters/interviewId"}, {"$ref": "#/components/parameters/interviewToken"}, {"$ref": "#/components/parameters/deviceId"}, {"$ref": "#/components/parameters/dpop"}],
      "post": {"summary": "Photo of the document's MRZ side; runs OCR, the face match and approval", "security": [{"accessToken": []}],
        "requestBody": {"required": true, "content": {"image/jpeg": {}, "image/png": {}, "multipart/form-data": {}}},
        "responses": {"200": {"description": "Session after the steps, with their events", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KioskSession"}}}},
          "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/kiosk/sessions/{interviewId}/event-tickets": {
      "parameters": [{"$ref": "#/components/parameters/interviewId"}, {"$ref": "#/components/parameters/interviewToken"}],
      "post": {"summary": "A single-use ticket (60 s) that opens the event stream once, for EventSource, which cannot send X-Interview-Token",
        "responses": {"201": {"description": "The ticket", "content": {"application/json": {"schema": {"type": "object", "required": ["ticket", "expiresIn"],
          "properties": {"ticket": {"type": "string"}, "expiresIn": {"type": "integer"}}}}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/kiosk/sessions/{interviewId}/events": {
      "parameters": [{"$ref": "#/components/parameters/interviewId"},
        {"name": "X-Interview-Token", "in": "header", "schema": {"type": "string"}, "description": "The session's token; or instead a ticket"},
        {"name": "Last-Event-ID", "in": "header", "schema": {"type": "string"}}, {"name": "lastEventId", "in": "query", "schema": {"type": "string"}},
        {"name": "ticket", "in": "query", "schema": {"type": "string"}, "description": "From POST …/event-tickets, spent on opening (tokens are never accepted in a URL)"}],
      "get": {"summary": "Step events as Server-Sent Events (selfieScanCompleted, idFrontCompleted, idBackCompleted, idProcessed, faceMatchCompleted, kioskFlowCompleted, kioskError, userCancelledSession); replays after Last-Event-ID",
        "responses": {"200": {"description": "text/event-stream", "content": {"text/event-stream": {}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/audit/transactions": {
      "get": {"summary": "Search transactions (newest first, cursor pages)", "security": [{"auditorKey": []}],
        "parameters": [
          {"name": "appId", "in": "query", "schema": {"type": "string", "format": "uuid"}}, {"name": "kind", "in": "query", "schema": {"type": "string"}},
          {"name": "outcome", "in": "query", "schema": {"type": "string"}}, {"name": "userId", "in": "query", "schema": {"type": "string", "format": "uuid"}},
          {"name": "deviceId", "in": "query", "schema": {"type": "string"}}, {"name": "from", "in": "query", "schema": {"type": "string", "format": "date-time"}},
          {"name": "to", "in": "query", "schema": {"type": "string", "format": "date-time"}},
          {"$ref": "#/components/parameters/limit"}, {"$ref": "#/components/parameters/cursor"}],
        "responses": {"200": {"description": "{items: [Transaction], nextCursor}"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/audit/transactions.csv": {
      "get": {"summary": "Export transactions as CSV (same filters, streamed)", "security": [{"auditorKey": []}],
        "responses": {"200": {"description": "text/csv", "content": {"text/csv": {}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/audit/verify": {
      "get": {"summary": "Verify an app's transaction hash chain", "security": [{"auditorKey": []}],
        "parameters": [{"name": "appId", "in": "query", "required": true, "schema": {"type": "string", "format": "uuid"}}],
        "responses": {"200": {"description": "{appId, ok, checked, firstBrokenTransactionId}"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/.well-known/jwks.json": {
      "get": {"summary": "Token signing keys (Ed25519, JWKS)", "responses": {"200": {"description": "JWKS"}}}
    },
    "/openapi.json": {
      "get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI 3.1"}}}
    },
    "/console": {
      "get": {"summary": "Redirects to /console/", "responses": {"301": {"description": "Location: /console/"}}}
    },
    "/console/": {
      "get": {"summary": "The web console for auditors and operators (static page; it calls this API with the key signed in with)",
        "responses": {"200": {"description": "text/html"}}}
    },
    "/console/{file}": {
      "parameters": [{"name": "file", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-][A-Za-z0-9._-]*$"}}],
      "get": {"summary": "A file of the web console (HTML, CSS, JavaScript)", "responses": {"200": {"description": "The file"}, "404": {"$ref": "#/components/responses/Error"}}}
    }
  }
}
"""#
}
