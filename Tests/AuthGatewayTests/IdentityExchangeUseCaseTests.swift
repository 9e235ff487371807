import AppRecords
@testable import AuthGateway
import Crypto
import FaceGateCore
import Foundation
import IdentityRecords
import JWT
import Testing

/// `IdentityExchange` over in-memory stores, with tokens minted by the real issuer and keys. End to end:
/// IntegrationTests' FaceLoginTests and KioskOnboardingTests.
@Suite struct IdentityExchangeUseCaseTests {
    let gatewayKey = JWTSigningKey(kid: "gateway", privateKey: Ed25519PrivateKey())
    let kioskKey = JWTSigningKey(kid: "kiosk", privateKey: Ed25519PrivateKey())
    let users = InMemoryUserDirectory()
    let app = AppRecord(id: UUID(), name: "app", secretHash: [], modules: .initial, faceModel: .sface2021dec,
                        matchThreshold: FaceModel.sface2021dec.defaultThreshold, liveness: .initial, deviceBinding: .dpop,
                        deviceBindingPolicy: .appServerTicket, kioskApproval: KioskApprovalPolicy(), quotas: .initial,
                        keepEnrollmentPhotos: false, createdAt: Date())

    var exchange: IdentityExchange {
        IdentityExchange(keys: JWTKeySet([(kid: gatewayKey.kid, key: gatewayKey.publicKey)]),
                         kioskKeys: JWTKeySet([(kid: kioskKey.kid, key: kioskKey.publicKey)]), issuer: "https://facegate.test",
                         spent: InMemorySpentTokenIds(), users: users)
    }

    func token(_ user: UUID, method: String = "face", app: UUID? = nil, key: JWTSigningKey? = nil, ttl: TimeInterval = 300) throws -> String {
        try IdentityTokenIssuer(issuer: "https://facegate.test", key: key ?? gatewayKey, ttl: ttl)
            .issue(app: app ?? self.app.id, user: user, device: "phone-1", method: method, transaction: UUID(), amr: ["face"])
    }

    func code(_ exchange: IdentityExchange, _ token: String) async -> ErrorCode? {
        var draft = TransactionDraft(appId: app.id, kind: "identity.exchange")
        do {
            _ = try await exchange.exchange(token, app: app, draft: &draft)
            return nil
        } catch let error as APIError {
            return error.code
        } catch {
            return .internalError
        }
    }

    @Test func aTokenIsExchangedOnceForTheUser() async throws {
        let exchange = self.exchange
        let user = users.add(appId: app.id, employeeNumber: "E1001", name: "Barack Obama")
        let token = try token(user)
        var draft = TransactionDraft(appId: app.id, kind: "identity.exchange")
        let exchanged = try await exchange.exchange(token, app: app, draft: &draft)
        #expect(exchanged.userId == user && exchanged.user == UserProfile(employeeNumber: "E1001", name: "Barack Obama"))
        #expect(exchanged.deviceId == "phone-1" && exchanged.method == "face")
        #expect(draft.userId == user && draft.deviceId == "phone-1" && draft.detail["method"] == "face")
        #expect(await code(exchange, token) == .identityTokenUsed)
    }

    @Test func anotherAppsExpiredOrForeignKeyedTokenIsRefused() async throws {
        let exchange = self.exchange
        let user = users.add(appId: app.id, employeeNumber: "E1001")
        #expect(await code(exchange, try token(user, app: UUID())) == .identityTokenInvalid)
        #expect(await code(exchange, try token(user, ttl: -120)) == .identityTokenExpired)
        #expect(await code(exchange, try token(user, key: JWTSigningKey(kid: "gateway", privateKey: Ed25519PrivateKey()))) == .identityTokenInvalid)
        #expect(await code(exchange, "not.a.token") == .identityTokenInvalid)
    }

    /// The kiosk-orchestrator's key vouches for kiosk logins only.
    @Test func theKioskKeyVouchesForKioskTokensOnly() async throws {
        let exchange = self.exchange
        let user = users.add(appId: app.id, employeeNumber: "K-1")
        #expect(await code(exchange, try token(user, method: "face", key: kioskKey)) == .identityTokenInvalid)
        #expect(await code(exchange, try token(user, method: "kiosk", key: kioskKey)) == nil)
    }

    @Test func aTokenOfAUserErasedSinceIsSpentAndNotFound() async throws {
        let exchange = self.exchange
        let user = users.add(appId: app.id, employeeNumber: "E1001")
        let token = try token(user)
        users.remove(user)
        #expect(await code(exchange, token) == .notFound)
        #expect(await code(exchange, token) == .identityTokenUsed)
    }
}
