import AppRecords
import AuditRecords
@testable import AuthGateway
import Crypto
import FaceGateCore
import Foundation
import HTTPServer
import IdentityRecords
import ServiceKit
import Synchronization

// In-memory stores for the use-case tests. `StoreContractTests` runs one suite against each of them and against its
// PostgreSQL store, so a fake that drifts from the real behaviour fails there.

/// The time the fakes read; tests move it instead of sleeping.
final class FakeClock: Sendable {
    private let time = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { time.withLock { $0 } }
    func advance(seconds: Double) { time.withLock { $0 += seconds } }
}

/// `AttemptCounterStore` in memory, on the test's clock: for use-case tests. The
/// contract tests hold it to the PostgreSQL store's behaviour.
final class InMemoryAttemptCounters: AttemptCounterStore {
    let clock: FakeClock

    init(clock: FakeClock) { self.clock = clock }

    private struct Counter { var consecutive = 0; var total = 0; var lastFailure = Date.distantPast; var locked = false }
    private let counters = Mutex<[String: Counter]>([:])

    private var now: Date { clock.now }

    func charge(appId: UUID, _ subjects: [(subject: String, rule: AttemptRule)]) async throws -> [Bool] {
        var counted: [Bool] = []
        for (subject, rule) in subjects {
            counted.append(counted.allSatisfy { $0 } ? try await charge(appId: appId, subject: subject, rule: rule) : false)
        }
        return counted
    }

    func refund(appId: UUID, _ subjects: [(subject: String, success: Bool, rule: AttemptRule)]) async throws {
        for (subject, success, rule) in subjects { try await refund(appId: appId, subject: subject, success: success, rule: rule) }
    }

    func charge(appId: UUID, subject: String, rule: AttemptGuard.Rule) async throws -> Bool {
        let now = self.now
        return counters.withLock { counters in
            var counter = counters[appId.wire + subject] ?? Counter()
            let waited = counter.lastFailure.addingTimeInterval(Double(rule.throttleSeconds)) <= now
            if rule.failureWindow > 0 {
                // GCRA, as the PostgreSQL store: `lastFailure` is when the charged failures would have drained.
                let ahead = counters[appId.wire + subject].map { $0.lastFailure.timeIntervalSince(now) } ?? -.infinity
                guard !counter.locked, ahead <= Double(rule.failureWindow) - rule.failureInterval else { return false }
                counter.consecutive += 1
                counter.total += 1
                counter.lastFailure = max(counter.lastFailure, now).addingTimeInterval(rule.failureInterval)
                if rule.lockAfter > 0, counter.total >= rule.lockAfter { counter.locked = true }
                counters[appId.wire + subject] = counter
                return true
            }
            guard !counter.locked, counter.consecutive < rule.throttleAfter || waited else { return false }
            counter.consecutive += 1
            counter.total += 1
            counter.lastFailure = now
            if rule.lockAfter > 0, counter.total >= rule.lockAfter { counter.locked = true }
            counters[appId.wire + subject] = counter
            return true
        }
    }

    func state(appId: UUID, subject: String, rule: AttemptGuard.Rule) async throws -> AttemptState? {
        let now = self.now
        return counters.withLock { counters in
            counters[appId.wire + subject].map { counter in
                if rule.failureWindow > 0 {
                    let over = counter.lastFailure.timeIntervalSince(now) - (Double(rule.failureWindow) - rule.failureInterval)
                    return AttemptState(locked: counter.locked, throttled: over > 0, waitSeconds: Int(over.rounded(.up)))
                }
                let wait = counter.lastFailure.addingTimeInterval(Double(rule.throttleSeconds)).timeIntervalSince(now)
                return AttemptState(locked: counter.locked, throttled: counter.consecutive >= rule.throttleAfter, waitSeconds: Int(wait.rounded(.up)))
            }
        }
    }

    func refund(appId: UUID, subject: String, success: Bool, rule: AttemptGuard.Rule) async throws {
        counters.withLock { counters in
            guard var counter = counters[appId.wire + subject] else { return }
            if rule.failureWindow > 0 { counter.lastFailure = counter.lastFailure.addingTimeInterval(-rule.failureInterval) }
            counter.consecutive = success ? 0 : max(counter.consecutive - 1, 0)
            counter.total = max(counter.total - 1, 0)
            if rule.lockAfter > 0, counter.total < rule.lockAfter { counter.locked = false }
            counters[appId.wire + subject] = counter
        }
    }

    func reset(appId: UUID, subject: String) async throws {
        _ = counters.withLock { $0.removeValue(forKey: appId.wire + subject) }
    }
}

final class InMemoryDeviceBindings: DeviceBindingStore {
    private struct Binding { var appId: UUID; var deviceId: String; var userId: UUID; var keyBound: Bool; var at: Date }
    private struct Confirmation {
        var pending: PendingConfirmation
        var expires: Date
        var mismatches = 0
        var used = false
        var voided = false
    }
    private struct Ticket { var appId: UUID; var userId: UUID; var issuer: String; var expires: Date; var used = false }
    private struct State {
        var bindings: [Binding] = []
        var confirmations: [UUID: Confirmation] = [:]
        var tickets: [String: Ticket] = [:]
    }

