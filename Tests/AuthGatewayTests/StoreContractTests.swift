import AppRecords
import AuditRecords
@testable import AuthGateway
import CTIDRecords
import Crypto
import FaceGateCore
import FaceGateTestSupport
import Foundation
import IdentityRecords
import PostgresClient
import ServiceKit
import Testing

/// One suite per store protocol, run against the in-memory store the use-case tests use and against the PostgreSQL
/// store the gateway uses (logged in as the gateway, confined to one app as a request is). A behaviour the fake gets
/// wrong fails here, not in production.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, postgres
    var testDescription: String { rawValue }
}

/// A place to run one contract test: an app (and users) of its own, the stores, and a way to let time pass.
struct StoreWorld: Sendable {
    let appId: UUID
    let apps: any AppStore
    let apiKeys: any ApiKeyStore
    let attempts: any AttemptCounterStore
    let bindings: any DeviceBindingStore
    let challenges: any LivenessChallengeStore
    let credentials: any DeviceCredentialStore
    let idempotency: any IdempotencyRecords
    let spentIds: any SpentTokenIds
    let roster: any UserRoster
    let audit: any AuditRecords
    /// Appends a transaction to the app's chain, as every recorded call does.
    let appendAudit: @Sendable (TransactionRecord) async throws -> Void
    let directory: any UserDirectory
    /// Adds a user to the app as the operator API would, with a face template or without.
    let addDirectoryUser: @Sendable (_ employeeNumber: String, _ name: String, _ withFace: Bool) async throws -> UUID
    let migration: any ModelMigrationStore
    let eventTickets: any KioskEventTicketStore
    let serials: any CTIDSerialStore
    /// The serials as the ctid-verifier's login spends them (nil: `serials` itself).
    let verifierSerials: (any CTIDSerialStore)?
    /// Stores a template of a model for the user, with or without a kept photo, as the matcher's enrollment would.
    let storeTemplate: @Sendable (_ id: UUID, _ user: UUID, _ model: FaceModel, _ keptPhoto: Bool) async throws -> Void
    /// The store's present time: the fakes' clock, or this machine's (PostgreSQL's `now()`).
    let now: @Sendable () -> Date
    /// Lets `seconds` pass: the fakes' clock moves, PostgreSQL's is waited for.
    let advance: @Sendable (Double) async throws -> Void
    /// Adds a user to the app.
    let addUser: @Sendable () async throws -> UUID
    /// Runs a call as a gateway request of the app runs.
    let scoped: @Sendable (_ body: @Sendable () async throws -> Void) async throws -> Void

    static func make(_ kind: StoreKind) async throws -> StoreWorld {
        let appId = UUID()
        switch kind {
        case .memory:
            let clock = FakeClock()
            let roster = InMemoryUserRoster(clock: clock)
            let directory = InMemoryUserDirectory()
            let audit = InMemoryAuditRecords()
            let credentials = InMemoryDeviceCredentials(clock: clock)
            return StoreWorld(appId: appId, apps: InMemoryApps(clock: clock, roster: roster), apiKeys: InMemoryApiKeys(clock: clock), attempts: InMemoryAttemptCounters(clock: clock), bindings: InMemoryDeviceBindings(clock: clock),
                              challenges: InMemoryLivenessChallenges(clock: clock), credentials: credentials,
                              idempotency: InMemoryIdempotencyRecords(clock: clock), spentIds: InMemorySpentTokenIds(),
                              roster: roster, audit: audit, appendAudit: { audit.add($0) }, directory: directory,
                              addDirectoryUser: { directory.add(appId: appId, employeeNumber: $0, name: $1, hasFace: $2) }, migration: roster, eventTickets: InMemoryKioskEventTickets(clock: clock), serials: InMemoryCTIDSerials(now: { clock.now }), verifierSerials: nil,
                              storeTemplate: { roster.addTemplate($0, user: $1, appId: appId, model: $2, keptPhoto: $3) }, now: { clock.now },
                              advance: { clock.advance(seconds: $0) },
                              addUser: {
                                  let user = UUID()
                                  credentials.addUser(user)
                                  return user
                              },
                              scoped: { try await $0() })
        case .postgres:
            guard let scope = ContractDatabase.current else { throw TestSetupError("a contract test runs inside the StoreContracts suite") }
            let (database, gateway) = (scope.database, scope.gateway)
            _ = try await database.pool.query("""
                INSERT INTO apps (id, name, secret_hash, modules, liveness, quotas) VALUES (\(appId), 'contract', '\\x00', '{}', '{}', '{}')
                """)
            let auditLog = TransactionLog(database: gateway, publishing: nil, logger: Logger(label: "contract"),
                                          keys: AuditKeys(current: Array(repeating: 7, count: 32)))
            /// A template as the matcher's enrollment stores it (the embedding is not read here).
            @Sendable func insertTemplate(_ id: UUID, _ user: UUID, _ model: FaceModel) async throws {
                _ = try await database.pool.query("""
                    INSERT INTO face_templates (id, app_id, user_id, embedding_sealed, model_id, quality)
                    VALUES (\(id), \(appId), \(user), '\\x00', \(model.rawValue), '{"faceWidth": 120, "sharpness": 1, "brightness": 0.5, "yaw": 0}')
                    """)
            }
            return StoreWorld(appId: appId, apps: PostgresApps(database: gateway), apiKeys: PostgresApiKeys(database: gateway), attempts: PostgresAttemptCounters(database: gateway), bindings: PostgresDeviceBindings(database: gateway),
                              challenges: PostgresLivenessChallenges(database: gateway), credentials: PostgresDeviceCredentials(database: gateway),
                              idempotency: PostgresIdempotencyRecords(database: gateway), spentIds: PostgresSpentTokenIds(database: gateway),
                              roster: PostgresUserRoster(database: gateway), audit: auditLog, appendAudit: { try await auditLog.append($0) },
                              directory: PostgresUserDirectory(database: gateway),
                              addDirectoryUser: { number, name, withFace in
                                  let user = UUID()
                                  _ = try await database.pool.query("""
                                      INSERT INTO users (id, app_id, employee_number, name) VALUES (\(user), \(appId), \(number), \(name))
                                      """)
                                  if withFace { try await insertTemplate(UUID(), user, .sface2021dec) }
                                  return user
                              },
                              migration: PostgresModelMigration(database: gateway),
                              eventTickets: PostgresKioskEventTickets(database: gateway), serials: PostgresCTIDSerials(database: gateway),
                              verifierSerials: PostgresCTIDSerials(database: scope.ctidVerifier),
                              storeTemplate: { id, user, model, keptPhoto in
                                  try await insertTemplate(id, user, model)
                                  guard keptPhoto else { return }
                                  _ = try await database.pool.query("""
                                      INSERT INTO enrollment_photos (template_id, app_id, user_id, photo_sealed, consent_at)
                                      VALUES (\(id), \(appId), \(user), '\\x00', now())
                                      """)
                              },
                              now: { Date() }, advance: { try await Task.sleep(for: .milliseconds(Int($0 * 1000) + 100)) },
                              addUser: {
                                  let user = UUID()
                                  _ = try await database.pool.query("""
                                      INSERT INTO users (id, app_id, employee_number, name) VALUES (\(user), \(appId), \(String(user.wire.prefix(13))), 'someone')
                                      """)
                                  return user
                              },
                              scoped: { body in try await Tenant.run(app: appId) { try await body() } })
        }
    }
}

extension StoreWorld {
    func addTemplate(_ id: UUID, _ user: UUID, model: FaceModel = .sface2021dec, keptPhoto: Bool = false) async throws {
        try await storeTemplate(id, user, model, keptPhoto)
    }
}

