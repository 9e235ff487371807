import FaceGateCore
import Foundation

/// Every door to an identity, and what each demands: the factors it requires, whom a failure is charged to, the
/// refusals it may answer, and what an identity token it issues says (`amr`, RFC 8176). The gateway's use cases read
/// their `amr` from here and follow the rest (the README's door table is this one); the route-table test checks that
/// every route that can hand out an identity token, a binding ticket or a factor verdict names its door.
enum Door: String, CaseIterable, Sendable {
    /// `POST /v1/face-login`.
    case faceLogin
    /// `POST /v1/face-login/confirm`: binds a new key after a face login asked to confirm.
    case faceLoginConfirm
    /// `POST /v1/kiosk/login`.
    case kioskLogin
    /// `/v1/kiosk/sessions…`: onboarding, whose session read carries the new customer's token.
    case kioskOnboarding
    /// `POST /v1/device-credentials/assertions`.
    case deviceCredentialAssertion
    /// `POST /v1/face-verify` from a client app.
    case clientFaceVerify
    /// `POST /v1/face-verify` from the app server.
    case appServerFaceVerify
    /// `POST /v1/apps/{appId}/faces/search` (operators and the app server).
    case faceSearch
    /// `POST /v1/device-bindings`.
    case bindingTicket
    /// `POST /v1/ctid/verifications`.
    case ctidVerification
}

enum Factor: String, Sendable {
    /// A DPoP proof by a key bound to the user (a possession factor, `swk`).
    case boundDeviceKey
    /// A DPoP proof by a key not yet bound (it becomes bound by the door).
    case deviceKey
    /// A DPoP proof by the key of a kiosk registered to the app (the kiosk's, never the user's possession factor).
    case registeredKiosk
    case face
    /// Known to the user, but printed on badges: it names a user, it proves little.
    case employeeNumber
    /// A one-time ticket the app server (or a bound device) issued for this user.
    case bindingTicket
    /// A device-held key unlocked by the device's own biometric, signing a server challenge.
    case deviceCredential
    case appServerSecret
    case operatorKey
    /// The CTID institution key (the envelope's MAC) and the one-time serial.
    case institutionKey
}

/// Who pays for a failed try (`AttemptGuard`).
enum ChargedSubject: String, Sendable {
    case device, clientAddress, claimedUser, faceCandidates, kiosk, credential
    /// A server credential's rate (`FACEGATE_SERVER_CALL_RATE`), not its failures.
    case serverCredential
    /// The registry entry a CTID verification names.
    case registryEntry
}

struct TrustRule: Sendable {
    /// Every one of these is checked before an identity or a verdict is given.
    var requires: [Factor]
    var charged: [ChargedSubject]
    /// The refusals a caller may see, beyond the authentication and availability errors every route shares. None of them
    /// tells one wrong factor from another where the door says so.
    var answers: [ErrorCode]
    /// What an identity token from this door says; nil for doors that issue none.
    var amr: [String]?
}

enum TrustPolicy {
    static func rule(_ door: Door) -> TrustRule {
        switch door {
        case .faceLogin:
            TrustRule(requires: [.face, .boundDeviceKey], charged: [.device, .clientAddress],
                      answers: [.confirmRequired, .noFace, .noMatchFace, .ambiguousMatch, .spoofDetected, .imageFormatError, .dpopProofInvalid],
                      amr: ["face", "swk"])
        case .faceLoginConfirm:
            TrustRule(requires: [.bindingTicket, .face, .employeeNumber, .deviceKey], charged: [.device, .faceCandidates, .clientAddress],
                      answers: [.bindingTicketInvalid, .employeeNumberMismatch, .confirmationInvalid, .dpopProofInvalid], amr: ["face", "swk"])
        case .kioskLogin:
            TrustRule(requires: [.registeredKiosk, .face], charged: [.kiosk],
                      answers: [.kioskNotRegistered, .noFace, .noMatchFace, .ambiguousMatch, .spoofDetected, .imageFormatError, .rateLimited],
                      amr: ["face"])
        case .kioskOnboarding:
            TrustRule(requires: [.registeredKiosk, .face], charged: [], answers: [.kioskNotRegistered], amr: ["face"])
        case .deviceCredentialAssertion:
            TrustRule(requires: [.deviceCredential], charged: [.credential, .device], answers: [.authenticationFailed, .credentialLocked],
                      amr: ["swk"])
        case .clientFaceVerify:
            // Compared only with users bound to the calling key: anyone else is `match: false`, so no number is confirmed.
            TrustRule(requires: [.boundDeviceKey, .face], charged: [.claimedUser, .device, .clientAddress], answers: [], amr: nil)
        case .appServerFaceVerify:
            TrustRule(requires: [.appServerSecret, .face], charged: [.claimedUser, .serverCredential], answers: [.notFound], amr: nil)
        case .faceSearch:
            TrustRule(requires: [.operatorKey, .face], charged: [.serverCredential], answers: [], amr: nil)
        case .bindingTicket:
            // A device asks only for a user its own bound key belongs to; an unbound key is refused before any lookup.
            TrustRule(requires: [.appServerSecret], charged: [.serverCredential], answers: [.forbidden, .notFound], amr: nil)
        case .ctidVerification:
            // The verdict of an identity tried too often is withheld (RATE_LIMITED): numbers cannot be enumerated.
            TrustRule(requires: [.institutionKey, .face], charged: [.registryEntry, .device, .clientAddress], answers: [.invalidEnvelope, .rateLimited],
                      amr: nil)
        }
    }

    /// The `amr` of a token from `door`; a face login on an app that names devices by header proves no key.
    static func amr(_ door: Door, deviceIsKey: Bool = true) -> [String] {
        let amr = rule(door).amr ?? []
        return deviceIsKey ? amr : amr.filter { $0 != "swk" }
    }
}