    let clock: FakeClock
    private let state = Mutex(State())

    init(clock: FakeClock) { self.clock = clock }

    func boundUsers(appId: UUID, device: ClientDevice) async throws -> [UUID] {
        state.withLock { state in
            state.bindings.filter { $0.appId == appId && $0.deviceId == device.id && $0.keyBound == device.isKey }
                .sorted { $0.at > $1.at }.prefix(10).map(\.userId)
        }
    }

    func open(_ confirmation: PendingConfirmation) async throws {
        let expires = clock.now.addingTimeInterval(Double(confirmation.ttlSeconds))
        state.withLock { $0.confirmations[confirmation.id] = Confirmation(pending: confirmation, expires: expires) }
    }

    func confirmation(_ id: UUID, appId: UUID, deviceId: String) async throws -> ConfirmationState? {
        let now = clock.now
        return state.withLock { state in
            guard let found = state.confirmations[id], found.pending.appId == appId, found.pending.deviceId == deviceId else { return nil }
            return ConfirmationState(candidates: found.pending.candidates, usable: !found.used && !found.voided && found.expires > now)
        }
    }

    func recordMismatch(_ id: UUID) async throws -> Int {
        state.withLock { state in
            guard var found = state.confirmations[id] else { return 0 }
            found.mismatches += 1
            if found.mismatches >= DeviceBindings.mismatchesAllowed { found.voided = true }
            state.confirmations[id] = found
            return DeviceBindings.mismatchesAllowed - found.mismatches
        }
    }

    func bind(confirmation: UUID, appId: UUID, device: ClientDevice, user: UUID, ticket: BindingTicketCheck?) async throws {
        let now = clock.now
        try state.withLock { state in
            // All or nothing: the changes are made on a copy, kept only when every step passed.
            var next = state
            guard var found = next.confirmations[confirmation], !found.used, !found.voided, found.expires > now else {
                throw APIError(.confirmationInvalid, "the confirmation was already used")
            }
            found.used = true
            next.confirmations[confirmation] = found
            if let ticket {
                let key = try ticket.key()
                var spent: (issuer: String, userHasKey: Bool)?
                if var stored = next.tickets[key], stored.appId == appId, stored.userId == user, !stored.used, stored.expires > now {
                    stored.used = true
                    next.tickets[key] = stored
                    spent = (stored.issuer, next.bindings.contains { $0.appId == appId && $0.userId == user && $0.keyBound })
                }
                try ticket.accept(spent)
            }
            if !next.bindings.contains(where: { $0.appId == appId && $0.deviceId == device.id && $0.userId == user }) {
                next.bindings.append(Binding(appId: appId, deviceId: device.id, userId: user, keyBound: device.isKey, at: now))
            }
            state = next
        }
    }

    func issueTicket(key: String, appId: UUID, user: UUID, issuer: String, ttlSeconds: Int) async throws {
        let expires = clock.now.addingTimeInterval(Double(ttlSeconds))
        state.withLock { $0.tickets[key] = Ticket(appId: appId, userId: user, issuer: issuer, expires: expires) }
    }

    func ticket(key: String, appId: UUID) async throws -> (user: UUID, issuer: String, userHasKey: Bool)? {
        let now = clock.now
        return state.withLock { state in
            guard let stored = state.tickets[key], stored.appId == appId, !stored.used, stored.expires > now else { return nil }
            return (stored.userId, stored.issuer, state.bindings.contains { $0.appId == appId && $0.userId == stored.userId && $0.keyBound })
        }
    }

    func void(_ confirmation: UUID) async throws {
        state.withLock { $0.confirmations[confirmation]?.voided = true }
    }
}

final class InMemoryUserDirectory: UserDirectory {
    private struct User { var appId: UUID; var id: UUID; var employeeNumber: String; var name: String; var hasFace: Bool }
    private let users = Mutex<[User]>([])

    /// A user of the app, enrolled (holding a template) unless `hasFace` is false.
    func add(appId: UUID, employeeNumber: String, name: String = "Someone", hasFace: Bool = true) -> UUID {
        let id = UUID()
        users.withLock { $0.append(User(appId: appId, id: id, employeeNumber: employeeNumber, name: name, hasFace: hasFace)) }
        return id
    }

    func remove(_ id: UUID) { users.withLock { $0.removeAll { $0.id == id } } }

    func user(appId: UUID, employeeNumber: String) async throws -> UUID? {
        users.withLock { $0.first { $0.appId == appId && $0.employeeNumber == employeeNumber }?.id }
    }

    func profile(of user: UUID, appId: UUID) async throws -> UserProfile? {
        users.withLock { $0.first { $0.appId == appId && $0.id == user }.map { UserProfile(employeeNumber: $0.employeeNumber, name: $0.name) } }
    }

