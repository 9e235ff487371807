import AuditRecords
import AppRecords
import FaceGateCore
import IdentityRecords
import ServiceKit

// What the contract types' fields cannot say about themselves: descriptions, formats (a UUID carried as a string), bounds,
// values that are sent as null. A note on a field a type does not have fails the document's generation.

extension AppAdministration.NewApp {
    /// A new app's settings are a PATCH's (`Changes`), flat in the same object.
    static let schemaNotes: [String: DocumentValue] = AppAdministration.Changes.schemaNotes.merging([
        "name": ["minLength": 1, "maxLength": 200],
        "matchThreshold": ["description": "In the face model's units (Euclidean distance); the model's default when absent"],
        "keepEnrollmentPhotos": ["default": false, "description": AppRecord.Public.schemaNotes["keepEnrollmentPhotos"]!["description"]!],
    ]) { $1 }
}

extension FaceModel {
    static let schemaNotes: [String: DocumentValue] = [
        "": ["description": "The app's face model; new apps get sface-2021dec unless they name one"],
    ]
}

extension ModulesPatch {
    static let schemaNotes: [String: DocumentValue] = [
        "": [
            "additionalProperties": false,
            "description": "Modules to change; absent ones keep their state (new apps: trial, kiosk disabled); a module name not listed here is refused with 400 INVALID_REQUEST",
        ],
    ]
}

extension LivenessPolicy {
    static let schemaNotes: [String: DocumentValue] = [
        "": ["description": "Defaults: faceLogin off, kiosk active"],
    ]
}

extension DeviceBinding {
    static let schemaNotes: [String: DocumentValue] = [
        "": [
            "description": "dpop (default for new apps): devices are P-256 keys proven on every call (RFC 9449); header: the caller-chosen X-Device-Id, weaker (anyone who learns a device id can claim it)",
        ],
    ]
}

extension DeviceBindingPolicy {
    static let schemaNotes: [String: DocumentValue] = [
        "": [
            "description": "What binds a new device key to a user after a face match on a dpop app: the employee number alone (weakest), plus a ticket from the app server (default), or plus a ticket from a bound device of the user (the app server's ticket binds only a first key)",
        ],
    ]
}

extension KioskApprovalPolicy {
    static let schemaNotes: [String: DocumentValue] = [
        "": ["description": "Extra rules for approving a new kiosk customer; absent fields add no rule"],
    ]
}

extension Quotas {
    static let schemaNotes: [String: DocumentValue] = [
        "": ["description": "Limits of the trial state (defaults: 1000 calls a day per module, 100 enrolled users)"],
        "dailyCalls": ["minimum": 0],
        "gallerySize": ["minimum": 0],
    ]
}

extension AppAdministration.Created {
    static let schemaNotes: [String: DocumentValue] = [
        "": ["description": "The new app with its secrets, shown only here"],
        "appId": ["type": "string", "format": "uuid"],
        "ctidKey": ["contentEncoding": "base64", "description": "The CTID institution key, 16 bytes"],
        "estimatedFalseMatchRate": AppRecord.Public.schemaNotes["estimatedFalseMatchRate"]!,
    ]
}

extension AppRecord.Public {
    static let schemaNotes: [String: DocumentValue] = [
        "appId": ["type": "string", "format": "uuid"],
        "matchThreshold": [
            "description": "Euclidean distance between the face model's vectors (sface-2021dec: unit vectors, cosine = 1 − d²/2)",
        ],
        "estimatedFalseMatchRate": [
            "description": "The per-comparison false-match rate the threshold stands for by the model's calibration; absent beyond its table (1e-8 … 1e-3)",
        ],
        "galleryTemplates": [
            "minimum": 0,
            "description": "The app's templates of its face model, which a search compares a probe with (GET and PATCH of one app; absent from the list)",
        ],
        "estimatedFalsePositiveIdentificationRate": [
            "description": "The chance that the face of someone not enrolled is identified as someone at the current gallery size: estimatedFalseMatchRate over galleryTemplates comparisons (1 − (1 − FMR)^N); absent where either is",
        ],
        "keepEnrollmentPhotos": [
            "description": "Keep each enrollment photo whose subject consented (photoConsent=true), sealed and bound to its template, so a move to another face model can re-embed it; erased with the template; never returned",
        ],
    ]
}

