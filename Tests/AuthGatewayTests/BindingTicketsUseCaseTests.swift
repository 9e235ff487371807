import AppRecords
@testable import AuthGateway
import FaceGateCore
import Foundation
import IdentityRecords
import Testing

/// `BindingTickets` over the in-memory bindings and users: who may ask for a ticket for whom, and that the ticket it
/// answers is the one a binding then accepts. End to end: IntegrationTests' DPoPTests.
@Suite struct BindingTicketsUseCaseTests {
    let clock = FakeClock()
    let bindings: InMemoryDeviceBindings
    let users = InMemoryUserDirectory()
    let app = AppRecord(id: UUID(), name: "app", secretHash: [], modules: .initial, faceModel: .sface2021dec,
                        matchThreshold: FaceModel.sface2021dec.defaultThreshold, liveness: .initial, deviceBinding: .dpop,
                        deviceBindingPolicy: .boundDevice, kioskApproval: KioskApprovalPolicy(), quotas: .initial,
                        keepEnrollmentPhotos: false, createdAt: Date())

    init() { bindings = InMemoryDeviceBindings(clock: clock) }

    var tickets: BindingTickets { BindingTickets(bindings: bindings, users: users, ttlSeconds: 300) }

    /// Binds `device` to `user` through a confirmation, as a confirmed face login does.
    func bind(_ device: ClientDevice, to user: UUID) async throws {
        let pending = PendingConfirmation(appId: app.id, deviceId: device.id, userId: user, candidates: [.init(userId: user, distance: 0.3)],
                                          transactionId: UUID(), score: 0.3, ttlSeconds: 60)
        try await bindings.open(pending)
        try await bindings.bind(confirmation: pending.id, appId: app.id, device: device, user: user, ticket: nil)
    }

    func issue(_ issuer: BindingTickets.Issuer, app: AppRecord? = nil, userId: UUID? = nil, employeeNumber: String? = nil)
        async throws -> (BindingTickets.Issued, TransactionDraft) {
        var draft = TransactionDraft(appId: self.app.id, kind: "device.binding.ticket")
        let issued = try await tickets.issue(app: app ?? self.app, by: issuer, userId: userId, employeeNumber: employeeNumber, draft: &draft)
        return (issued, draft)
    }

    @Test func theAppServerGetsATicketForAnyUserOfTheAppAndABindingSpendsItOnce() async throws {
        let alice = users.add(appId: app.id, employeeNumber: "E1")
        let (issued, draft) = try await issue(.appServer, employeeNumber: "E1")
        #expect(issued.userId == alice.wire && issued.expiresIn == 300 && issued.bindingTicket.hasPrefix("fbt_"))
        #expect(draft.userId == alice && draft.detail["issuer"] == "appServer" && draft.deviceId == nil)
        // The ticket works once, for that user, as the app server's.
        let phone = ClientDevice(id: "thumbprint-new", isKey: true)
        let pending = PendingConfirmation(appId: app.id, deviceId: phone.id, userId: alice, candidates: [.init(userId: alice, distance: 0.3)],
                                          transactionId: UUID(), score: 0.3, ttlSeconds: 60)
        try await bindings.open(pending)
        let check = BindingTicketCheck(ticket: issued.bindingTicket, policy: .appServerTicket)
        try await bindings.bind(confirmation: pending.id, appId: app.id, device: phone, user: alice, ticket: check)
        #expect(try await bindings.boundUsers(appId: app.id, device: phone) == [alice])
        let again = PendingConfirmation(appId: app.id, deviceId: "thumbprint-other", userId: alice, candidates: [.init(userId: alice, distance: 0.3)],
                                        transactionId: UUID(), score: 0.3, ttlSeconds: 60)
        try await bindings.open(again)
        #expect(await errorCode {
            try await bindings.bind(confirmation: again.id, appId: app.id, device: ClientDevice(id: "thumbprint-other", isKey: true), user: alice,
                                    ticket: check)
        } == .bindingTicketInvalid)
        // Naming nobody, or someone unknown.
        #expect(await errorCode { try await issue(.appServer) } == .invalidRequest)
        #expect(await errorCode { try await issue(.appServer, employeeNumber: "E9") } == .notFound)
        #expect(await errorCode { try await issue(.appServer, userId: UUID()) } == .notFound)
    }

    @Test func aBoundDeviceAsksOnlyForItsOwnUsersAndOnlyOnADPoPApp() async throws {
        let alice = users.add(appId: app.id, employeeNumber: "E1")
        let bob = users.add(appId: app.id, employeeNumber: "E2")
        let phone = ClientDevice(id: "thumbprint-phone", isKey: true)
        try await bind(phone, to: alice)
        let asked = Calls<String>()
        let fromPhone = BindingTickets.Issuer.boundDevice {
            asked.record("proof")
            return phone
        }
        // Bound to one user, the device may name nobody.
        let (issued, draft) = try await issue(fromPhone)
        #expect(issued.userId == alice.wire && draft.deviceId == phone.id && draft.detail["issuer"] == "boundDevice")
        // Any user the key is not bound to, known or not, gets the same answer: no directory of numbers.
        var refusals: [String] = []
        for (userId, number) in [(bob, nil), (nil, "E2"), (nil, "E404"), (UUID(), nil)] as [(UUID?, String?)] {
            do {
                _ = try await issue(fromPhone, userId: userId, employeeNumber: number)
                Issue.record("issued for a user the key is not bound to")
            } catch let error as APIError {
                refusals.append(error.code.rawValue + " " + error.message)
            }
        }
        #expect(refusals.count == 4 && Set(refusals).count == 1 && refusals[0].hasPrefix("FORBIDDEN"))
        // A key bound to nobody is refused before anything is looked up, whatever it names.
        let stranger = BindingTickets.Issuer.boundDevice { ClientDevice(id: "thumbprint-stranger", isKey: true) }
        #expect(await errorCode { try await issue(stranger) } == .forbidden)
        #expect(await errorCode { try await issue(stranger, employeeNumber: "E1") } == .forbidden)
        #expect(await errorCode { try await issue(stranger, employeeNumber: "E404") } == .forbidden)
        // On an app that identifies devices by a header there is no key to trust: refused before any proof is asked for.
        var header = app
        header.deviceBinding = .header
        let before = asked.all.count
        #expect(await errorCode { try await issue(fromPhone, app: header) } == .forbidden)
        #expect(asked.all.count == before)
    }
}