/// The database of the contract tests: one for all of them (each test makes an app of its own), made before the first
/// and dropped after the last by the `StoreContracts` suite's trait.
struct ContractDatabase: Sendable {
    @TaskLocal static var current: ContractDatabase?

    let database: TestDatabase
    /// The gateway's own login role on it.
    let gateway: PostgresPool
    /// The ctid-verifier's.
    let ctidVerifier: PostgresPool
}

struct ContractDatabaseTrait: SuiteTrait, TestScoping {
    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let database = try await TestDatabase.create()
        let scope = ContractDatabase(database: database,
                                     gateway: PostgresPool(configuration: try PostgresConfiguration(url: database.url(for: "auth-gateway"))),
                                     ctidVerifier: PostgresPool(configuration: try PostgresConfiguration(url: database.url(for: "ctid-verifier"))))
        func close() async {
            await scope.gateway.close()
            await scope.ctidVerifier.close()
            await database.drop()
        }
        do {
            try await ContractDatabase.$current.withValue(scope) { try await function() }
        } catch {
            await close()
            throw error
        }
        await close()
    }
}

@Suite(ContractDatabaseTrait()) struct StoreContracts {}

extension StoreContracts {
    @Suite struct AttemptCounterStoreContract {
        let rule = AttemptGuard.Rule(throttleAfter: 3, throttleSeconds: 1, lockAfter: 5)