extension AppAdministration.Changes {
    static let schemaNotes: [String: DocumentValue] = [
        "falseMatchRate": [
            "minimum": 1e-08,
            "maximum": 0.001,
            "description": "Instead of matchThreshold: a per-comparison false-match rate target (e.g. 1e-5 for 1 in 100,000), turned into the model's threshold by its calibration table",
        ],
        "falsePositiveIdentificationRate": [
            "exclusiveMinimum": 0,
            "exclusiveMaximum": 1,
            "description": "Instead of matchThreshold or falseMatchRate: the chance that the face of someone not enrolled is identified as someone, over forGallerySize templates (1 − (1 − FMR)^N, comparisons taken as independent), turned into the per-comparison rate and then the model's threshold; refused when that rate falls outside the calibration (1e-8 … 1e-3)",
        ],
        "forGallerySize": [
            "minimum": 1,
            "maximum": 100000000,
            "description": "With falsePositiveIdentificationRate: the templates it is for; the larger of the app's templates now and 1,000 when absent",
        ],
        "keepEnrollmentPhotos": ["description": "Turning it off keeps the photos already kept (they go with their templates)"],
    ]
}

extension OperatorRoutes.RotateSecret {
    static let schemaNotes: [String: DocumentValue] = [
        "previousSecretValidFor": [
            "minimum": 0,
            "maximum": 86400,
            "description": "Seconds the previous secret keeps minting access tokens and exchanging identity tokens (nothing else); 0 cuts it off now. Default FACEGATE_SECRET_GRACE_SECONDS (3600)",
        ],
    ]
}

extension AppAdministration.Rotated {
    static let schemaNotes: [String: DocumentValue] = [
        "appId": ["type": "string", "format": "uuid"],
    ]
}

extension OperatorRoutes.NewUser {
    static let schemaNotes: [String: DocumentValue] = [
        "employeeNumber": ["minLength": 1, "maxLength": 64],
        "name": ["minLength": 1, "maxLength": 200],
    ]
}

extension UserAdministration.Created {
    static let schemaNotes: [String: DocumentValue] = [
        "userId": ["type": "string", "format": "uuid"],
    ]
}

extension UserAdministration.Page {
    static let schemaNotes: [String: DocumentValue] = [
        "nextCursor": ["description": "Absent on the last page"],
    ]
}

extension UserView {
    static let schemaNotes: [String: DocumentValue] = [
        "userId": ["type": "string", "format": "uuid"],
        "faces": ["description": "Enrolled templates"],
    ]
}

extension EnrollmentUpload {
    static let schemaNotes: [String: DocumentValue] = [
        "image": ["description": "JPEG or PNG"],
        "faceBox": [
            "pattern": "^[0-9]+,[0-9]+,[0-9]+,[0-9]+$",
            "description": "x,y,width,height: the face to enroll (as the faceBox query parameter)",
        ],
    ]
}

extension OperatorRoutes.Enrolled {
    static let schemaNotes: [String: DocumentValue] = [
        "templateId": ["type": "string", "format": "uuid"],
        "photoKept": [
            "description": "The photo is kept, sealed, for a later move to another face model (the app keeps enrollment photos and photoConsent=true)",
        ],
        "faceBox": ["$ref": "#/components/schemas/FaceRegion", "description": "The face enrolled"],
        "otherFaces": ["description": "How many other faces the photo showed"],
    ]
}

extension FaceView {
    static let schemaNotes: [String: DocumentValue] = [
        "templateId": ["type": "string", "format": "uuid"],
        "model": ["$ref": "#/components/schemas/FaceModel"],
    ]
}

extension AppServerRoutes.AccessTokenIssued {
    static let schemaNotes: [String: DocumentValue] = [
        "tokenType": ["type": "string", "const": "Bearer"],
    ]
}

extension AppServerRoutes.Exchanged {
    static let schemaNotes: [String: DocumentValue] = [
        "userId": ["type": "string", "format": "uuid"],
        "appId": ["type": "string", "format": "uuid"],
        "method": ["description": "How the user was verified: face, device_biometric, kiosk"],
        "amr": [
            "type": "array",
            "items": ["type": "string", "enum": ["face", "swk"]],
            "description": "RFC 8176 methods the login proved: face (a face match), swk (a device key bound to the user). Face login on a bound key: face, swk; on a header-mode app: face; kiosk login: face (the kiosk's key is not the user's); device-credential assertion: swk",
        ],
        "kioskId": [
            "type": "string",
            "format": "uuid",
            "description": "The registered kiosk that asked, on kiosk logins; refuse these where you want the user's own device",
        ],
        "transactionId": ["type": "string", "format": "uuid", "description": "The verifying call's transaction"],
    ]
}