    func hasFace(_ user: UUID, appId: UUID) async throws -> Bool {
        users.withLock { $0.contains { $0.appId == appId && $0.id == user && $0.hasFace } }
    }

    func employeeNumbers(of ids: [UUID], appId: UUID) async throws -> [UUID: String] {
        users.withLock { users in
            Dictionary(uniqueKeysWithValues: users.filter { $0.appId == appId && ids.contains($0.id) }.map { ($0.id, $0.employeeNumber) })
        }
    }
}

/// Spent token ids, one namespace for every app as in PostgreSQL (the id is the key).
final class InMemorySpentTokenIds: SpentTokenIds {
    private let spentIds = Mutex<Set<String>>([])

    func spend(_ id: String, appId: UUID, expiresAt: Int64) async throws -> Bool { spentIds.withLock { $0.insert(id).inserted } }
}

/// Users and their templates as operators manage them, and as a face-model migration reads them; `addTemplate` stands
/// in for the matcher's enrollment (and its kept photo).
final class InMemoryUserRoster: UserRoster {
    private struct User { var id: UUID; var appId: UUID; var employeeNumber: String; var name: String; var createdAt: Date }
    private struct Template {
        var id: UUID; var appId: UUID; var userId: UUID; var model: FaceModel; var keptPhoto: Bool; var changeSeq: Int64; var createdAt: Date
    }
    private struct State { var users: [User] = []; var templates: [Template] = []; var seq: Int64 = 0 }
    private let state = Mutex(State())
    let clock: FakeClock

    init(clock: FakeClock) { self.clock = clock }

    func addTemplate(_ id: UUID = UUID(), user: UUID, appId: UUID, model: FaceModel = .sface2021dec, keptPhoto: Bool = false) {
        let now = clock.now
        state.withLock { state in
            state.seq += 1
            state.templates.append(Template(id: id, appId: appId, userId: user, model: model, keptPhoto: keptPhoto, changeSeq: state.seq,
                                            createdAt: now))
        }
    }

    func create(_ id: UUID, appId: UUID, employeeNumber: String, name: String) async throws -> Bool {
        let now = clock.now
        return state.withLock { state in
            guard !state.users.contains(where: { $0.appId == appId && $0.employeeNumber == employeeNumber }) else { return false }
            state.users.append(User(id: id, appId: appId, employeeNumber: employeeNumber, name: name, createdAt: now))
            return true
        }
    }

    private func view(_ user: User, _ state: State) -> UserView {
        UserView(userId: user.id.wire, employeeNumber: user.employeeNumber, name: user.name,
                 faces: state.templates.filter { $0.userId == user.id }.count, createdAt: user.createdAt)
    }

    func user(_ id: UUID, appId: UUID) async throws -> UserView? {
        state.withLock { state in state.users.first { $0.id == id && $0.appId == appId }.map { view($0, state) } }
    }

    func page(appId: UUID, after: PageCursor?, limit: Int) async throws -> [UserView] {
        state.withLock { state in
            state.users.filter { $0.appId == appId }
                .sorted { ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString) }
                .filter { after == nil || ($0.createdAt, $0.id.uuidString) > (after!.time, after!.id.uuidString) }
                .prefix(limit).map { view($0, state) }
        }
    }

    func erase(_ user: UUID, appId: UUID) async throws -> [GalleryChange]? {
        state.withLock { state in
            guard state.users.contains(where: { $0.id == user && $0.appId == appId }) else { return nil }
            let erased = state.templates.filter { $0.userId == user && $0.appId == appId }
            state.users.removeAll { $0.id == user }
            state.templates.removeAll { $0.userId == user }
            return erased.map { template in
                state.seq += 1
                return GalleryChange(operation: .delete, appId: appId, userId: user, templateId: template.id, changeSeq: state.seq)
            }
        }
    }

    func enrolledUsers(appId: UUID) async throws -> Int {
        state.withLock { Set($0.templates.filter { $0.appId == appId }.map(\.userId)).count }
    }

    func templateCount(appId: UUID, model: FaceModel) async throws -> Int {
        state.withLock { $0.templates.filter { $0.appId == appId && $0.model == model }.count }
    }

    func faces(of user: UUID, appId: UUID) async throws -> [FaceView] {
        state.withLock { state in
            state.templates.filter { $0.userId == user && $0.appId == appId }.map {
                FaceView(templateId: $0.id.wire, model: $0.model.rawValue,
                         quality: FaceQualityReport(faceWidth: 120, sharpness: 1, brightness: 0.5, yaw: 0), createdAt: $0.createdAt)
            }
        }
    }

    /// What deleting the app takes from the roster, as the cascade from `apps` does.
    func eraseApp(_ appId: UUID) -> (users: Int, templates: [GalleryChange]) {
        state.withLock { state in
            let users = state.users.filter { $0.appId == appId }.count
            let templates = state.templates.filter { $0.appId == appId }.map {
                GalleryChange(operation: .delete, appId: appId, userId: $0.userId, templateId: $0.id, changeSeq: $0.changeSeq)
            }
            state.users.removeAll { $0.appId == appId }
            state.templates.removeAll { $0.appId == appId }
            return (users, templates)
        }
    }

    func eraseFace(_ template: UUID, of user: UUID, appId: UUID) async throws -> GalleryChange? {
        state.withLock { state in
            guard state.templates.contains(where: { $0.id == template && $0.userId == user && $0.appId == appId }) else { return nil }
            state.templates.removeAll { $0.id == template }
            state.seq += 1
            return GalleryChange(operation: .delete, appId: appId, userId: user, templateId: template, changeSeq: state.seq)
        }
    }
}