        @Test(arguments: StoreKind.allCases) func chargesUpToTheThrottleThenRefusesUntilTheWaitIsOver(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            try await world.scoped {
                #expect(try await world.attempts.state(appId: world.appId, subject: "device:a", rule: rule) == nil)
                for _ in 0..<3 { #expect(try await world.attempts.charge(appId: world.appId, subject: "device:a", rule: rule)) }
                #expect(try await !world.attempts.charge(appId: world.appId, subject: "device:a", rule: rule))
                let state = try #require(try await world.attempts.state(appId: world.appId, subject: "device:a", rule: rule))
                #expect(state.throttled && !state.locked)
                #expect((1...1).contains(state.waitSeconds))
                // Another subject, and the same subject in another app's counters, are untouched.
                #expect(try await world.attempts.charge(appId: world.appId, subject: "device:b", rule: rule))
                try await world.advance(1)
                #expect(try await world.attempts.charge(appId: world.appId, subject: "device:a", rule: rule))
            }
        }

        @Test(arguments: StoreKind.allCases) func locksAtTheTotalAndOnlyAResetOrRefundsOpenIt(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let lenient = AttemptGuard.Rule(throttleAfter: 100, throttleSeconds: 1, lockAfter: 5)
            try await world.scoped {
                for _ in 0..<5 { #expect(try await world.attempts.charge(appId: world.appId, subject: "binding:u", rule: lenient)) }
                #expect(try await world.attempts.state(appId: world.appId, subject: "binding:u", rule: lenient)?.locked == true)
                #expect(try await !world.attempts.charge(appId: world.appId, subject: "binding:u", rule: lenient))
                // A refund takes the total below the lock.
                try await world.attempts.refund(appId: world.appId, subject: "binding:u", success: false, rule: lenient)
                #expect(try await world.attempts.state(appId: world.appId, subject: "binding:u", rule: lenient)?.locked == false)
                try await world.attempts.reset(appId: world.appId, subject: "binding:u")
                #expect(try await world.attempts.state(appId: world.appId, subject: "binding:u", rule: lenient) == nil)
            }
        }

        @Test(arguments: StoreKind.allCases) func aSuccessClearsTheConsecutiveCountANeutralRefundOneCharge(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            try await world.scoped {
                for _ in 0..<3 { _ = try await world.attempts.charge(appId: world.appId, subject: "device:a", rule: rule) }
                try await world.attempts.refund(appId: world.appId, subject: "device:a", success: false, rule: rule)
                #expect(try await world.attempts.state(appId: world.appId, subject: "device:a", rule: rule)?.throttled == false)
                #expect(try await world.attempts.charge(appId: world.appId, subject: "device:a", rule: rule))
                try await world.attempts.refund(appId: world.appId, subject: "device:a", success: true, rule: rule)
                for _ in 0..<3 { #expect(try await world.attempts.charge(appId: world.appId, subject: "device:a", rule: rule)) }
            }
        }

        /// Subjects charged together are charged in order, in one statement, and none after the first refused.
        @Test(arguments: StoreKind.allCases) func subjectsChargedTogetherStopAtTheFirstRefused(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            try await world.scoped {
                for _ in 0..<3 { _ = try await world.attempts.charge(appId: world.appId, subject: "device:a", rule: rule) }
                let counted = try await world.attempts.charge(appId: world.appId, [("address:x", rule), ("device:a", rule), ("device:b", rule)])
                #expect(counted == [true, false, false])
                #expect(try await world.attempts.state(appId: world.appId, subject: "device:b", rule: rule) == nil, "never charged")
                try await world.attempts.refund(appId: world.appId, [("address:x", false, rule)])
                let address = try #require(try await world.attempts.state(appId: world.appId, subject: "address:x", rule: rule))
                #expect(!address.throttled && !address.locked)
                #expect(try await world.attempts.charge(appId: world.appId, [("address:x", rule), ("device:b", rule)]) == [true, true])
            }
        }

        /// A world and a trial app of two calls a day, counted under the world's app (the tenant its calls are confined to).
        static func trial(_ kind: StoreKind) async throws -> (StoreWorld, AppRecord) {
            let world = try await StoreWorld.make(kind)
            var trial = try #require(try await world.apps.find(try await AppStoreContract().newApp(world, AppStoreContract.settings(dailyCalls: 2))))
            trial.id = world.appId
            return (world, trial)
        }

        /// A face login's module gate, its charges and the device's bound users, sent together (one round trip on
        /// PostgreSQL), answer as each would alone: a trial's call past its quota answers MODULE_NOT_FORMAL, a refused
        /// subject false, and the read its rows.
        @Test(arguments: StoreKind.allCases) func theGateTheChargesAndTheBoundUsersAnswerTogether(_ kind: StoreKind) async throws {
            let (world, app) = try await Self.trial(kind)
            let appId = world.appId
            let device = ClientDevice(id: "phone-\(UUID().wire.prefix(8))", isKey: false)
            try await world.scoped {
                let pool = ContractDatabase.current?.gateway
                for call in 1...3 {
                    let before = pool?.statistics.roundTrips ?? 0
                    let (refused, counted, bound) = try await PostgresStep.together(
                        try world.apps.admission(app, module: .faceLogin), world.attempts.charging(appId: appId, [(device.id, rule)]),
                        world.bindings.readingBoundUsers(appId: appId, device: device))
                    if kind == .postgres { #expect(pool!.statistics.roundTrips - before == 1) }
                    #expect(refused?.code == (call > 2 ? .moduleNotFormal : nil), "call \(call)")
                    #expect(counted == [true] && bound.isEmpty)
                }
                #expect(throws: APIError.self) { try world.apps.admission(app, module: .kiosk) }
            }
        }

        /// A DPoP login's proof spend goes first with them (`then`), still in one round trip; a replayed proof is refused
        /// (`TokenIdSpentBefore`) and nothing sent with it is kept: the trial's call is not counted.
        @Test(arguments: StoreKind.allCases) func aProofSpendGoesFirstAndAReplayKeepsNothing(_ kind: StoreKind) async throws {
            let (world, app) = try await Self.trial(kind)
            let appId = world.appId
            let device = ClientDevice(id: "key-\(UUID().wire.prefix(8))", isKey: true)
            let until = Int64(Date().timeIntervalSince1970) + 300
            try await world.scoped { () async throws in
                let pool = ContractDatabase.current?.gateway
                func login(proof jti: String) async throws -> APIError? {
                    let gate = try world.apps.admission(app, module: .faceLogin)
                    return try await PostgresStep.together(world.spentIds.spending(jti, appId: appId, expiresAt: until).then(gate),
                                                           world.attempts.charging(appId: appId, [(device.id, rule)]),
                                                           world.bindings.readingBoundUsers(appId: appId, device: device)).0
                }
                let before = pool?.statistics.roundTrips ?? 0
                #expect(try await login(proof: "dpop:first") == nil)
                if kind == .postgres { #expect(pool!.statistics.roundTrips - before == 1) }
                await #expect(throws: TokenIdSpentBefore.self) { _ = try await login(proof: "dpop:first") }
                #expect(try await login(proof: "dpop:second") == nil, "the replay's call was not counted")
                #expect(try await login(proof: "dpop:third")?.code == .moduleNotFormal)
            }
        }

        /// A windowed subject (a client address) takes a burst of `throttleAfter` failures, then one per interval
        /// (`failureWindow / throttleAfter`); a refund gives its interval back.
        @Test(arguments: StoreKind.allCases) func aWindowedSubjectTakesABurstThenOneFailurePerInterval(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let windowed = AttemptGuard.Rule(throttleAfter: 3, throttleSeconds: 1, lockAfter: 0, failureWindow: 3)
            try await world.scoped {
                for _ in 0..<3 { #expect(try await world.attempts.charge(appId: world.appId, subject: "address:a", rule: windowed)) }
                #expect(try await !world.attempts.charge(appId: world.appId, subject: "address:a", rule: windowed))
                let state = try #require(try await world.attempts.state(appId: world.appId, subject: "address:a", rule: windowed))
                #expect(state.throttled && !state.locked && (1...1).contains(state.waitSeconds))
                // A refund (a success or a neutral outcome) gives one interval back: one more try now.
                try await world.attempts.refund(appId: world.appId, subject: "address:a", success: true, rule: windowed)
                #expect(try await world.attempts.charge(appId: world.appId, subject: "address:a", rule: windowed))
                #expect(try await !world.attempts.charge(appId: world.appId, subject: "address:a", rule: windowed))
                try await world.advance(1)
                #expect(try await world.attempts.charge(appId: world.appId, subject: "address:a", rule: windowed))
                #expect(try await !world.attempts.charge(appId: world.appId, subject: "address:a", rule: windowed))
            }
        }
    }
}

extension StoreContracts {
    @Suite struct DeviceBindingStoreContract {
        func confirmation(_ world: StoreWorld, device: String, candidates: [UUID], ttl: Int = 60) -> PendingConfirmation {
            PendingConfirmation(appId: world.appId, deviceId: device, userId: candidates.first,
                                candidates: candidates.map { .init(userId: $0, distance: 0.31) }, transactionId: UUID(), score: 0.31, ttlSeconds: ttl)
        }

        @Test(arguments: StoreKind.allCases) func aConfirmationBindsOnceForItsDeviceOnly(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let (alice, bob) = (try await world.addUser(), try await world.addUser())
            try await world.scoped {
                let phone = ClientDevice(id: "phone-1", isKey: false)
                let pending = confirmation(world, device: phone.id, candidates: [alice, bob])
                try await world.bindings.open(pending)
                #expect(try await world.bindings.confirmation(pending.id, appId: world.appId, deviceId: "phone-2") == nil)
                let found = try #require(try await world.bindings.confirmation(pending.id, appId: world.appId, deviceId: phone.id))
                #expect(found.usable && found.candidates.map(\.userId) == [alice, bob])
                #expect(found.candidates.first?.distance == 0.31)
                #expect(try await world.bindings.boundUsers(appId: world.appId, device: phone).isEmpty)

                try await world.bindings.bind(confirmation: pending.id, appId: world.appId, device: phone, user: alice, ticket: nil)
                #expect(try await world.bindings.boundUsers(appId: world.appId, device: phone) == [alice])
                #expect(try await world.bindings.confirmation(pending.id, appId: world.appId, deviceId: phone.id)?.usable == false)
                await #expect(throws: APIError.self) {
                    try await world.bindings.bind(confirmation: pending.id, appId: world.appId, device: phone, user: bob, ticket: nil)
                }
                // A binding under the header is not one a key can claim, and the other way round.
                #expect(try await world.bindings.boundUsers(appId: world.appId, device: ClientDevice(id: "phone-1", isKey: true)).isEmpty)
            }
        }

        @Test(arguments: StoreKind.allCases) func theFifthMismatchVoidsIt(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let alice = try await world.addUser()
            try await world.scoped {
                let pending = confirmation(world, device: "phone-1", candidates: [alice])
                try await world.bindings.open(pending)
                var left: [Int] = []
                for _ in 0..<5 { left.append(try await world.bindings.recordMismatch(pending.id)) }
                #expect(left == [4, 3, 2, 1, 0])
                #expect(try await world.bindings.confirmation(pending.id, appId: world.appId, deviceId: "phone-1")?.usable == false)
            }
        }

        @Test(arguments: StoreKind.allCases) func anExpiredConfirmationIsUnusable(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let alice = try await world.addUser()
            try await world.scoped {
                let pending = confirmation(world, device: "phone-1", candidates: [alice], ttl: 1)
                try await world.bindings.open(pending)
                try await world.advance(1.2)
                #expect(try await world.bindings.confirmation(pending.id, appId: world.appId, deviceId: "phone-1")?.usable == false)
                await #expect(throws: APIError.self) {
                    try await world.bindings.bind(confirmation: pending.id, appId: world.appId, device: ClientDevice(id: "phone-1", isKey: false),
                                                  user: alice, ticket: nil)
                }
            }
        }

        @Test(arguments: StoreKind.allCases) func ticketsAreSingleUsePerUserAndAFailedOneBindsNothing(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let (alice, bob) = (try await world.addUser(), try await world.addUser())
            try await world.scoped {
                let key = ClientDevice(id: "thumbprint-1", isKey: true)
                let pending = confirmation(world, device: key.id, candidates: [alice])
                try await world.bindings.open(pending)
                try await world.bindings.issueTicket(key: BindingTicketCheck.key("fbt_bob"), appId: world.appId, user: bob, issuer: "appServer", ttlSeconds: 60)
                try await world.bindings.issueTicket(key: BindingTicketCheck.key("fbt_alice"), appId: world.appId, user: alice, issuer: "boundDevice",
                                                     ttlSeconds: 60)
                func bind(_ ticket: String?, _ policy: DeviceBindingPolicy) async throws -> ErrorCode? {
                    do {
                        try await world.bindings.bind(confirmation: pending.id, appId: world.appId, device: key, user: alice,
                                                      ticket: BindingTicketCheck(ticket: ticket, policy: policy))
                        return nil
                    } catch let error as APIError {
                        return error.code
                    }
                }
                #expect(try await bind(nil, .appServerTicket) == .bindingTicketInvalid)
                #expect(try await bind("fbt_bob", .appServerTicket) == .bindingTicketInvalid)  // another user's
                #expect(try await bind("fbt_alice", .appServerTicket) == .bindingTicketInvalid)  // an issuer the policy refuses
                // Each refusal left the confirmation usable and bound nothing; the refused ticket was not spent either.
                #expect(try await world.bindings.confirmation(pending.id, appId: world.appId, deviceId: key.id)?.usable == true)
                #expect(try await world.bindings.boundUsers(appId: world.appId, device: key).isEmpty)
                #expect(try await bind("fbt_alice", .boundDevice) == nil)
                #expect(try await world.bindings.boundUsers(appId: world.appId, device: key) == [alice])
            }
        }

        @Test(arguments: StoreKind.allCases) func anAppServerTicketBindsOnlyTheFirstKeyUnderBoundDevice(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let alice = try await world.addUser()
            try await world.scoped {
                for (index, expected) in [(1, ErrorCode?.none), (2, .bindingTicketInvalid)] {
                    let key = ClientDevice(id: "thumbprint-\(index)", isKey: true)
                    let pending = confirmation(world, device: key.id, candidates: [alice])
                    try await world.bindings.open(pending)
                    try await world.bindings.issueTicket(key: BindingTicketCheck.key("fbt_\(index)"), appId: world.appId, user: alice,
                                                         issuer: "appServer", ttlSeconds: 60)
                    var refused: ErrorCode?
                    do {
                        try await world.bindings.bind(confirmation: pending.id, appId: world.appId, device: key, user: alice,
                                                      ticket: BindingTicketCheck(ticket: "fbt_\(index)", policy: .boundDevice))
                    } catch let error as APIError {
                        refused = error.code
                    }
                    #expect(refused == expected)
                }
            }
        }
    }
}

extension StoreContracts {
    @Suite struct LivenessChallengeStoreContract {
        @Test(arguments: StoreKind.allCases) func aChallengeIsSpentOnceByItsDeviceAndFramesNeverTwice(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            try await world.scoped {
                let frames = [Data("frame-a-\(UUID())".utf8), Data("frame-b-\(UUID())".utf8)]
                try await world.challenges.issue("lc_1", appId: world.appId, deviceId: "phone-1", actions: [.turnLeft, .blink], ttlSeconds: 60)
                await #expect(throws: APIError.self) { _ = try await world.challenges.consume("lc_1", appId: world.appId, deviceId: "phone-2", frames: frames) }
                #expect(try await world.challenges.consume("lc_1", appId: world.appId, deviceId: "phone-1", frames: frames) == [.turnLeft, .blink])
                await #expect(throws: APIError.self) { _ = try await world.challenges.consume("lc_1", appId: world.appId, deviceId: "phone-1", frames: frames) }
                // A fresh challenge answered with a frame already sent is a replay, and is spent all the same.
                try await world.challenges.issue("lc_2", appId: world.appId, deviceId: "phone-1", actions: [.turnRight], ttlSeconds: 60)
                let replay = [frames[0], Data("frame-c-\(UUID())".utf8)]
                await #expect(throws: APIError.self) { _ = try await world.challenges.consume("lc_2", appId: world.appId, deviceId: "phone-1", frames: replay) }
                await #expect(throws: APIError.self) {
                    _ = try await world.challenges.consume("lc_2", appId: world.appId, deviceId: "phone-1", frames: [Data("fresh-\(UUID())".utf8)])
                }
            }
        }

        @Test(arguments: StoreKind.allCases) func anExpiredChallengeIsUnknown(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            try await world.scoped {
                try await world.challenges.issue("lc_old", appId: world.appId, deviceId: "phone-1", actions: [.blink], ttlSeconds: 1)
                try await world.advance(1.2)
                await #expect(throws: APIError.self) {
                    _ = try await world.challenges.consume("lc_old", appId: world.appId, deviceId: "phone-1", frames: [Data("x-\(UUID())".utf8)])
                }
            }
        }
    }
}

extension StoreContracts {
    @Suite struct SpentTokenIdsContract {
        @Test(arguments: StoreKind.allCases) func anIdIsSpentOnceWhicheverAppSpendsIt(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let other = try await StoreWorld.make(kind)
            let id = "jti-\(UUID().uuidString)"
            let until = Int64(Date().timeIntervalSince1970) + 300
            try await world.scoped { () async throws in
                #expect(try await world.spentIds.spend(id, appId: world.appId, expiresAt: until))
                #expect(try await !world.spentIds.spend(id, appId: world.appId, expiresAt: until))
            }
            // Spent for every app: the same id sent by another app's request is refused too.
            try await other.scoped { () async throws in #expect(try await !world.spentIds.spend(id, appId: other.appId, expiresAt: until)) }
        }
    }
}

extension StoreContracts {
    @Suite struct UserRosterContract {
        @Test(arguments: StoreKind.allCases) func usersAreCreatedOncePerNumberAndPagedOldestFirst(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            try await world.scoped { () async throws in
                var ids: [UUID] = []
                for number in ["E1", "E2", "E3"] {
                    let id = UUID()
                    #expect(try await world.roster.create(id, appId: world.appId, employeeNumber: number, name: "Someone \(number)"))
                    ids.append(id)
                    try await world.advance(0.01)
                }
                #expect(try await !world.roster.create(UUID(), appId: world.appId, employeeNumber: "E1", name: "Another"))
                let first = try await world.roster.page(appId: world.appId, after: nil, limit: 2)
                #expect(first.map(\.userId) == ids.prefix(2).map(\.wire))
                let last = try #require(first.last)
                let rest = try await world.roster.page(appId: world.appId, after: PageCursor(time: last.createdAt, id: ids[1]), limit: 2)
                #expect(rest.map(\.userId) == [ids[2].wire])
                let user = try #require(try await world.roster.user(ids[0], appId: world.appId))
                #expect(user.employeeNumber == "E1" && user.name == "Someone E1" && user.faces == 0)
                #expect(try await world.roster.user(UUID(), appId: world.appId) == nil)
            }
        }