extension FaceLoginUpload {
    static let schemaNotes: [String: DocumentValue] = [
        "image": ["description": "JPEG or PNG; apps with liveness.faceLogin off"],
        "challengeId": ["description": "Apps with liveness.faceLogin active: from GET /v1/liveness/challenges"],
        "frame": [
            "minItems": 2,
            "maxItems": 12,
            "description": "Apps with liveness.faceLogin active: 2–12 JPEG/PNG frames in capture order doing the challenge's actions",
        ],
    ]
}

extension FaceGateIdentity {
    static let schemaNotes: [String: DocumentValue] = [
        "identityToken": ["description": "Single use, for POST /v1/identity/exchange"],
        "transactionId": ["type": "string", "format": "uuid"],
        "userId": ["type": "string", "format": "uuid"],
    ]
}

extension FaceLoginConfirmation {
    static let schemaNotes: [String: DocumentValue] = [
        "": ["required": ["status", "confirmationId", "transactionId", "expiresIn"]],
        "confirmationId": ["type": "string", "format": "uuid"],
        "transactionId": ["type": "string", "format": "uuid"],
    ]
}

extension FaceLoginRoutes.ConfirmBody {
    static let schemaNotes: [String: DocumentValue] = [
        "bindingTicket": ["description": "Required on dpop apps whose deviceBindingPolicy is appServerTicket or boundDevice"],
    ]
}

extension DeviceCredentialRoutes.ClientRegistrationBody {
    static let schemaNotes: [String: DocumentValue] = [
        "identityToken": ["description": "A fresh, unused face-login identity token of this app and device; consumed here"],
        "publicKey": ["contentEncoding": "base64", "description": "SubjectPublicKeyInfo DER of a P-256 key"],
        "policy": ["$ref": "#/components/schemas/DeviceCredentialPolicy"],
        "attestation": ["contentEncoding": "base64", "description": "At most 16 KiB; stored, not verified"],
    ]
}

extension DeviceCredentialRoutes.Registered {
    static let schemaNotes: [String: DocumentValue] = [
        "credentialId": ["type": "string", "format": "uuid"],
    ]
}

extension DeviceCredentialRoutes.ChallengeRequest {
    static let schemaNotes: [String: DocumentValue] = [
        "credentialId": ["type": "string", "format": "uuid"],
    ]
}

extension DeviceCredentialRoutes.DeviceChallengeIssued {
    static let schemaNotes: [String: DocumentValue] = [
        "challenge": ["description": "32 random bytes, base64url; single use"],
        "deviceId": ["description": "The device identity the assertion signs"],
    ]
}

extension DeviceCredentialRoutes.Assertion {
    static let schemaNotes: [String: DocumentValue] = [
        "credentialId": ["type": "string", "format": "uuid"],
        "counter": ["minimum": 0],
        "signature": [
            "contentEncoding": "base64",
            "description": "DER ECDSA/SHA-256 over the UTF-8 of facegate.device-assertion.v1\\n{appId}\\n{deviceId}\\n{credentialId}\\n{challenge}\\n{counter}",
        ],
    ]
}

extension DeviceCredentialRoutes.OperatorRegistrationBody {
    static let schemaNotes: [String: DocumentValue] = [
        "deviceId": ["minLength": 1, "maxLength": 128],
        "publicKey": ["contentEncoding": "base64"],
        "policy": ["$ref": "#/components/schemas/DeviceCredentialPolicy"],
        "attestation": ["contentEncoding": "base64"],
    ]
}

extension CredentialView {
    static let schemaNotes: [String: DocumentValue] = [
        "credentialId": ["type": "string", "format": "uuid"],
        "userId": ["type": "string", "format": "uuid"],
        "policy": ["$ref": "#/components/schemas/DeviceCredentialPolicy"],
    ]
}

extension AuditTrail.Page {
    static let schemaNotes: [String: DocumentValue] = [
        "nextCursor": ["description": "Absent on the last page"],
    ]
}