extension InMemoryUserRoster: ModelMigrationStore {
    private func holds(_ user: UUID, _ model: FaceModel, _ state: State) -> Bool {
        state.templates.contains { $0.userId == user && $0.model == model }
    }

    private func keptPhoto(_ user: UUID, _ state: State) -> Bool { state.templates.contains { $0.userId == user && $0.keptPhoto } }

    /// The app's users holding a template of `from`, oldest first.
    private func holders(appId: UUID, _ from: FaceModel, _ state: State) -> [User] {
        state.users.filter { $0.appId == appId && holds($0.id, from, state) }
            .sorted { ($0.createdAt, $0.id.wire) < ($1.createdAt, $1.id.wire) }
    }

    func counts(appId: UUID, from: FaceModel, to: FaceModel) async throws -> (users: Int, ready: Int, keptPhotos: Int) {
        state.withLock { state in
            let users = holders(appId: appId, from, state)
            let ready = users.filter { holds($0.id, to, state) }
            return (users.count, ready.count, users.filter { !holds($0.id, to, state) && keptPhoto($0.id, state) }.count)
        }
    }

    func pending(appId: UUID, from: FaceModel, to: FaceModel, limit: Int) async throws -> [PendingUser] {
        state.withLock { state in
            holders(appId: appId, from, state).filter { !holds($0.id, to, state) }.prefix(limit).map {
                PendingUser(id: $0.id, employeeNumber: $0.employeeNumber, keptPhoto: keptPhoto($0.id, state))
            }
        }
    }

    func keptPhotos(appId: UUID, from: FaceModel, to: FaceModel, after: UUID, limit: Int) async throws -> [UUID] {
        state.withLock { state in
            state.templates.filter { $0.appId == appId && $0.keptPhoto && $0.model == from && $0.id.wire > after.wire && !holds($0.userId, to, state) }
                .map(\.id).sorted { $0.wire < $1.wire }.prefix(limit).map { $0 }
        }
    }

    func holds(_ user: UUID, appId: UUID, model: FaceModel) async throws -> Bool {
        state.withLock { state in state.templates.contains { $0.appId == appId && $0.userId == user && $0.model == model } }
    }
}

/// The sessions that onboarded customers, as the kiosk-orchestrator would have completed them.
final class InMemoryOnboardingSessions: OnboardingSessions {
    private let sessions = Mutex<[UUID: UUID]>([:])

    func completed(_ session: UUID, onboarding customer: UUID) { sessions.withLock { $0[customer] = session } }

    func onboardingSession(of customer: UUID, appId: UUID) async throws -> UUID? { sessions.withLock { $0[customer] } }
}

final class InMemoryLivenessChallenges: LivenessChallengeStore {
    private struct Challenge { var appId: UUID; var deviceId: String; var actions: [LivenessAction]; var expires: Date; var used = false }
    private struct State { var challenges: [String: Challenge] = [:]; var frames: Set<[UInt8]> = [] }

    let clock: FakeClock
    private let state = Mutex(State())

    init(clock: FakeClock) { self.clock = clock }

    func issue(_ challengeId: String, appId: UUID, deviceId: String, actions: [LivenessAction], ttlSeconds: Int) async throws {
        let expires = clock.now.addingTimeInterval(Double(ttlSeconds))
        state.withLock { $0.challenges[challengeId] = Challenge(appId: appId, deviceId: deviceId, actions: actions, expires: expires) }
    }

    func consume(_ challengeId: String, appId: UUID, deviceId: String, frames: [Data]) async throws -> [LivenessAction] {
        let now = clock.now
        return try state.withLock { state in
            guard var challenge = state.challenges[challengeId], challenge.appId == appId, challenge.deviceId == deviceId,
                  !challenge.used, challenge.expires > now else { throw LivenessChallenges.unknown }
            challenge.used = true
            state.challenges[challengeId] = challenge
            let digests = Set(frames.map { SHA256.hash(Array($0)) })
            let replayed = !state.frames.isDisjoint(with: digests)
            state.frames.formUnion(digests)
            if replayed { throw LivenessChallenges.replayed }
            return challenge.actions
        }
    }
}

/// What a callback was called with, in order.
final class Calls<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])
    var all: [Element] { items.withLock { $0 } }
    func record(_ item: Element) { items.withLock { $0.append(item) } }
}