        @Test(arguments: StoreKind.allCases) func erasuresTombstoneEveryTemplateTheyTake(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let (alice, bob) = (UUID(), UUID())
            let (first, second, third) = (UUID(), UUID(), UUID())
            try await world.scoped { () async throws in
                #expect(try await world.roster.create(alice, appId: world.appId, employeeNumber: "A", name: "Alice"))
                #expect(try await world.roster.create(bob, appId: world.appId, employeeNumber: "B", name: "Bob"))
            }
            try await world.addTemplate(first, alice)
            try await world.addTemplate(second, alice)
            try await world.addTemplate(third, bob)
            try await world.scoped { () async throws in
                #expect(try await world.roster.enrolledUsers(appId: world.appId) == 2)
                #expect(try await world.roster.templateCount(appId: world.appId, model: .sface2021dec) == 3)
                #expect(try await world.roster.templateCount(appId: world.appId, model: .dlibResNetV1) == 0)
                #expect(try await world.roster.user(alice, appId: world.appId)?.faces == 2)
                #expect(Set(try await world.roster.faces(of: alice, appId: world.appId).map(\.templateId)) == [first.wire, second.wire])
                let one = try #require(try await world.roster.eraseFace(first, of: alice, appId: world.appId))
                #expect(one.operation == .delete && one.templateId == first && one.userId == alice)
                #expect(try await world.roster.eraseFace(first, of: alice, appId: world.appId) == nil)
                #expect(try await world.roster.eraseFace(third, of: alice, appId: world.appId) == nil)  // bob's
                let all = try #require(try await world.roster.erase(alice, appId: world.appId))
                #expect(all.map(\.templateId) == [second] && all[0].changeSeq > one.changeSeq)
                #expect(try await world.roster.user(alice, appId: world.appId) == nil)
                #expect(try await world.roster.erase(alice, appId: world.appId) == nil)
                #expect(try await world.roster.enrolledUsers(appId: world.appId) == 1)
            }
        }
    }
}

extension StoreContracts {
    @Suite struct DeviceCredentialStoreContract {
        func newCredential() throws -> DeviceCredentials.NewCredential {
            try DeviceCredentials.NewCredential(publicKey: Data(P256PrivateKey().publicKey.spkiDER).base64EncodedString(), policy: "biometryAny",
                                                attestation: nil)
        }