extension AuditItem {
    static let schemaNotes: [String: DocumentValue] = [
        "": [
            "required": ["transactionId", "appId", "kind", "outcome", "userId", "deviceId", "clientIp", "score", "latencyMs", "createdAt", "actor", "detail"],
        ],
        "transactionId": ["type": "string", "format": "uuid"],
        "appId": ["type": "string", "format": "uuid"],
        "kind": ["$ref": "#/components/schemas/TransactionKind"],
        "outcome": ["$ref": "#/components/schemas/TransactionOutcome"],
        "userId": ["type": ["string", "null"], "format": "uuid"],
        "deviceId": ["type": ["string", "null"]],
        "clientIp": ["type": ["string", "null"]],
        "score": ["type": ["number", "null"]],
        "actor": [
            "oneOf": [["$ref": "#/components/schemas/TransactionActor"], ["type": "null"]],
            "description": "Who acted; null where no caller was authenticated (a refused credential) and on rows written before actors were recorded",
        ],
        "change": [
            "oneOf": [["$ref": "#/components/schemas/TransactionChange"], ["type": "null"]],
            "description": "What an administrative call changed; null on other rows",
        ],
        "detail": ["description": "The row's other context: ids it touched, counts, masked numbers"],
    ]
}

extension AuditItem.Actor {
    static let schemaNotes: [String: DocumentValue] = [
        "type": ["type": "string", "enum": ["operator", "auditor", "appServer", "client", "kiosk", "service"]],
        "id": [
            "description": "operator: the operator key's id or bootstrap; auditor: the auditor id; appServer: the app; client: the device (absent when it sent none); kiosk: the kiosk id; service: its name",
        ],
    ]
}

extension TransactionLog.Verification {
    static let schemaNotes: [String: DocumentValue] = [
        "": ["required": ["appId", "ok", "checked", "firstBrokenTransactionId"]],
        "appId": ["type": "string", "format": "uuid"],
        "firstBrokenTransactionId": ["type": ["string", "null"], "format": "uuid"],
    ]
}

extension TransactionLog.Verification.CheckpointResult {
    static let schemaNotes: [String: DocumentValue] = [
        "": [
            "description": "Present when a checkpoint was given: whether the row it counted still holds the hash it signed",
        ],
    ]
}

extension AuditRoutes.AuditedApps {
    static let schemaNotes: [String: DocumentValue] = [
        "items": [
            "type": "array",
            "items": [
                "type": "object",
                "required": ["appId", "name"],
                "properties": ["appId": ["type": "string", "format": "uuid"], "name": ["type": "string"]],
            ],
        ],
    ]
}

extension AuditTrail.SignedCheckpoint {
    static let schemaNotes: [String: DocumentValue] = [
        "appId": ["type": "string", "format": "uuid"],
        "count": ["description": "Rows in the app's chain"],
        "headHash": ["description": "base64url of the last row's hash"],
        "checkpoint": [
            "description": "The same, signed: a JWT (EdDSA, typ facegate-checkpoint+jwt, key in the JWKS); keep it outside the database and pass it to verify later",
        ],
    ]
}

extension CTIDRoutes.SerialRequest {
    static let schemaNotes: [String: DocumentValue] = [
        "authMode": ["type": "string", "enum": ["0x40", "0x42", "0x10", "0x12"]],
    ]
}

extension CTIDSerialNumber {
    static let schemaNotes: [String: DocumentValue] = [
        "randNum": ["description": "6-digit challenge code"],
    ]
}

extension CTIDEnvelope {
    static let schemaNotes: [String: DocumentValue] = [
        "": ["description": "AES-128-CBC + HMAC-SHA256 envelope (README: CTID envelope)"],
        "version": ["type": "string", "enum": ["v1"]],
        "appId": ["type": "string", "format": "uuid"],
        "iv": ["contentEncoding": "base64"],
        "data": ["contentEncoding": "base64"],
        "mac": ["contentEncoding": "base64"],
    ]
}

extension CTIDRegistration {
    static let schemaNotes: [String: DocumentValue] = [
        "number": ["pattern": "^[0-9]{17}[0-9Xx]$"],
        "validDateStart": ["pattern": "^[0-9]{8}$"],
        "validDateEnd": ["description": "YYYYMMDD or 长期"],
    ]
}

extension CTIDRoutes.CTIDRegistered {
    static let schemaNotes: [String: DocumentValue] = [
        "number": ["description": "Masked"],
    ]
}

extension KioskSessionCreated {
    static let schemaNotes: [String: DocumentValue] = [
        "": ["required": ["interviewId", "interviewToken", "expiresIn"]],
        "interviewId": ["type": "string", "format": "uuid"],
    ]
}

extension KioskSessionView {
    static let schemaNotes: [String: DocumentValue] = [
        "interviewId": ["type": "string", "format": "uuid"],
        "events": ["description": "Step calls: the events this call produced"],
    ]
}

extension KioskResult {
    static let schemaNotes: [String: DocumentValue] = [
        "customerUUID": ["type": "string", "format": "uuid"],
    ]
}

