import FaceGateCore
import IdentityRecords
import Foundation
import PostgresClient

/// Brute-force rule (NIST SP 800-63B §5.2.2), shared by every gateway instance through PostgreSQL and
/// surviving restarts. Each attempt is charged as a failure to every subject it concerns *before* the
/// comparison, in one conditional statement per subject: the statement refuses when the subject is
/// locked or throttled, so 50 parallel guesses are 50 charges and at most `throttleAfter` reach the
/// comparison. A success then clears the consecutive count; an attempt that was neither (no face in the
/// photo, a service outage, a new device asked to confirm) is refunded.
///
/// Subjects: the device; the user a binding attempt claims (wrong employee numbers count against the
/// user whatever device sends them, and apart from that user's own devices, so a stranger cannot lock a
/// person out of their phone); the client address (floods; a higher limit and never a lock, since many
/// people can share one address, and counted over a sliding window that nobody's success resets: an attacker cannot
/// clear the count by logging in as themselves between guesses); a kiosk (spoofs only); the identity a CTID verification
/// claims.
struct AttemptGuard: Sendable {
    enum Subject: Sendable, Equatable {
        case device(String)
        case credential(UUID)
        case bindingUser(UUID)
        case clientAddress(String)
        /// A registered kiosk: charged for spoofs only (walk-ups who match no one cost it nothing); never locked.
        case kiosk(UUID)
        /// The identity a CTID verification claims (the verifier's opaque key of its number): tries at one identity are
        /// limited whoever sends them. Never locked, so a stranger cannot lock a person out of verification.
        case registryEntry(String)

        var key: String {
            switch self {
            case .device(let id): "device:" + id
            case .credential(let id): "credential:" + id.wire
            case .bindingUser(let id): "binding:" + id.wire
            case .clientAddress(let address): "address:" + address
            case .kiosk(let id): "kiosk:" + id.wire
            case .registryEntry(let key): "ctid:" + key
            }
        }
    }

    /// How an attempt ended, for the subjects it was charged to.
    enum Outcome: Sendable { case success, failure, neutral }

    typealias Rule = AttemptRule

    let store: any AttemptCounterStore
    let rule: Rule
    let addressRule: Rule

    func rule(for subject: Subject) -> Rule {
        switch subject {
        case .clientAddress: addressRule
        // Never locked: a stranger must not be able to lock a kiosk, or a person out of verification.
        case .registryEntry, .kiosk: Rule(throttleAfter: rule.throttleAfter, throttleSeconds: rule.throttleSeconds, lockAfter: 0,
                                          failureWindow: addressRule.failureWindow)
        default: rule
        }
    }

    /// Charges the attempt to every subject, runs `body`, and settles the charges by its outcome. An error
    /// thrown by `body` keeps the charge when its code is a refusal on the merits (wrong face, wrong
    /// number, spoof) and refunds it otherwise.
    func attempt<T>(appId: UUID, _ subjects: [Subject], _ body: () async throws -> (T, Outcome)) async throws -> T {
        // One statement charges them all, in order, none after the first refused.
        let counted = try await store.charge(appId: appId, charges(subjects))
        return try await settling(appId: appId, subjects, counted: counted, body)
    }

    /// `attempt`, its charges sent in one round trip with the module gate's count and a read the attempt needs
    /// (`reading`, handed to `body`). A gate that refuses (a trial's calls spent) takes the charges back.
    func attempt<T, Read: Sendable>(appId: UUID, _ subjects: [Subject], admission: PostgresStep<APIError?>, reading: PostgresStep<Read>,
                                    _ body: (Read) async throws -> (T, Outcome)) async throws -> T {
        let (refused, counted, read) = try await PostgresStep.together(admission, store.charging(appId: appId, charges(subjects)), reading)
        if let refused {
            try? await settle(appId: appId, zip(subjects, counted).filter(\.1).map(\.0), .neutral)
            throw refused
        }
        return try await settling(appId: appId, subjects, counted: counted) { try await body(read) }
    }

    private func charges(_ subjects: [Subject]) -> [(subject: String, rule: AttemptRule)] {
        subjects.map { ($0.key, rule(for: $0)) }
    }

    /// Refuses at the first subject that was not counted (refunding those before it), or runs `body` and settles.
    private func settling<T>(appId: UUID, _ subjects: [Subject], counted: [Bool], _ body: () async throws -> (T, Outcome)) async throws -> T {
        if let refused = counted.firstIndex(of: false) {
            try? await settle(appId: appId, Array(subjects[..<refused]), .neutral)
            let subject = subjects[refused]
            throw try await refusal(appId: appId, subject)
                ?? APIError(.rateLimited, "too many failed attempts; try again", retryAfter: rule(for: subject).throttleSeconds)
        }
        do {
            let (value, outcome) = try await body()
            try await settle(appId: appId, subjects, outcome)
            return value
        } catch let error as APIError where error.code.isFailedAttempt {
            throw error
        } catch {
            try? await settle(appId: appId, subjects, .neutral)
            throw error
        }
    }

    /// Refuses, without counting anything, when the subject is locked or inside its wait (for calls that
    /// only prepare an attempt, such as asking for a challenge).
    func ensureOpen(appId: UUID, _ subject: Subject) async throws {
        if let refusal = try await refusal(appId: appId, subject) { throw refusal }
    }

    private func refusal(appId: UUID, _ subject: Subject) async throws -> APIError? {
        guard let state = try await store.state(appId: appId, subject: subject.key, rule: rule(for: subject)) else { return nil }
        if state.locked {
            switch subject {
            case .bindingUser:
                return APIError(.credentialLocked, "too many failed attempts to bind a device to this user: binding is locked until an operator resets it")
            case .credential:
                return APIError(.credentialLocked, "too many failed attempts: this credential is locked until an operator resets it or the device registers again")
            default:
                return APIError(.credentialLocked, "too many failed attempts: this device is locked until an operator resets it")
            }
        }
        guard state.throttled, state.waitSeconds > 0 else { return nil }
        return APIError(.rateLimited, "too many failed attempts; wait \(state.waitSeconds) s", retryAfter: state.waitSeconds)
    }

    private func settle(appId: UUID, _ subjects: [Subject], _ outcome: Outcome) async throws {
        guard outcome != .failure else { return }
        // A windowed subject's success takes back its own charge, nothing more.
        try await store.refund(appId: appId, subjects.map { subject in
            let rule = rule(for: subject)
            return (subject.key, outcome == .success && rule.failureWindow == 0, rule)
        })
    }

    /// The operator's reset: clears the counters of one subject.
    func reset(appId: UUID, _ subject: Subject) async throws {
        try await store.reset(appId: appId, subject: subject.key)
    }
}

extension ErrorCode {
    /// The caller's credentials (operator, auditor or app-server key, access token) were missing or wrong.
    var refusesCredentials: Bool {
        switch self {
        case .unauthorized, .accessTokenInvalid, .accessTokenExpired: true
        default: false
        }
    }

    /// A refusal on the merits of the attempt: it stays counted against its subjects.
    var isFailedAttempt: Bool {
        switch self {
        case .noMatchFace, .ambiguousMatch, .spoofDetected, .employeeNumberMismatch, .authenticationFailed, .confirmationInvalid, .bindingTicketInvalid: true
        default: false
        }
    }
}