        @Test(arguments: StoreKind.allCases) func oneLiveCredentialPerUserAndDeviceRevokedOnlyFromItsDevice(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let user = try await world.addUser()
            try await world.scoped {
                let store = world.credentials
                #expect(try await store.register(try newCredential(), appId: world.appId, user: UUID(), device: "phone-1") == nil, "not a user of the app")
                let first = try #require(try await store.register(try newCredential(), appId: world.appId, user: user, device: "phone-1"))
                let second = try #require(try await store.register(try newCredential(), appId: world.appId, user: user, device: "phone-1"))
                #expect(try await store.live(first, appId: world.appId, device: "phone-1") == nil, "replaced by the second registration")
                #expect(try await store.live(second, appId: world.appId, device: "phone-1")?.userId == user)
                #expect(try await store.live(second, appId: world.appId, device: "phone-2") == nil)
                #expect(try await store.list(appId: world.appId, user: user).map(\.credentialId).sorted() == [first.wire, second.wire].sorted())
                #expect(try await store.revoke(second, appId: world.appId, device: "phone-2") == nil)
                #expect(try await store.revoke(second, appId: world.appId, device: "phone-1")?.userId == user)
                #expect(try await store.revoke(second, appId: world.appId, device: nil) == nil, "already revoked")
                #expect(try await store.live(second, appId: world.appId, device: "phone-1") == nil)
                #expect(try await store.owner(of: second, appId: world.appId)?.deviceId == "phone-1", "the owner of a revoked credential is still known")
            }
        }

        @Test(arguments: StoreKind.allCases) func aChallengeIsSpentOnceByItsCredentialBeforeItExpires(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let user = try await world.addUser()
            try await world.scoped {
                let store = world.credentials
                let credential = try #require(try await store.register(try newCredential(), appId: world.appId, user: user, device: "phone-1"))
                let challenge = "dc-\(UUID().uuidString)"
                try await store.issueChallenge(challenge, appId: world.appId, credential: credential, ttlSeconds: 60)
                #expect(try await !store.spendChallenge(challenge, appId: world.appId, credential: UUID()))
                #expect(try await store.spendChallenge(challenge, appId: world.appId, credential: credential))
                #expect(try await !store.spendChallenge(challenge, appId: world.appId, credential: credential))
                let late = "dc-\(UUID().uuidString)"
                try await store.issueChallenge(late, appId: world.appId, credential: credential, ttlSeconds: 1)
                try await world.advance(1.2)
                #expect(try await !store.spendChallenge(late, appId: world.appId, credential: credential))
            }
        }

        @Test(arguments: StoreKind.allCases) func theCounterRisesOrStaysZeroElseTheCredentialIsFlagged(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let user = try await world.addUser()
            try await world.scoped {
                let store = world.credentials
                let counting = try #require(try await store.register(try newCredential(), appId: world.appId, user: user, device: "phone-1"))
                #expect(try await store.advanceCounter(counting, to: 0) == .advanced, "a device that does not count")
                #expect(try await store.advanceCounter(counting, to: 5) == .advanced)
                #expect(try await store.advanceCounter(counting, to: 5) == .flagged)
                #expect(try await store.live(counting, appId: world.appId, device: "phone-1")?.flagged == true)
                #expect(try await store.advanceCounter(counting, to: 9) == .flagged, "flagged until registered again")
                let revoked = try #require(try await store.register(try newCredential(), appId: world.appId, user: user, device: "phone-2"))
                _ = try await store.revoke(revoked, appId: world.appId, device: nil)
                #expect(try await store.advanceCounter(revoked, to: 1) == .revoked)
            }
        }
    }
}

extension StoreContracts {
    @Suite struct GalleryRecordsContract {
        /// A matcher's reconciliation (every 30 s on each matcher) reads the templates and tombstones changed since its
        /// sequence number or in the last five minutes by index: with sequential scans off, the plan scans no table whole.
        @Test func reconciliationReadsRecentChangesByIndex() async throws {
            let database = try #require(ContractDatabase.current).database
            for query in [GalleryRecords.templates(since: 0), GalleryRecords.tombstones(since: 0)] {
                var explaining: PostgresQuery = "EXPLAIN "
                explaining.append(query)
                let explained = explaining
                let plan = try await database.pool.withTransaction { connection in
                    _ = try await connection.query("SET LOCAL enable_seqscan = off")
                    return try await connection.query(explained).map { try $0.decode("QUERY PLAN", as: String.self) }.joined(separator: "\n")
                }
                #expect(!plan.contains("Seq Scan"), "\(query.sql):\n\(plan)")
            }
        }

        /// A sharded matcher's load reads its own slice of the gallery, not the whole of it: the rows whose stored hash falls
        /// on it, and those stored without one, which it places itself. The migration's function, which filled the hash of
        /// the templates stored before it, computes the writers' hash (negative bit patterns included).
        @Test func aShardReadsItsOwnSliceAndTheRowsWithoutAHash() async throws {
            let database = try #require(ContractDatabase.current).database
            let appId = UUID(), user = UUID()
            _ = try await database.pool.query("INSERT INTO apps (id, name, secret_hash, modules, liveness, quotas) VALUES (\(appId), 'shards', '\\x00', '{}', '{}', '{}')")
            _ = try await database.pool.query("INSERT INTO users (id, app_id, employee_number, name) VALUES (\(user), \(appId), 'E1', 'shards')")
            let hashed = (0..<60).map { _ in UUID() }, unhashed = (0..<6).map { _ in UUID() }
            for id in hashed + unhashed {
                let hash = hashed.contains(id) ? Int64(bitPattern: templateShardHash(id)) : nil
                _ = try await database.pool.query("""
                    INSERT INTO face_templates (id, app_id, user_id, embedding_sealed, model_id, quality, shard_hash)
                    VALUES (\(id), \(appId), \(user), '\\x00', 'sface-2021dec', '{}', \(hash))
                    """)
            }
            let computed = try await database.pool.query("SELECT id, template_shard_hash(id) AS hash FROM face_templates WHERE app_id = \(appId)")
            #expect(computed.count == 66)
            for row in computed {
                #expect(try row.decode("hash", as: Int64.self) == Int64(bitPattern: templateShardHash(try row.decode("id", as: UUID.self))))
            }
            #expect(hashed.contains { Int64(bitPattern: templateShardHash($0)) < 0 }, "a negative bit pattern is among them")

            let records = GalleryRecords(database: database.pool)
            for count in [1, 3, 7] {
                for index in 0..<count {
                    var read = Set<UUID>()
                    try await records.forEachTemplate(shard: TemplateSlice(index: index, count: count)) { template, _ in
                        if template.appId == appId { read.insert(template.id) }
                    }
                    let own = hashed.filter { shardIndex(templateId: $0, shardCount: count) == index }
                    #expect(read == Set(own + unhashed), "shard \(index) of \(count)")
                    // A reconciliation's read (stored in the last five minutes: every row here) keeps to the slice too.
                    var recent = Set<UUID>()
                    try await records.forEachTemplate(since: 0, shard: TemplateSlice(index: index, count: count)) { template, _ in
                        if template.appId == appId { recent.insert(template.id) }
                    }
                    #expect(recent == read, "shard \(index) of \(count), recent changes")
                }
            }
        }
    }

    @Suite struct AppStoreContract {
        static func settings(_ threshold: Float = 0.9, modules: Modules = .initial, dailyCalls: Int = 1000) -> AppSettings {
            AppSettings(modules: modules, matchThreshold: threshold, liveness: .initial, deviceBinding: .dpop, deviceBindingPolicy: .appServerTicket,
                        kioskApproval: KioskApprovalPolicy(), quotas: Quotas(dailyCalls: dailyCalls, gallerySize: 100), keepEnrollmentPhotos: false)
        }

        func newApp(_ world: StoreWorld, _ settings: AppSettings = settings(), model: FaceModel = .sface2021dec) async throws -> UUID {
            let id = UUID()
            try await world.apps.create(id, name: "app \(id.wire.prefix(8))", secretHash: [1, 2, 3], ctidKeySealed: [4, 5, 6], faceModel: model,
                                        settings: settings)
            return id
        }

