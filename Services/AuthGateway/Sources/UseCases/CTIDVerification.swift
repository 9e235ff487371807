import CTIDRecords
import Crypto
import AppRecords
import FaceGateCore
import Foundation
import ServiceKit

/// Sends a CTID job to the ctid-verifier and waits for its answer (the gateway does it over Kafka).
protocol CTIDJobs: Sendable {
    /// Throws `SERVICE_UNAVAILABLE` when no verifier answers in time.
    func ctidJob(_ job: CTIDJob) async throws -> CTIDJobResult
}

/// CTID identity verification (`POST /v1/ctid/serial-numbers`, `POST /v1/ctid/verifications`), without HTTP. The gateway
/// issues serial numbers and forwards ciphertext: it holds no institution key and no sealing key, so opening envelopes
/// and judging identities is the ctid-verifier's work.
struct CTIDVerification: Sendable {
    let admission: any ModuleAdmission
    let attempts: AttemptGuard
    let serials: any CTIDSerialStore
    let verifier: any CTIDJobs
    let serialTTLSeconds: Int

    /// What the verifier made of an envelope.
    enum Verdict: Sendable, Equatable {
        /// The sealed answer envelope, for the client to open.
        case answered(CTIDEnvelope)
        /// Any fault of the envelope; which one is not said.
        case invalidEnvelope
        /// The identity claimed has been tried too often: no verdict is handed over.
        case withheld(APIError)

        static func == (lhs: Verdict, rhs: Verdict) -> Bool {
            switch (lhs, rhs) {
            case (.answered(let a), .answered(let b)): a == b
            case (.invalidEnvelope, .invalidEnvelope): true
            case (.withheld(let a), .withheld(let b)): a.code == b.code
            default: false
            }
        }
    }

    /// A single-use serial (128 random bits as hex, with six random digits) for the mode `authModeCode` reads (`"0x42"`);
    /// it is read once the app's module is admitted, so a disabled module answers as such whatever the body. Modes that
    /// need the national network credential are refused.
    func issueSerial(app: AppRecord, authModeCode read: () throws -> String) async throws -> CTIDSerialNumber {
        try await admission.admit(app, module: .ctid)
        let authModeCode = try read()
        guard CTIDAuthMode.isModeCode(authModeCode) else { throw APIError(.invalidRequest, "authMode must be a hex code such as \"0x42\"") }
        guard let mode = CTIDAuthMode(wire: authModeCode) else {
            throw APIError(.invalidRequest, "unsupported auth mode: \(authModeCode.lowercased()) needs the CTID network credential; use 0x40, 0x42, 0x10 or 0x12")
        }
        let serial = SecureRandom.bytes(16).map { String(format: "%02x", $0) }.joined()
        // Uniform digits, by rejection: bytes from 250 up would favour 0–5.
        var randNum = ""
        while randNum.count < 6 {
            let byte = SecureRandom.bytes(1)[0]
            if byte < 250 { randNum.append(String(byte % 10)) }
        }
        try await serials.issue(serial, appId: app.id, authMode: mode, randNum: randNum, ttlSeconds: serialTTLSeconds)
        return CTIDSerialNumber(bizSerialNum: serial, randNum: randNum, expiresIn: serialTTLSeconds)
    }

    /// Hands `envelope` (nil when the body was not even an envelope: still the verifier's to judge and record) to the
    /// verifier. Every try is charged before it is sent to the device (`X-Device-Id`, when given) and the client address,
    /// and settled by how the verifier counted it (the gateway never sees the plaintext). The identity the request claimed
    /// is charged too, by the verifier's opaque key of its number, before its verdict is handed over: once an identity has
    /// been tried too often, whoever tries it waits, and a verdict computed meanwhile is withheld (`RATE_LIMITED`), so
    /// numbers and names cannot be enumerated at the rate serials are issued.
    func verify(app: AppRecord, envelope: CTIDEnvelope?, deviceId: String?, clientAddress: String) async throws -> Verdict {
        try await admission.admit(app, module: .ctid)
        var subjects: [AttemptGuard.Subject] = [.clientAddress(clientAddress)]
        if let deviceId { subjects.insert(.device(deviceId), at: 0) }
        return try await attempts.attempt(appId: app.id, subjects) {
            let result = try await verifier.ctidJob(CTIDJob(appId: app.id, .verify(envelope: envelope, deviceId: deviceId, clientIp: clientAddress)))
            let outcome: AttemptGuard.Outcome = switch result.attempt {
            case .success: .success
            case .failure: .failure
            case .neutral, nil: .neutral
            }
            switch result.outcome {
            case .answered:
                guard let answer = result.envelope else { throw APIError(.internalError, "the verifier answered without an envelope") }
                if let entry = result.registryEntry {
                    do {
                        try await attempts.attempt(appId: app.id, [.registryEntry(entry)]) { ((), outcome) }
                    } catch let refusal as APIError where refusal.code == .rateLimited || refusal.code == .credentialLocked {
                        // Withheld, whatever the verdict was: the try still costs the sender, as a failure.
                        return (.withheld(refusal), .failure)
                    }
                }
                return (.answered(answer), outcome)
            case .invalidEnvelope:
                return (.invalidEnvelope, .failure)
            case .unavailable:
                throw APIError(.serviceUnavailable, "identity verification is unavailable right now; try again")
            default:
                throw APIError(.internalError, "unexpected verifier answer")
            }
        }
    }

    /// Puts an identity in the app's registry (an operator's call): the verifier checks the entry and makes the portrait's
    /// template. Answers the number masked.
    func register(app: AppRecord, _ entry: CTIDRegistration) async throws -> String {
        let result = try await verifier.ctidJob(CTIDJob(appId: app.id, .register(entry)))
        switch result.outcome {
        case .registered: return ResidentIDNumber.mask(entry.number.uppercased())
        case .invalidRequest: throw APIError(.invalidRequest, result.message ?? "invalid registry entry")
        case .notFound: throw APIError(.notFound, "no such app")
        case .imageRejected: throw APIError(.lowQuality, result.message ?? "the photo has no usable face")
        default: throw APIError(.serviceUnavailable, result.message ?? "identity verification is unavailable right now; try again")
        }
    }
}