extension KioskEventData {
    static let schemaNotes: [String: DocumentValue] = [
        "": ["description": "Absent fields do not apply"],
        "error": ["$ref": "#/components/schemas/ErrorCode"],
        "customerUUID": ["type": "string", "format": "uuid"],
        "code": ["$ref": "#/components/schemas/ErrorCode"],
    ]
}

extension KioskFrames {
    static let schemaNotes: [String: DocumentValue] = [
        "challengeId": ["description": "From GET /v1/liveness/challenges; not needed when the app's kiosk liveness is off"],
        "frame": [
            "minItems": 1,
            "maxItems": 12,
            "description": "JPEG/PNG frames in capture order: 2–12 answering the challenge, or one photo when kiosk liveness is off",
        ],
    ]
}

extension ImageUpload {
    static let schemaNotes: [String: DocumentValue] = [
        "image": ["description": "JPEG or PNG"],
    ]
}

extension LivenessChallenge {
    static let schemaNotes: [String: DocumentValue] = [
        "actions": ["minItems": 2, "maxItems": 3],
    ]
}

extension DeviceKeyRoutes.TicketRequest {
    static let schemaNotes: [String: DocumentValue] = [
        "": ["description": "The user; a bound device may send {} when it is bound to one user"],
    ]
}

extension BindingTickets.Issued {
    static let schemaNotes: [String: DocumentValue] = [
        "userId": ["type": "string", "format": "uuid"],
    ]
}

extension KioskLoginRoutes.KioskLoginReply {
    static let schemaNotes: [String: DocumentValue] = [
        "": [
            "required": ["success", "customerUUID", "token", "interviewId", "interviewToken", "transactionId", "spoofAttempt", "firstName", "error"],
        ],
        "customerUUID": ["type": ["string", "null"], "format": "uuid"],
        "token": ["type": ["string", "null"], "description": "An identity token (method kiosk)"],
        "interviewId": ["type": ["string", "null"], "format": "uuid", "description": "The kiosk session that onboarded the customer"],
        "interviewToken": ["type": "null", "description": "Always null: an onboarding session's token is never handed to a login"],
        "transactionId": ["type": "string", "format": "uuid"],
        "firstName": ["type": ["string", "null"]],
        "error": [
            "type": ["string", "null"],
            "description": "On success false: SPOOF_DETECTED, NO_FACE, NO_MATCH_FACE, AMBIGUOUS_MATCH or IMAGE_FORMAT_ERROR",
        ],
    ]
}

extension KioskRegistration.NewKiosk {
    static let schemaNotes: [String: DocumentValue] = [
        "name": ["minLength": 1, "maxLength": 200],
        "jkt": [
            "minLength": 43,
            "maxLength": 43,
            "description": "RFC 7638 SHA-256 thumbprint (base64url) of the kiosk's P-256 DPoP key",
        ],
        "allowedAddresses": ["minItems": 1, "maxItems": 32, "description": "Client addresses the kiosk may call from; absent: any"],
    ]
}

extension KioskRegistration.View {
    static let schemaNotes: [String: DocumentValue] = [
        "kioskId": ["type": "string", "format": "uuid"],
    ]
}

extension AccessKeys.NewKey {
    static let schemaNotes: [String: DocumentValue] = [
        "name": ["minLength": 1, "maxLength": 200],
        "appIds": [
            "minItems": 1,
            "maxItems": 1000,
            "description": "The apps the key covers; absent: every app for an operator key, no app for an auditor key (unless allApps)",
        ],
        "allApps": ["description": "Auditor keys: read every app (instead of appIds)"],
        "expiresIn": [
            "minimum": 1,
            "maximum": 315360000,
            "description": "Seconds from now (or expiresAt, not both); both absent: never expires",
        ],
        "expiresAt": ["description": "In the future; both absent: never expires"],
    ]
}

extension KeyRoutes.CreatedOperatorKey {
    static let schemaNotes: [String: DocumentValue] = [
        "operatorKey": ["description": "Shown only here"],
        "appIds": ["type": ["array", "null"], "items": ["type": "string", "format": "uuid"]],
        "expiresAt": ["type": ["string", "null"], "format": "date-time"],
    ]
}

