import AppRecords
import Crypto
import FaceGateCore
import Foundation
import Synchronization

// In-memory twins of this module's stores, on a clock the test moves (`TwinClock`): for use-case and worker tests
// without PostgreSQL. `StoreContractTests` runs one suite against each and against its PostgreSQL store, so a twin
// that drifts from the real behaviour fails there.

/// `AttemptCounterStore` in memory, on the test's clock: for use-case tests. The
/// contract tests hold it to the PostgreSQL store's behaviour.
package final class InMemoryAttemptCounters: AttemptCounterStore {
    package let clock: TwinClock

    package init(clock: TwinClock) { self.clock = clock }

    private struct Counter { var consecutive = 0; var total = 0; var lastFailure = Date.distantPast; var locked = false }
    private let counters = Mutex<[String: Counter]>([:])

    private var now: Date { clock.now }

    package func charge(appId: UUID, _ subjects: [(subject: String, rule: AttemptRule)]) async throws -> [Bool] {
        var counted: [Bool] = []
        for (subject, rule) in subjects {
            counted.append(counted.allSatisfy { $0 } ? try await charge(appId: appId, subject: subject, rule: rule) : false)
        }
        return counted
    }

    package func refund(appId: UUID, _ subjects: [(subject: String, success: Bool, rule: AttemptRule)]) async throws {
        for (subject, success, rule) in subjects { try await refund(appId: appId, subject: subject, success: success, rule: rule) }
    }

    package func charge(appId: UUID, subject: String, rule: AttemptRule) async throws -> Bool {
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

    package func state(appId: UUID, subject: String, rule: AttemptRule) async throws -> AttemptState? {
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

    package func refund(appId: UUID, subject: String, success: Bool, rule: AttemptRule) async throws {
        counters.withLock { counters in
            guard var counter = counters[appId.wire + subject] else { return }
            if rule.failureWindow > 0 { counter.lastFailure = counter.lastFailure.addingTimeInterval(-rule.failureInterval) }
            counter.consecutive = success ? 0 : max(counter.consecutive - 1, 0)
            counter.total = max(counter.total - 1, 0)
            if rule.lockAfter > 0, counter.total < rule.lockAfter { counter.locked = false }
            counters[appId.wire + subject] = counter
        }
    }

    package func reset(appId: UUID, subject: String) async throws {
        _ = counters.withLock { $0.removeValue(forKey: appId.wire + subject) }
    }
}

package final class InMemoryDeviceBindings: DeviceBindingStore {
    private struct Binding { var appId: UUID; var deviceId: String; var userId: UUID; var keyBound: Bool; var at: Date }
    private struct Confirmation {
        package var pending: PendingConfirmation
        package var expires: Date
        package var mismatches = 0
        package var used = false
        package var voided = false
    }
    private struct Ticket { var appId: UUID; var userId: UUID; var issuer: String; var expires: Date; var used = false }
    private struct State {
        package var bindings: [Binding] = []
        package var confirmations: [UUID: Confirmation] = [:]
        package var tickets: [String: Ticket] = [:]
    }

    package let clock: TwinClock
    private let state = Mutex(State())

    package init(clock: TwinClock) { self.clock = clock }

    package func boundUsers(appId: UUID, device: ClientDevice) async throws -> [UUID] {
        state.withLock { state in
            state.bindings.filter { $0.appId == appId && $0.deviceId == device.id && $0.keyBound == device.isKey }
                .sorted { $0.at > $1.at }.prefix(10).map(\.userId)
        }
    }

    package func open(_ confirmation: PendingConfirmation) async throws {
        let expires = clock.now.addingTimeInterval(Double(confirmation.ttlSeconds))
        state.withLock { $0.confirmations[confirmation.id] = Confirmation(pending: confirmation, expires: expires) }
    }

    package func confirmation(_ id: UUID, appId: UUID, deviceId: String) async throws -> ConfirmationState? {
        let now = clock.now
        return state.withLock { state in
            guard let found = state.confirmations[id], found.pending.appId == appId, found.pending.deviceId == deviceId else { return nil }
            return ConfirmationState(candidates: found.pending.candidates, usable: !found.used && !found.voided && found.expires > now)
        }
    }

    package func recordMismatch(_ id: UUID) async throws -> Int {
        state.withLock { state in
            guard var found = state.confirmations[id] else { return 0 }
            found.mismatches += 1
            if found.mismatches >= DeviceBindings.mismatchesAllowed { found.voided = true }
            state.confirmations[id] = found
            return DeviceBindings.mismatchesAllowed - found.mismatches
        }
    }

    package func bind(confirmation: UUID, appId: UUID, device: ClientDevice, user: UUID, ticket: BindingTicketCheck?) async throws {
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

    package func issueTicket(key: String, appId: UUID, user: UUID, issuer: String, ttlSeconds: Int) async throws {
        let expires = clock.now.addingTimeInterval(Double(ttlSeconds))
        state.withLock { $0.tickets[key] = Ticket(appId: appId, userId: user, issuer: issuer, expires: expires) }
    }

    package func ticket(key: String, appId: UUID) async throws -> (user: UUID, issuer: String, userHasKey: Bool)? {
        let now = clock.now
        return state.withLock { state in
            guard let stored = state.tickets[key], stored.appId == appId, !stored.used, stored.expires > now else { return nil }
            return (stored.userId, stored.issuer, state.bindings.contains { $0.appId == appId && $0.userId == stored.userId && $0.keyBound })
        }
    }

    package func void(_ confirmation: UUID) async throws {
        state.withLock { $0.confirmations[confirmation]?.voided = true }
    }
}

package final class InMemoryUserDirectory: UserDirectory {
    package init() {}

    private struct User { var appId: UUID; var id: UUID; var employeeNumber: String; var name: String; var hasFace: Bool }
    private let users = Mutex<[User]>([])

    /// A user of the app, enrolled (holding a template) unless `hasFace` is false.
    package func add(appId: UUID, employeeNumber: String, name: String = "Someone", hasFace: Bool = true) -> UUID {
        let id = UUID()
        users.withLock { $0.append(User(appId: appId, id: id, employeeNumber: employeeNumber, name: name, hasFace: hasFace)) }
        return id
    }

    package func remove(_ id: UUID) { users.withLock { $0.removeAll { $0.id == id } } }

    package func user(appId: UUID, employeeNumber: String) async throws -> UUID? {
        users.withLock { $0.first { $0.appId == appId && $0.employeeNumber == employeeNumber }?.id }
    }

    package func profile(of user: UUID, appId: UUID) async throws -> UserProfile? {
        users.withLock { $0.first { $0.appId == appId && $0.id == user }.map { UserProfile(employeeNumber: $0.employeeNumber, name: $0.name) } }
    }

    package func hasFace(_ user: UUID, appId: UUID) async throws -> Bool {
        users.withLock { $0.contains { $0.appId == appId && $0.id == user && $0.hasFace } }
    }

    package func employeeNumbers(of ids: [UUID], appId: UUID) async throws -> [UUID: String] {
        users.withLock { users in
            Dictionary(uniqueKeysWithValues: users.filter { $0.appId == appId && ids.contains($0.id) }.map { ($0.id, $0.employeeNumber) })
        }
    }
}

/// Users and their templates as operators manage them, and as a face-model migration reads them; `addTemplate` stands
/// in for the matcher's enrollment (and its kept photo).
package final class InMemoryUserRoster: UserRoster {
    private struct User { var id: UUID; var appId: UUID; var employeeNumber: String; var name: String; var createdAt: Date }
    private struct Template {
        package var id: UUID; var appId: UUID; var userId: UUID; var model: FaceModel; var keptPhoto: Bool; var changeSeq: Int64; var createdAt: Date
    }
    private struct State { var users: [User] = []; var templates: [Template] = []; var seq: Int64 = 0 }
    private let state = Mutex(State())
    package let clock: TwinClock

    package init(clock: TwinClock) { self.clock = clock }

    package func addTemplate(_ id: UUID = UUID(), user: UUID, appId: UUID, model: FaceModel = .sface2021dec, keptPhoto: Bool = false) {
        let now = clock.now
        state.withLock { state in
            state.seq += 1
            state.templates.append(Template(id: id, appId: appId, userId: user, model: model, keptPhoto: keptPhoto, changeSeq: state.seq,
                                            createdAt: now))
        }
    }

    package func create(_ id: UUID, appId: UUID, employeeNumber: String, name: String) async throws -> Bool {
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

    package func user(_ id: UUID, appId: UUID) async throws -> UserView? {
        state.withLock { state in state.users.first { $0.id == id && $0.appId == appId }.map { view($0, state) } }
    }

    package func page(appId: UUID, after: PageCursor?, limit: Int) async throws -> [UserView] {
        state.withLock { state in
            state.users.filter { $0.appId == appId }
                .sorted { ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString) }
                .filter { after == nil || ($0.createdAt, $0.id.uuidString) > (after!.time, after!.id.uuidString) }
                .prefix(limit).map { view($0, state) }
        }
    }

    package func erase(_ user: UUID, appId: UUID) async throws -> [GalleryChange]? {
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

    package func enrolledUsers(appId: UUID) async throws -> Int {
        state.withLock { Set($0.templates.filter { $0.appId == appId }.map(\.userId)).count }
    }

    package func templateCount(appId: UUID, model: FaceModel) async throws -> Int {
        state.withLock { $0.templates.filter { $0.appId == appId && $0.model == model }.count }
    }

    package func faces(of user: UUID, appId: UUID) async throws -> [FaceView] {
        state.withLock { state in
            state.templates.filter { $0.userId == user && $0.appId == appId }.map {
                FaceView(templateId: $0.id.wire, model: $0.model.rawValue,
                         quality: FaceQualityReport(faceWidth: 120, sharpness: 1, brightness: 0.5, yaw: 0), createdAt: $0.createdAt)
            }
        }
    }

    /// What deleting the app takes from the roster, as the cascade from `apps` does.
    package func eraseApp(_ appId: UUID) -> (users: Int, templates: [GalleryChange]) {
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

    package func eraseFace(_ template: UUID, of user: UUID, appId: UUID) async throws -> GalleryChange? {
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

    package func counts(appId: UUID, from: FaceModel, to: FaceModel) async throws -> (users: Int, ready: Int, keptPhotos: Int) {
        state.withLock { state in
            let users = holders(appId: appId, from, state)
            let ready = users.filter { holds($0.id, to, state) }
            return (users.count, ready.count, users.filter { !holds($0.id, to, state) && keptPhoto($0.id, state) }.count)
        }
    }

    package func pending(appId: UUID, from: FaceModel, to: FaceModel, limit: Int) async throws -> [PendingUser] {
        state.withLock { state in
            holders(appId: appId, from, state).filter { !holds($0.id, to, state) }.prefix(limit).map {
                PendingUser(id: $0.id, employeeNumber: $0.employeeNumber, keptPhoto: keptPhoto($0.id, state))
            }
        }
    }

    package func keptPhotos(appId: UUID, from: FaceModel, to: FaceModel, after: UUID, limit: Int) async throws -> [UUID] {
        state.withLock { state in
            state.templates.filter { $0.appId == appId && $0.keptPhoto && $0.model == from && $0.id.wire > after.wire && !holds($0.userId, to, state) }
                .map(\.id).sorted { $0.wire < $1.wire }.prefix(limit).map { $0 }
        }
    }

    package func holds(_ user: UUID, appId: UUID, model: FaceModel) async throws -> Bool {
        state.withLock { state in state.templates.contains { $0.appId == appId && $0.userId == user && $0.model == model } }
    }
}

package final class InMemoryLivenessChallenges: LivenessChallengeStore {
    private struct Challenge { var appId: UUID; var deviceId: String; var actions: [LivenessAction]; var expires: Date; var used = false }
    private struct State { var challenges: [String: Challenge] = [:]; var frames: Set<[UInt8]> = [] }

    package let clock: TwinClock
    private let state = Mutex(State())

    package init(clock: TwinClock) { self.clock = clock }

    package func issue(_ challengeId: String, appId: UUID, deviceId: String, actions: [LivenessAction], ttlSeconds: Int) async throws {
        let expires = clock.now.addingTimeInterval(Double(ttlSeconds))
        state.withLock { $0.challenges[challengeId] = Challenge(appId: appId, deviceId: deviceId, actions: actions, expires: expires) }
    }

    package func consume(_ challengeId: String, appId: UUID, deviceId: String, frames: [Data]) async throws -> [LivenessAction] {
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

/// Device credentials and their assertion challenges in memory, on the test's clock: one live credential per user and
/// device, challenges spent once, the counter rule in one step, as `PostgresDeviceCredentials` does.
package final class InMemoryDeviceCredentials: DeviceCredentialStore {
    private struct Credential {
        package var id: UUID; var appId: UUID; var userId: UUID; var deviceId: String; var publicKey: [UInt8]; var policy: String
        package var hasAttestation: Bool; var counter: Int64 = 0; var createdAt: Date; var lastUsedAt: Date?; var flaggedAt: Date?; var revokedAt: Date?
    }
    private struct Challenge { var appId: UUID; var credential: UUID; var expires: Date; var used = false }
    private struct State { var credentials: [Credential] = []; var challenges: [String: Challenge] = [:]; var users: Set<UUID> = [] }
    private let state = Mutex(State())
    package let clock: TwinClock

    package init(clock: TwinClock) { self.clock = clock }

    /// Makes `user` one of the app's users (registration refuses others, as the foreign key does).
    package func addUser(_ user: UUID) { state.withLock { _ = $0.users.insert(user) } }

    package func register(_ credential: NewDeviceCredential, appId: UUID, user: UUID, device: String) async throws -> UUID? {
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

    package func live(_ id: UUID, appId: UUID, device: String) async throws -> StoredCredential? {
        state.withLock { state in
            state.credentials.first { $0.id == id && $0.appId == appId && $0.deviceId == device && $0.revokedAt == nil }.map {
                StoredCredential(id: $0.id, userId: $0.userId, publicKey: $0.publicKey, counter: $0.counter, flagged: $0.flaggedAt != nil)
            }
        }
    }

    package func issueChallenge(_ challenge: String, appId: UUID, credential: UUID, ttlSeconds: Int) async throws {
        let expires = clock.now + Double(ttlSeconds)
        state.withLock { $0.challenges[challenge] = Challenge(appId: appId, credential: credential, expires: expires) }
    }

    package func spendChallenge(_ challenge: String, appId: UUID, credential: UUID) async throws -> Bool {
        let now = clock.now
        return state.withLock { state in
            guard let found = state.challenges[challenge], found.appId == appId, found.credential == credential, !found.used,
                  found.expires > now else { return false }
            state.challenges[challenge]?.used = true
            return true
        }
    }

    package func advanceCounter(_ id: UUID, to counter: Int64) async throws -> CounterAdvance {
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

    package func list(appId: UUID, user: UUID) async throws -> [CredentialView] {
        state.withLock { state in
            state.credentials.filter { $0.appId == appId && $0.userId == user }.map {
                CredentialView(credentialId: $0.id.wire, userId: $0.userId.wire, deviceId: $0.deviceId, policy: $0.policy, counter: $0.counter,
                               hasAttestation: $0.hasAttestation, createdAt: $0.createdAt, lastUsedAt: $0.lastUsedAt, flaggedAt: $0.flaggedAt,
                               revokedAt: $0.revokedAt)
            }
        }
    }

    package func revoke(_ id: UUID, appId: UUID, device: String?) async throws -> (userId: UUID, deviceId: String)? {
        let now = clock.now
        return state.withLock { state in
            guard let index = state.credentials.firstIndex(where: {
                $0.id == id && $0.appId == appId && (device == nil || $0.deviceId == device) && $0.revokedAt == nil
            }) else { return nil }
            state.credentials[index].revokedAt = now
            return (state.credentials[index].userId, state.credentials[index].deviceId)
        }
    }

    package func owner(of id: UUID, appId: UUID) async throws -> (userId: UUID, deviceId: String)? {
        state.withLock { state in state.credentials.first { $0.id == id && $0.appId == appId }.map { ($0.userId, $0.deviceId) } }
    }
}

/// Kiosk event tickets on the test's clock: each spent once, by its session, before it expires.
package final class InMemoryKioskEventTickets: KioskEventTicketStore {
    private struct Ticket { var session: UUID; var expiresAt: Date; var spent = false }
    private let tickets = Mutex<[String: Ticket]>([:])
    package let clock: TwinClock

    package init(clock: TwinClock) { self.clock = clock }

    package func issue(_ ticket: String, appId: UUID, session: UUID, ttlSeconds: Int) async throws {
        let expiresAt = clock.now.addingTimeInterval(TimeInterval(ttlSeconds))
        try tickets.withLock { tickets in
            guard tickets[ticket] == nil else { throw DuplicateKey(key: ticket) }
            tickets[ticket] = Ticket(session: session, expiresAt: expiresAt)
        }
    }

    package func spend(_ ticket: String, session: UUID) async throws -> Bool {
        let now = clock.now
        return tickets.withLock { tickets in
            guard let found = tickets[ticket], found.session == session, !found.spent, found.expiresAt > now else { return false }
            tickets[ticket]?.spent = true
            return true
        }
    }
}