        @Test(arguments: StoreKind.allCases) func anAppReadsBackAsCreatedThenAsUpdated(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let id = try await newApp(world)
            let app = try #require(try await world.apps.find(id))
            #expect(app.name == "app \(id.wire.prefix(8))" && app.secretHash == [1, 2, 3] && app.previousSecretHash == nil && app.secretRotatedAt == nil)
            #expect(app.faceModel == .sface2021dec && app.matchThreshold == 0.9 && app.deviceBinding == .dpop && app.deviceBindingPolicy == .appServerTicket)
            #expect(app.modules == .initial && app.liveness == .initial && app.quotas == Quotas(dailyCalls: 1000, gallerySize: 100) && !app.keepEnrollmentPhotos)
            var changed = Self.settings(0.8)
            changed.liveness = LivenessPolicy(faceLogin: .active, kiosk: .off)
            changed.deviceBinding = .header
            changed.keepEnrollmentPhotos = true
            try await world.apps.update(id, settings: changed)
            let updated = try #require(try await world.apps.find(id))
            #expect(updated.matchThreshold == 0.8 && updated.liveness == changed.liveness && updated.deviceBinding == .header && updated.keepEnrollmentPhotos)
            #expect(updated.secretHash == app.secretHash && updated.faceModel == app.faceModel && updated.createdAt == app.createdAt)
            #expect(try await world.apps.find(UUID()) == nil)
        }

        @Test(arguments: StoreKind.allCases) func aDeletedAppTakesItsPeopleAndTemplatesOnce(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let (alice, bob, first, second) = (UUID(), UUID(), UUID(), UUID())
            try await world.scoped { () async throws in
                #expect(try await world.roster.create(alice, appId: world.appId, employeeNumber: "A", name: "Alice"))
                #expect(try await world.roster.create(bob, appId: world.appId, employeeNumber: "B", name: "Bob"))
            }
            try await world.addTemplate(first, alice)
            try await world.addTemplate(second, alice)
            if kind == .memory {  // the world's app (PostgreSQL's is inserted by make)
                try await world.apps.create(world.appId, name: "contract", secretHash: [0], ctidKeySealed: [], faceModel: .sface2021dec, settings: Self.settings())
            }
            try await world.scoped { () async throws in
                let erased = try #require(try await world.apps.delete(world.appId))
                #expect(erased.users == 2)
                #expect(Set(erased.templates.map(\.templateId)) == [first, second] && erased.templates.allSatisfy { $0.userId == alice })
                #expect(try await world.apps.find(world.appId) == nil)
                #expect(try await world.roster.user(alice, appId: world.appId) == nil)
                #expect(try await world.roster.enrolledUsers(appId: world.appId) == 0)
                #expect(try await world.apps.delete(world.appId) == nil)
            }
        }

        @Test(arguments: StoreKind.allCases) func aRotationKeepsThePreviousSecretForTheGracePeriod(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let id = try await newApp(world)
            try await world.apps.rotateSecret(id, to: [7, 8, 9], graceSeconds: 600)
            let app = try #require(try await world.apps.find(id))
            #expect(app.secretHash == [7, 8, 9] && app.previousSecretHash == [1, 2, 3])
            let rotated = try #require(app.secretRotatedAt)
            let until = try #require(app.previousSecretValidUntil)
            #expect(abs(until.timeIntervalSince(rotated) - 600) < 1)
        }

        @Test(arguments: StoreKind.allCases) func theModelSwitchesOnlyFromTheModelTheAppIsOn(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let id = try await newApp(world, model: .dlibResNetV1)
            #expect(try await !world.apps.switchModel(id, from: .sface2021dec, to: .sface2021dec, threshold: 1.0))
            #expect(try await world.apps.find(id)?.faceModel == .dlibResNetV1)
            #expect(try await world.apps.switchModel(id, from: .dlibResNetV1, to: .sface2021dec, threshold: 1.0))
            let app = try #require(try await world.apps.find(id))
            #expect(app.faceModel == .sface2021dec && app.matchThreshold == 1.0)
            #expect(try await !world.apps.switchModel(id, from: .dlibResNetV1, to: .sface2021dec, threshold: 1.1))
        }

        @Test(arguments: StoreKind.allCases) func aTrialAdmitsItsDailyQuotaAFormalModuleEveryCallADisabledOneNone(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            var modules = Modules.initial
            modules.faceLogin = .trial
            modules.ctid = .disabled
            modules.kiosk = .formal
            let app = try #require(try await world.apps.find(try await newApp(world, Self.settings(modules: modules, dailyCalls: 2))))
            try await Tenant.run(app: app.id) {
                try await world.apps.admit(app, module: .faceLogin)
                try await world.apps.admit(app, module: .faceLogin)
                #expect(await errorCode { try await world.apps.admit(app, module: .faceLogin) } == .moduleNotFormal)
                #expect(await errorCode { try await world.apps.admit(app, module: .ctid) } == .moduleDisabled)
                for _ in 0..<3 { try await world.apps.admit(app, module: .kiosk) }
            }
            // Another app's calls are its own.
            let other = try #require(try await world.apps.find(try await newApp(world, Self.settings(modules: modules, dailyCalls: 2))))
            try await Tenant.run(app: other.id) { try await world.apps.admit(other, module: .faceLogin) }
        }

        @Test(arguments: StoreKind.allCases) func listingsAreOldestFirstAndOnlyWhatTheScopeCovers(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            var made: [UUID] = []
            for _ in 0..<3 {
                made.append(try await newApp(world))
                try await world.advance(0.01)
            }
            let covered = Set(made.prefix(2))
            #expect(try await world.apps.all { covered.contains($0) }.map(\.id) == Array(made.prefix(2)))
            #expect(try await world.apps.all { $0 == made[2] }.map(\.id) == [made[2]])
        }
    }
}

extension StoreContracts {
    @Suite struct ApiKeyStoreContract {
        @Test(arguments: StoreKind.allCases) func aKeyIsLiveUntilItExpiresOrIsRevokedOnce(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let (lasting, brief) = (UUID(), UUID())
            let (lastingHash, briefHash) = (SHA256.hash(Array(lasting.wire.utf8)), SHA256.hash(Array(brief.wire.utf8)))
            try await world.apiKeys.create(id: lasting, role: "auditor", name: "lasting", hash: lastingHash, appIds: [world.appId], expiresAt: nil)
            try await world.apiKeys.create(id: brief, role: "admin", name: "brief", hash: briefHash, appIds: nil, expiresAt: world.now() + 1)
            let live = try #require(try await world.apiKeys.live(hash: lastingHash))
            #expect(live.role == "auditor" && live.appIds == [world.appId])
            #expect(try await world.apiKeys.live(hash: briefHash)?.appIds == nil)
            #expect(try await world.apiKeys.live(hash: SHA256.hash(Array("unknown".utf8))) == nil)
            try await world.advance(1.2)
            #expect(try await world.apiKeys.live(hash: briefHash) == nil, "expired")

            #expect(try await !world.apiKeys.revoke(lasting, role: "admin"), "another role's key")
            #expect(try await world.apiKeys.revoke(lasting, role: "auditor"))
            #expect(try await world.apiKeys.live(hash: lastingHash) == nil)
            let revokedAt = try #require(try await world.apiKeys.list(role: "auditor").first { $0.id == lasting }?.revokedAt)
            try await world.advance(0.05)
            #expect(try await world.apiKeys.revoke(lasting, role: "auditor"), "revoking again succeeds")
            #expect(try await world.apiKeys.list(role: "auditor").first { $0.id == lasting }?.revokedAt == revokedAt, "and keeps the first time")
            #expect(try await !world.apiKeys.revoke(UUID(), role: "auditor"))
        }