/// The API error code `body` fails with (an `APIError`, or the envelope of an `HTTPError`): nil when it succeeds,
/// INTERNAL for any other error.
func errorCode<T>(_ body: () async throws -> T) async -> ErrorCode? {
    do {
        _ = try await body()
        return nil
    } catch let error as APIError {
        return error.code
    } catch let error as HTTPError {
        return ErrorCode(rawValue: error.code) ?? .internalError
    } catch {
        return .internalError
    }
}

/// Admits every call (the quota rules are `AppStore`'s: StoreContracts.AppStoreContract).
struct AdmitEverything: ModuleAdmission {
    func admit(_ app: AppRecord, module: Module) async throws {}
}

/// Answers face jobs from a script the test writes (what the matcher would have found), and keeps the jobs it got.
/// The matcher itself is tested on the real models and photos (FaceEngineTests, IntegrationTests).
final class ScriptedMatcher: FaceMatching {
    private let state = Mutex<(answers: [FaceJobResult], jobs: [FaceJob], messageIds: [String?])>(([], [], []))

    var jobs: [FaceJob] { state.withLock { $0.jobs } }
    var messageIds: [String?] { state.withLock { $0.messageIds } }

    func answer(_ results: FaceJobResult...) { state.withLock { $0.answers += results } }

    func match(_ job: FaceJob, messageId: String?) async throws -> FaceJobResult {
        try state.withLock { state in
            state.jobs.append(job)
            state.messageIds.append(messageId)
            guard !state.answers.isEmpty else { throw APIError(.serviceUnavailable, "face matching is unavailable right now; try again") }
            return state.answers.removeFirst()
        }
    }
}

/// Device credentials and their assertion challenges in memory, on the test's clock: one live credential per user and
/// device, challenges spent once, the counter rule in one step, as `PostgresDeviceCredentials` does.
final class InMemoryDeviceCredentials: DeviceCredentialStore {
    private struct Credential {
        var id: UUID; var appId: UUID; var userId: UUID; var deviceId: String; var publicKey: [UInt8]; var policy: String
        var hasAttestation: Bool; var counter: Int64 = 0; var createdAt: Date; var lastUsedAt: Date?; var flaggedAt: Date?; var revokedAt: Date?
    }
    private struct Challenge { var appId: UUID; var credential: UUID; var expires: Date; var used = false }
    private struct State { var credentials: [Credential] = []; var challenges: [String: Challenge] = [:]; var users: Set<UUID> = [] }
    private let state = Mutex(State())
    let clock: FakeClock

    init(clock: FakeClock) { self.clock = clock }

    /// Makes `user` one of the app's users (registration refuses others, as the foreign key does).
    func addUser(_ user: UUID) { state.withLock { _ = $0.users.insert(user) } }

    func register(_ credential: DeviceCredentials.NewCredential, appId: UUID, user: UUID, device: String) async throws -> UUID? {
        let now = clock.now
        return state.withLock { state in
            guard state.users.contains(user) else { return nil }
            for index in state.credentials.indices where state.credentials[index].appId == appId && state.credentials[index].userId == user
                && state.credentials[index].deviceId == device && state.credentials[index].revokedAt == nil {
                state.credentials[index].revokedAt = now
            }
            let id = UUID()
            state.credentials.append(Credential(id: id, appId: appId, userId: user, deviceId: device, publicKey: credential.publicKey.spkiDER,
                                                policy: credential.policy.rawValue, hasAttestation: credential.attestation != nil, createdAt: now))
            return id
        }
    }

    func live(_ id: UUID, appId: UUID, device: String) async throws -> StoredCredential? {
        state.withLock { state in
            state.credentials.first { $0.id == id && $0.appId == appId && $0.deviceId == device && $0.revokedAt == nil }.map {
                StoredCredential(id: $0.id, userId: $0.userId, publicKey: $0.publicKey, counter: $0.counter, flagged: $0.flaggedAt != nil)
            }
        }
    }

    func issueChallenge(_ challenge: String, appId: UUID, credential: UUID, ttlSeconds: Int) async throws {
        let expires = clock.now + Double(ttlSeconds)
        state.withLock { $0.challenges[challenge] = Challenge(appId: appId, credential: credential, expires: expires) }
    }

    func spendChallenge(_ challenge: String, appId: UUID, credential: UUID) async throws -> Bool {
        let now = clock.now
        return state.withLock { state in
            guard let found = state.challenges[challenge], found.appId == appId, found.credential == credential, !found.used,
                  found.expires > now else { return false }
            state.challenges[challenge]?.used = true
            return true
        }
    }

    func advanceCounter(_ id: UUID, to counter: Int64) async throws -> CounterAdvance {
        let now = clock.now
        return state.withLock { state in
            guard let index = state.credentials.firstIndex(where: { $0.id == id }), state.credentials[index].revokedAt == nil else {
                return .revoked
            }
            let stored = state.credentials[index]
            if stored.flaggedAt == nil, (stored.counter == 0 && counter == 0) || stored.counter < counter {
                state.credentials[index].counter = counter
                state.credentials[index].lastUsedAt = now
                return .advanced
            }
            if stored.flaggedAt == nil { state.credentials[index].flaggedAt = now }
            return .flagged
        }
    }