extension AccessKeys.View {
    static let schemaNotes: [String: DocumentValue] = [
        "": [
            "description": "A key as listed, never its secret: operatorKeyId for an operator key, auditorId for an auditor key",
        ],
        "operatorKeyId": ["type": "string", "format": "uuid"],
        "auditorId": ["type": "string", "format": "uuid"],
        "role": ["type": "string", "enum": ["operator", "auditor"]],
        "appIds": [
            "type": ["array", "null"],
            "items": ["type": "string", "format": "uuid"],
            "description": "null or absent: every app",
        ],
        "expiresAt": ["type": ["string", "null"], "format": "date-time"],
        "revokedAt": ["type": ["string", "null"], "format": "date-time"],
    ]
}

extension KeyRoutes.CreatedAuditorKey {
    static let schemaNotes: [String: DocumentValue] = [
        "auditorKey": ["description": "Shown only here"],
        "appIds": ["type": ["array", "null"], "items": ["type": "string", "format": "uuid"]],
        "expiresAt": ["type": ["string", "null"], "format": "date-time"],
    ]
}

extension VerifyUpload {
    static let schemaNotes: [String: DocumentValue] = [
        "image": ["description": "JPEG or PNG"],
    ]
}

extension FaceVerifyRoutes.VerifyAnswer {
    static let schemaNotes: [String: DocumentValue] = [
        "match": [
            "description": "Whether the face is the claimed user's, at the app's threshold. A client naming an unknown user gets false",
        ],
        "transactionId": ["type": "string", "format": "uuid"],
        "userId": ["type": "string", "format": "uuid", "description": "App server only"],
        "score": ["description": "App server only: Euclidean distance in the model's units, lower is closer"],
        "threshold": ["description": "App server only"],
    ]
}

extension FaceVerifyRoutes.SearchAnswer {
    static let schemaNotes: [String: DocumentValue] = [
        "outcome": ["type": "string", "enum": ["MATCH", "NO_MATCH_FACE", "AMBIGUOUS_MATCH"]],
        "match": [
            "description": "The decision at the app's operating point: the matched user when outcome is MATCH, else absent or null",
            "oneOf": [["$ref": "#/components/schemas/FaceSearchCandidate"], ["type": "null"]],
        ],
        "transactionId": ["type": "string", "format": "uuid"],
        "candidates": ["description": "Operators only (absent for the app server): the closest users, best first, at most limit"],
    ]
}

extension FaceVerifyRoutes.SearchAnswer.Hit {
    static let schemaNotes: [String: DocumentValue] = [
        "userId": ["type": "string", "format": "uuid"],
        "score": ["description": "Euclidean distance in the model's units; lower is closer"],
    ]
}

extension FaceModelMigration.Status {
    static let schemaNotes: [String: DocumentValue] = [
        "appId": ["type": "string", "format": "uuid"],
        "users": ["description": "Users holding a template of the app's current model"],
        "ready": [
            "description": "Of those, the users that also hold a template of the target model (enrolled, or re-enrolled at a confident login on a bound device)",
        ],
        "keptPhotos": ["description": "Of the users not ready, those with a kept enrollment photo"],
        "notReady": ["maxItems": 1000, "description": "Users who need a new enrollment before a switch, oldest first"],
    ]
}

extension FaceModelMigration.Status.Pending {
    static let schemaNotes: [String: DocumentValue] = [
        "userId": ["type": "string", "format": "uuid"],
        "keptPhoto": [
            "description": "The user has a kept enrollment photo: POST …/face-model-migration/re-embed makes the new template without them",
        ],
    ]
}

extension FaceModelMigrationRoutes.Switch {
    static let schemaNotes: [String: DocumentValue] = [
        "matchThreshold": ["description": "In the new model's units (Euclidean distance); its default otherwise"],
    ]
}

extension FaceModelMigrationRoutes.Reembed {
    static let schemaNotes: [String: DocumentValue] = [
        "after": ["description": "The next of an earlier answer: continue after it"],
    ]
}

extension FaceModelMigration.Reembedded {
    static let schemaNotes: [String: DocumentValue] = [
        "reembedded": ["description": "New templates of the target model made from kept photos in this call"],
        "refused": [
            "type": "array",
            "items": [
                "type": "object",
                "required": ["userId", "templateId", "error"],
                "properties": [
                    "userId": ["type": "string", "format": "uuid"],
                    "templateId": ["type": "string", "format": "uuid", "description": "The template whose kept photo was refused"],
                    "error": ["type": "string", "description": "NO_FACE, LOW_QUALITY, IMAGE_FORMAT_ERROR or INTERNAL"],
                    "message": ["type": "string"],
                ],
            ],
        ],
        "next": [
            "type": "string",
            "format": "uuid",
            "description": "Present when the call ran out of time with photos left: send it as after",
        ],
    ]
}