        @Test(arguments: StoreKind.allCases) func aDeletedAppLeavesOperatorKeysAndRevokesThoseThatNamedOnlyIt(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let other = UUID()
            let keys = (only: UUID(), both: UUID(), every: UUID(), auditor: UUID())
            for (id, role, apps) in [(keys.only, "admin", [world.appId]), (keys.both, "admin", [world.appId, other]),
                                     (keys.every, "admin", nil), (keys.auditor, "auditor", [world.appId])] as [(UUID, String, [UUID]?)] {
                try await world.apiKeys.create(id: id, role: role, name: "k", hash: SHA256.hash(Array(id.wire.utf8)), appIds: apps, expiresAt: nil)
            }
            try await world.apiKeys.forget(app: world.appId)
            let operators = Dictionary(uniqueKeysWithValues: try await world.apiKeys.list(role: "admin").map { ($0.id, $0) })
            #expect(operators[keys.only]?.revokedAt != nil && operators[keys.only]?.appIds == [])
            #expect(operators[keys.both]?.revokedAt == nil && operators[keys.both]?.appIds == [other])
            #expect(operators[keys.every]?.revokedAt == nil && operators[keys.every]?.appIds == nil)
            #expect(try await world.apiKeys.live(hash: SHA256.hash(Array(keys.auditor.wire.utf8)))?.appIds == [world.appId], "auditors keep reading the trail")
        }

        @Test(arguments: StoreKind.allCases) func listingsAreByRoleOldestFirstWithTheirApps(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            var made: [UUID] = []
            for number in 0..<3 {
                let id = UUID()
                try await world.apiKeys.create(id: id, role: "admin", name: "key \(number)", hash: SHA256.hash(Array(id.wire.utf8)),
                                               appIds: number == 0 ? nil : [world.appId], expiresAt: nil)
                made.append(id)
                try await world.advance(0.01)
            }
            let auditor = UUID()
            try await world.apiKeys.create(id: auditor, role: "auditor", name: "auditor", hash: SHA256.hash(Array(auditor.wire.utf8)), appIds: [],
                                           expiresAt: nil)
            let listed = try await world.apiKeys.list(role: "admin").filter { made.contains($0.id) }
            #expect(listed.map(\.id) == made && listed.map(\.name) == ["key 0", "key 1", "key 2"])
            #expect(listed[0].appIds == nil && listed[1].appIds == [world.appId] && listed.allSatisfy { $0.revokedAt == nil && $0.expiresAt == nil })
            #expect(try await world.apiKeys.list(role: "auditor").first { $0.id == auditor }?.appIds == [], "no apps is not every app")
            #expect(try await !world.apiKeys.list(role: "auditor").contains { made.contains($0.id) })
        }
    }
}

extension StoreContracts {
    @Suite struct IdempotencyRecordsContract {
        func id(_ key: String = UUID().uuidString) -> IdempotencyRecordID { IdempotencyRecordID(scope: SHA256.hash(Array(key.utf8)), key: key) }

        @Test(arguments: StoreKind.allCases) func aKeyIsClaimedOnceAndReadsBackItsRequestThenItsAnswer(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let records = world.idempotency
            let first = id(), other = id()
            #expect(try await records.claim(first, requestHash: [1, 2], retentionSeconds: 3600, abandonedSeconds: 120))
            #expect(try await !records.claim(first, requestHash: [3], retentionSeconds: 3600, abandonedSeconds: 120))
            #expect(try await records.record(first) == IdempotencyRecord(requestHash: [1, 2], status: nil, sealedAnswer: nil))
            #expect(try await records.record(other) == nil)
            try await records.settle(first, status: 201, sealedAnswer: [9, 9])
            #expect(try await records.record(first) == IdempotencyRecord(requestHash: [1, 2], status: 201, sealedAnswer: [9, 9]))
            // A release frees only a key whose request left no answer.
            try await records.release(first)
            #expect(try await records.record(first)?.status == 201)
            #expect(try await records.claim(other, requestHash: [4], retentionSeconds: 3600, abandonedSeconds: 120))
            try await records.release(other)
            #expect(try await records.record(other) == nil)
            #expect(try await records.claim(other, requestHash: [5], retentionSeconds: 3600, abandonedSeconds: 120))
        }

        @Test(arguments: StoreKind.allCases) func anUnansweredClaimIsTakenOverAfterItsGraceAnAnswerOnlyAfterRetention(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let records = world.idempotency
            let abandoned = id(), answered = id()
            #expect(try await records.claim(abandoned, requestHash: [1], retentionSeconds: 3, abandonedSeconds: 1))
            #expect(try await records.claim(answered, requestHash: [1], retentionSeconds: 3, abandonedSeconds: 1))
            try await records.settle(answered, status: 200, sealedAnswer: [7])
            try await world.advance(1.5)
            #expect(try await records.claim(abandoned, requestHash: [2], retentionSeconds: 3, abandonedSeconds: 1))
            #expect(try await records.record(abandoned) == IdempotencyRecord(requestHash: [2], status: nil, sealedAnswer: nil))
            #expect(try await !records.claim(answered, requestHash: [2], retentionSeconds: 3, abandonedSeconds: 1))
            try await records.sweep(olderThanSeconds: 3)
            #expect(try await records.record(answered)?.status == 200)
            try await world.advance(2)
            try await records.sweep(olderThanSeconds: 3)
            #expect(try await records.record(answered) == nil)
            #expect(try await records.record(abandoned) != nil, "claimed again 2 s ago: not past retention")
        }
    }
}


extension StoreContracts {
    @Suite struct ModelMigrationStoreContract {
        @Test(arguments: StoreKind.allCases) func countsAndListsTheUsersNotYetReadyForTheNewModel(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let (waiting, ready, kept, newcomer) = (UUID(), UUID(), UUID(), UUID())
            for (user, number) in [(waiting, "W"), (ready, "R"), (kept, "K"), (newcomer, "N")] {
                try await world.scoped { () async throws in #expect(try await world.roster.create(user, appId: world.appId, employeeNumber: number, name: number)) }
                try await world.advance(0.01)
            }
            let (keptFirst, keptSecond, readyKept) = (UUID(), UUID(), UUID())
            try await world.addTemplate(UUID(), waiting, model: .dlibResNetV1)
            try await world.addTemplate(readyKept, ready, model: .dlibResNetV1, keptPhoto: true)
            try await world.addTemplate(UUID(), ready, model: .sface2021dec)
            try await world.addTemplate(keptFirst, kept, model: .dlibResNetV1, keptPhoto: true)
            try await world.addTemplate(keptSecond, kept, model: .dlibResNetV1, keptPhoto: true)
            try await world.addTemplate(UUID(), newcomer, model: .sface2021dec)  // holds only the new model: not counted
            try await world.scoped {
                let store = world.migration
                let counts = try await store.counts(appId: world.appId, from: .dlibResNetV1, to: .sface2021dec)
                #expect(counts.users == 3 && counts.ready == 1 && counts.keptPhotos == 1)
                let pending = try await store.pending(appId: world.appId, from: .dlibResNetV1, to: .sface2021dec, limit: 10)
                #expect(pending.map(\.id) == [waiting, kept], "oldest first")
                #expect(pending.map(\.employeeNumber) == ["W", "K"] && pending.map(\.keptPhoto) == [false, true])
                #expect(try await store.pending(appId: world.appId, from: .dlibResNetV1, to: .sface2021dec, limit: 1).map(\.id) == [waiting])
                // Only the kept photos of users not ready, by template id, after a cursor.
                let nothing = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
                let photos = [keptFirst, keptSecond].sorted { $0.wire < $1.wire }
                #expect(try await store.keptPhotos(appId: world.appId, from: .dlibResNetV1, to: .sface2021dec, after: nothing, limit: 10) == photos)
                #expect(try await store.keptPhotos(appId: world.appId, from: .dlibResNetV1, to: .sface2021dec, after: nothing, limit: 1) == [photos[0]])
                #expect(try await store.keptPhotos(appId: world.appId, from: .dlibResNetV1, to: .sface2021dec, after: photos[0], limit: 10) == [photos[1]])
                #expect(try await store.keptPhotos(appId: world.appId, from: .sface2021dec, to: .dlibResNetV1, after: nothing, limit: 10).isEmpty)
                #expect(try await store.holds(ready, appId: world.appId, model: .sface2021dec))
                #expect(try await !store.holds(waiting, appId: world.appId, model: .sface2021dec))
                #expect(try await store.holds(waiting, appId: world.appId, model: .dlibResNetV1))
                #expect(try await !store.holds(ready, appId: UUID(), model: .sface2021dec), "another app's")
            }
        }
    }