    func list(appId: UUID, user: UUID) async throws -> [CredentialView] {
        state.withLock { state in
            state.credentials.filter { $0.appId == appId && $0.userId == user }.map {
                CredentialView(credentialId: $0.id.wire, userId: $0.userId.wire, deviceId: $0.deviceId, policy: $0.policy, counter: $0.counter,
                               hasAttestation: $0.hasAttestation, createdAt: $0.createdAt, lastUsedAt: $0.lastUsedAt, flaggedAt: $0.flaggedAt,
                               revokedAt: $0.revokedAt)
            }
        }
    }

    func revoke(_ id: UUID, appId: UUID, device: String?) async throws -> (userId: UUID, deviceId: String)? {
        let now = clock.now
        return state.withLock { state in
            guard let index = state.credentials.firstIndex(where: {
                $0.id == id && $0.appId == appId && (device == nil || $0.deviceId == device) && $0.revokedAt == nil
            }) else { return nil }
            state.credentials[index].revokedAt = now
            return (state.credentials[index].userId, state.credentials[index].deviceId)
        }
    }

    func owner(of id: UUID, appId: UUID) async throws -> (userId: UUID, deviceId: String)? {
        state.withLock { state in state.credentials.first { $0.id == id && $0.appId == appId }.map { ($0.userId, $0.deviceId) } }
    }
}

/// `AppStore` in memory, on the test's clock (calls are counted per app and module; a test stays inside one day). The
/// sealed CTID keys are kept beside the records, as the `apps` table keeps them.
final class InMemoryApps: AppStore {
    private struct State { var apps: [UUID: AppRecord] = [:]; var sealedKeys: [UUID: [UInt8]] = [:]; var calls: [String: Int] = [:] }
    private let state = Mutex(State())
    let clock: FakeClock
    /// The app's people, which a deletion takes with it.
    let roster: InMemoryUserRoster?

    init(clock: FakeClock, roster: InMemoryUserRoster? = nil) {
        self.clock = clock
        self.roster = roster
    }

    func sealedCTIDKey(of app: UUID) -> [UInt8]? { state.withLock { $0.sealedKeys[app] } }

    func create(_ id: UUID, name: String, secretHash: [UInt8], ctidKeySealed: [UInt8], faceModel: FaceModel, settings: AppSettings) async throws {
        let now = clock.now
        state.withLock { state in
            precondition(state.apps[id] == nil, "an app id is new")
            state.apps[id] = AppRecord(id: id, name: name, secretHash: secretHash, modules: settings.modules, faceModel: faceModel,
                                       matchThreshold: settings.matchThreshold, liveness: settings.liveness,
                                       deviceBinding: settings.deviceBinding, deviceBindingPolicy: settings.deviceBindingPolicy,
                                       kioskApproval: settings.kioskApproval, quotas: settings.quotas,
                                       keepEnrollmentPhotos: settings.keepEnrollmentPhotos, createdAt: now)
            state.sealedKeys[id] = ctidKeySealed
        }
    }

    func update(_ id: UUID, settings: AppSettings) async throws {
        state.withLock { state in
            guard var app = state.apps[id] else { return }
            app.modules = settings.modules
            app.matchThreshold = settings.matchThreshold
            app.liveness = settings.liveness
            app.deviceBinding = settings.deviceBinding
            app.deviceBindingPolicy = settings.deviceBindingPolicy
            app.kioskApproval = settings.kioskApproval
            app.quotas = settings.quotas
            app.keepEnrollmentPhotos = settings.keepEnrollmentPhotos
            state.apps[id] = app
        }
    }

    func rotateSecret(_ id: UUID, to secretHash: [UInt8], graceSeconds: Int) async throws {
        let now = clock.now
        state.withLock { state in
            guard var app = state.apps[id] else { return }
            app.previousSecretHash = app.secretHash
            app.previousSecretValidUntil = now.addingTimeInterval(Double(graceSeconds))
            app.secretHash = secretHash
            app.secretRotatedAt = now
            state.apps[id] = app
        }
    }

    func revokePreviousSecret(_ id: UUID) async throws -> Bool {
        let now = clock.now
        return state.withLock { state in
            guard var app = state.apps[id], (app.previousSecretValidUntil ?? .distantPast) > now else { return false }
            app.previousSecretValidUntil = now
            state.apps[id] = app
            return true
        }
    }

    func switchModel(_ id: UUID, from: FaceModel, to model: FaceModel, threshold: Float) async throws -> Bool {
        state.withLock { state in
            guard var app = state.apps[id], app.faceModel == from else { return false }
            app.faceModel = model
            app.matchThreshold = threshold
            state.apps[id] = app
            return true
        }
    }

    func all(covered: (UUID) -> Bool) async throws -> [AppRecord] {
        state.withLock { state in
            state.apps.values.sorted { ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString) }.prefix(1000).filter { covered($0.id) }
        }
    }

    func find(_ id: UUID) async throws -> AppRecord? { state.withLock { $0.apps[id] } }

    func delete(_ id: UUID) async throws -> (users: Int, templates: [GalleryChange])? {
        guard state.withLock({ $0.apps.removeValue(forKey: id) }) != nil else { return nil }
        return roster?.eraseApp(id) ?? (0, [])
    }

    func admit(_ app: AppRecord, module: Module) async throws {
        let mode = app.modules[module]
        if mode == .disabled { throw APIError(.moduleDisabled, "the \(module.rawValue) module is disabled for this app") }
        let calls = state.withLock { state in
            state.calls["\(app.id.wire)/\(module.rawValue)", default: 0] += 1
            return state.calls["\(app.id.wire)/\(module.rawValue)"]!
        }
        if mode == .trial, calls > app.quotas.dailyCalls {
            throw APIError(.moduleNotFormal, "the \(module.rawValue) trial allows \(app.quotas.dailyCalls) calls a day; ask for the formal module")
        }
    }
}

/// The gallery changes a use case broadcast, in order.
final class RecordedBroadcasts: GalleryBroadcast {
    let changes = Calls<GalleryChange>()
    func broadcast(_ change: GalleryChange) async { changes.record(change) }
}

/// Audit records in memory for `AuditTrail`'s tests: pages filter by app list, kind, outcome and user, newest first;
/// `verify` answers an intact chain of the app's rows and records the checkpoint it was given. The chain itself is
/// recomputed only by `TransactionLog` (IntegrationTests' AuditTests tamper with real rows).
final class InMemoryAuditRecords: AuditRecords {
    private struct State {
        var records: [TransactionRecord] = []
        var heads: [UUID: (count: Int64, hash: [UInt8])] = [:]
        var asked: [(filter: TransactionLog.Filter, limit: Int)] = []
    }
    private let state = Mutex(State())
    let verified = Calls<AuditCheckpoint?>()

    /// Appends a row to its app's chain (the head counts it; its hash stands in for the keyed one).
    func add(_ record: TransactionRecord) {
        state.withLock { state in
            state.records.append(record)
            let head = state.heads[record.appId] ?? (0, TransactionRecord.genesisHash)
            state.heads[record.appId] = (head.count + 1, SHA256.hash(head.hash + Array(record.id.wire.utf8)))
        }
    }
    func setHead(_ appId: UUID, count: Int64, hash: [UInt8]) { state.withLock { $0.heads[appId] = (count, hash) } }
    /// Every page asked for: the filter and the limit.
    var asked: [(filter: TransactionLog.Filter, limit: Int)] { state.withLock { $0.asked } }

    func page(_ filter: TransactionLog.Filter, before cursor: (time: Date, id: UUID)?, limit: Int) async throws -> [TransactionRecord] {
        state.withLock { state in
            state.asked.append((filter, limit))
            let apps = filter.appIds.map { Set($0.split(separator: ",").map(String.init)) }
            return state.records
                .filter { apps?.contains($0.appId.wire) ?? true }
                .filter { filter.kind == nil || $0.kind == filter.kind }
                .filter { filter.outcome == nil || $0.outcome == filter.outcome }
                .filter { filter.userId == nil || $0.userId == filter.userId }
                .filter { filter.deviceId == nil || $0.deviceId == filter.deviceId }
                .filter { filter.from == nil || $0.createdAt >= filter.from! }
                .filter { filter.to == nil || $0.createdAt < filter.to! }
                .sorted { ($0.createdAt, $0.id.uuidString) > ($1.createdAt, $1.id.uuidString) }
                .filter { cursor == nil || ($0.createdAt, $0.id.uuidString) < (cursor!.time, cursor!.id.uuidString) }
                .prefix(limit).map { $0 }
        }
    }

    func head(of appId: UUID) async throws -> (count: Int64, hash: [UInt8])? { state.withLock { $0.heads[appId] } }

    func lengths() async throws -> [(appId: UUID, count: Int64)] { state.withLock { $0.heads.map { ($0.key, $0.value.count) } } }

    func verify(appId: UUID, checkpoint: AuditCheckpoint?, acceptUnkeyed: Bool) async throws -> TransactionLog.Verification {
        verified.record(checkpoint)
        let checked = state.withLock { state in state.records.filter { $0.appId == appId }.count }
        return TransactionLog.Verification(appId: appId.wire, ok: true, checked: checked)
    }
}

/// `ApiKeyStore` in memory, on the test's clock.
final class InMemoryApiKeys: ApiKeyStore {
    private struct Key { var record: ApiKeyRecord; var role: String; var hash: [UInt8] }
    private let keys = Mutex<[Key]>([])
    let clock: FakeClock

    init(clock: FakeClock) { self.clock = clock }