    @Suite struct KioskEventTicketStoreContract {
        @Test(arguments: StoreKind.allCases) func aTicketOpensItsSessionsStreamOnceBeforeItExpires(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let (session, other) = (UUID(), UUID())
            try await world.scoped {
                let tickets = world.eventTickets
                try await tickets.issue("kt_lasting", appId: world.appId, session: session, ttlSeconds: 60)
                try await tickets.issue("kt_brief", appId: world.appId, session: session, ttlSeconds: 1)
                #expect(try await !tickets.spend("kt_lasting", session: other), "another session's")
                #expect(try await tickets.spend("kt_lasting", session: session))
                #expect(try await !tickets.spend("kt_lasting", session: session), "spent")
                #expect(try await !tickets.spend("kt_unknown", session: session))
                await #expect(throws: (any Error).self, "issued once") {
                    try await tickets.issue("kt_lasting", appId: world.appId, session: session, ttlSeconds: 60)
                }
            }
            try await world.advance(1)
            try await world.scoped { () async throws in #expect(try await !world.eventTickets.spend("kt_brief", session: session), "expired") }
        }
    }

    @Suite struct CTIDSerialStoreContract {
        @Test(arguments: StoreKind.allCases) func aSerialIsIssuedOnceAndSpentOnceByItsApp(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let spender = world.verifierSerials ?? world.serials
            try await world.scoped {
                try await world.serials.issue("S-1", appId: world.appId, authMode: .portraitNameNumber, randNum: "123456", ttlSeconds: 60)
                try await world.serials.issue("S-2", appId: world.appId, authMode: .nameNumber, randNum: "654321", ttlSeconds: 1)
                await #expect(throws: (any Error).self, "issued once") {
                    try await world.serials.issue("S-1", appId: world.appId, authMode: .nameNumber, randNum: "654321", ttlSeconds: 60)
                }
                #expect(try await spender.spend("S-1", appId: UUID()) == nil, "another app's")
                #expect(try await spender.spend("S-1", appId: world.appId) == SpentSerial(authMode: 0x42, randNum: "123456", live: true))
                #expect(try await spender.spend("S-1", appId: world.appId) == nil, "spent")
                #expect(try await spender.spend("S-3", appId: world.appId) == nil, "unknown")
            }
            try await world.advance(1)
            try await world.scoped { () async throws in
                #expect(try await spender.spend("S-2", appId: world.appId) == SpentSerial(authMode: 0x40, randNum: "654321", live: false),
                        "an expired serial is spent and says so")
            }
        }
    }
}

extension StoreContracts {
    @Suite struct UserDirectoryContract {
        @Test(arguments: StoreKind.allCases) func usersAreFoundByNumberAndIdWithinTheirAppOnly(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let enrolled = try await world.addDirectoryUser("D1", "Dora", true)
            let waiting = try await world.addDirectoryUser("D2", "Dan", false)
            try await world.scoped { () async throws in
                let users = world.directory
                #expect(try await users.user(appId: world.appId, employeeNumber: "D1") == enrolled)
                #expect(try await users.user(appId: world.appId, employeeNumber: "D9") == nil)
                #expect(try await users.user(appId: UUID(), employeeNumber: "D1") == nil, "another app's")
                #expect(try await users.profile(of: enrolled, appId: world.appId) == UserProfile(employeeNumber: "D1", name: "Dora"))
                #expect(try await users.profile(of: enrolled, appId: UUID()) == nil)
                #expect(try await users.exists(waiting, appId: world.appId))
                #expect(try await !users.exists(UUID(), appId: world.appId))
                #expect(try await users.hasFace(enrolled, appId: world.appId))
                #expect(try await !users.hasFace(waiting, appId: world.appId), "a user without a template")
                #expect(try await users.employeeNumbers(of: [enrolled, waiting, UUID()], appId: world.appId) == [enrolled: "D1", waiting: "D2"])
                #expect(try await users.employeeNumbers(of: [], appId: world.appId).isEmpty)
            }
        }
    }
}

extension StoreContracts {
    @Suite struct AuditRecordsContract {
        @Test(arguments: StoreKind.allCases) func searchesFilterPageAndCountTheAppsChain(_ kind: StoreKind) async throws {
            let world = try await StoreWorld.make(kind)
            let (alice, bob) = (UUID(), UUID())
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            let rows = [("face.login", "SUCCESS", alice, "d1"), ("face.login", "NO_MATCH_FACE", nil, "d2"), ("user.create", "SUCCESS", nil, nil),
                        ("face.login", "SUCCESS", bob, "d1")].enumerated().map { index, row in
                TransactionRecord(appId: world.appId, kind: row.0, outcome: row.1, userId: row.2, deviceId: row.3, latencyMs: 5,
                                  createdAt: start.addingTimeInterval(Double(index)))
            }
            try await world.scoped { for row in rows { try await world.appendAudit(row) } }
            try await world.scoped { () async throws in
                let audit = world.audit
                func ids(_ filter: TransactionLog.Filter, before cursor: (time: Date, id: UUID)? = nil, limit: Int = 10) async throws -> [UUID] {
                    try await audit.page(filter, before: cursor, limit: limit).map(\.id)
                }
                let mine = world.appId.wire
                #expect(try await ids(.init(appIds: mine)) == rows.reversed().map(\.id), "newest first")
                #expect(try await ids(.init(appIds: UUID().wire)).isEmpty)
                #expect(try await ids(.init(appIds: mine, kind: "face.login")) == [rows[3].id, rows[1].id, rows[0].id])
                #expect(try await ids(.init(appIds: mine, outcome: "NO_MATCH_FACE")) == [rows[1].id])
                #expect(try await ids(.init(appIds: mine, userId: bob)) == [rows[3].id])
                #expect(try await ids(.init(appIds: mine, deviceId: "d1")) == [rows[3].id, rows[0].id])
                #expect(try await ids(.init(appIds: mine, from: start.addingTimeInterval(1), to: start.addingTimeInterval(3))) == [rows[2].id, rows[1].id],
                        "from inclusive, to exclusive")
                #expect(try await ids(.init(appIds: mine), limit: 2) == [rows[3].id, rows[2].id])
                #expect(try await ids(.init(appIds: mine), before: (rows[2].createdAt, rows[2].id)) == [rows[1].id, rows[0].id])
                #expect(try await audit.head(of: world.appId)?.count == 4)
                #expect(try await audit.head(of: UUID()) == nil)
                #expect(try await audit.lengths().contains { $0.appId == world.appId && $0.count == 4 })
                let verified = try await audit.verify(appId: world.appId, checkpoint: nil, acceptUnkeyed: false)
                #expect(verified.ok && verified.checked == 4)
            }
        }
    }
}