    func live(hash: [UInt8]) async throws -> (id: UUID, role: String, appIds: [UUID]?)? {
        let now = clock.now
        return keys.withLock { keys in
            keys.first { $0.hash == hash && $0.record.revokedAt == nil && ($0.record.expiresAt.map { $0 > now } ?? true) }
                .map { (id: $0.record.id, role: $0.role, appIds: $0.record.appIds) }
        }
    }

    func create(id: UUID, role: String, name: String, hash: [UInt8], appIds: [UUID]?, expiresAt: Date?) async throws {
        let now = clock.now
        keys.withLock { $0.append(Key(record: ApiKeyRecord(id: id, name: name, appIds: appIds, createdAt: now, expiresAt: expiresAt), role: role, hash: hash)) }
    }

    func list(role: String) async throws -> [ApiKeyRecord] {
        keys.withLock { keys in
            keys.filter { $0.role == role }.map(\.record).sorted { ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString) }
        }
    }

    func revoke(_ id: UUID, role: String) async throws -> Bool {
        let now = clock.now
        return keys.withLock { keys in
            guard let index = keys.firstIndex(where: { $0.record.id == id && $0.role == role }) else { return false }
            keys[index].record.revokedAt = keys[index].record.revokedAt ?? now
            return true
        }
    }

    func forget(app: UUID) async throws {
        let now = clock.now
        keys.withLock { keys in
            for index in keys.indices where keys[index].role == "admin" && keys[index].record.appIds?.contains(app) == true {
                if keys[index].record.appIds == [app] { keys[index].record.revokedAt = keys[index].record.revokedAt ?? now }
                keys[index].record.appIds?.removeAll { $0 == app }
            }
        }
    }
}

/// Remembered requests in memory, on the test's clock; held to PostgreSQL's by the contract tests.
final class InMemoryIdempotencyRecords: IdempotencyRecords {
    private struct Entry { var record: IdempotencyRecord; var createdAt: Date }
    private let clock: FakeClock
    private let entries = Mutex<[IdempotencyRecordID: Entry]>([:])

    init(clock: FakeClock) { self.clock = clock }

    func claim(_ id: IdempotencyRecordID, requestHash: [UInt8], retentionSeconds: Int, abandonedSeconds: Int) async throws -> Bool {
        let now = clock.now
        return entries.withLock { entries in
            if let entry = entries[id] {
                let age = now.timeIntervalSince(entry.createdAt)
                guard age > Double(retentionSeconds) || (entry.record.status == nil && age > Double(abandonedSeconds)) else { return false }
            }
            entries[id] = Entry(record: IdempotencyRecord(requestHash: requestHash), createdAt: now)
            return true
        }
    }

    func record(_ id: IdempotencyRecordID) async throws -> IdempotencyRecord? { entries.withLock { $0[id]?.record } }

    func settle(_ id: IdempotencyRecordID, status: Int, sealedAnswer: [UInt8]) async throws {
        entries.withLock { entries in
            entries[id]?.record.status = status
            entries[id]?.record.sealedAnswer = sealedAnswer
        }
    }

    func release(_ id: IdempotencyRecordID) async throws {
        entries.withLock { entries in
            if let entry = entries[id], entry.record.status == nil { entries[id] = nil }
        }
    }

    func sweep(olderThanSeconds: Int) async throws {
        let now = clock.now
        entries.withLock { entries in entries = entries.filter { now.timeIntervalSince($0.value.createdAt) <= Double(olderThanSeconds) } }
    }
}

/// A fake store's answer to a second row with the same primary key, as PostgreSQL refuses it.
struct DuplicateKey: Error { var key: String }

/// Kiosk event tickets on the test's clock: each spent once, by its session, before it expires.
final class InMemoryKioskEventTickets: KioskEventTicketStore {
    private struct Ticket { var session: UUID; var expiresAt: Date; var spent = false }
    private let tickets = Mutex<[String: Ticket]>([:])
    let clock: FakeClock

    init(clock: FakeClock) { self.clock = clock }

    func issue(_ ticket: String, appId: UUID, session: UUID, ttlSeconds: Int) async throws {
        let expiresAt = clock.now.addingTimeInterval(TimeInterval(ttlSeconds))
        try tickets.withLock { tickets in
            guard tickets[ticket] == nil else { throw DuplicateKey(key: ticket) }
            tickets[ticket] = Ticket(session: session, expiresAt: expiresAt)
        }
    }

    func spend(_ ticket: String, session: UUID) async throws -> Bool {
        let now = clock.now
        return tickets.withLock { tickets in
            guard let found = tickets[ticket], found.session == session, !found.spent, found.expiresAt > now else { return false }
            tickets[ticket]?.spent = true
            return true
        }
    }
}

/// Registered kiosks' keys, by app and thumbprint.
final class InMemoryKioskKeys: KioskKeys {
    private let keys = Mutex<Set<String>>([])

    func register(appId: UUID, jkt: String) { keys.withLock { _ = $0.insert(appId.wire + "/" + jkt) } }

    func isLiveKiosk(appId: UUID, jkt: String) async throws -> Bool { keys.withLock { $0.contains(appId.wire + "/" + jkt) } }
}
