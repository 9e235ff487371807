import Crypto
import Foundation

/// One audit record: what an API call authenticated or verified, never biometric data or secrets.
public struct TransactionRecord: Codable, Sendable, Equatable {
    public var id: UUID
    public var appId: UUID
    public var kind: String
    public var outcome: String
    public var userId: UUID?
    public var deviceId: String?
    public var clientIp: String?
    public var score: Float?
    public var latencyMs: Int
    public var createdAt: Date
    /// Small, non-sensitive context (e.g. a masked ID number, the module state); values are strings.
    public var detail: [String: String]

    /// The `detail` entry naming who acted, as `type:id`: `operator:<keyId>` (`operator:bootstrap`), `auditor:<id>`,
    /// `appServer:<appId>`, `client:<deviceId>`, `kiosk:<kioskId>`, `service:<name>`.
    public static let actorKey = "actor"
    /// The `detail` entry holding what an administrative call changed, as JSON: `{"field": [old, new], …}`.
    public static let changeKey = "change"

    public init(id: UUID = UUID(), appId: UUID, kind: String, outcome: String, userId: UUID? = nil, deviceId: String? = nil,
                clientIp: String? = nil, score: Float? = nil, latencyMs: Int, createdAt: Date = Date(), detail: [String: String] = [:]) {
        self.id = id
        self.appId = appId
        self.kind = kind
        self.outcome = outcome
        self.userId = userId
        self.deviceId = deviceId
        self.clientIp = clientIp
        self.score = score
        self.latencyMs = latencyMs
        // PostgreSQL keeps microseconds and a Date is binary floating point: the chain hashes whole
        // milliseconds, rounded to nearest, so the value written and the value read back agree.
        self.createdAt = Date(timeIntervalSince1970: (createdAt.timeIntervalSince1970 * 1000).rounded() / 1000)
        self.detail = detail
    }

    /// The exact bytes hashed into the chain: length-prefixed fields, so no value can imitate a separator.
    public func canonicalBytes(chainSeq: Int64) -> [UInt8] {
        let detailText = detail.keys.sorted().map { "\($0.count):\($0)\(detail[$0]!.count):\(detail[$0]!)" }.joined()
        let fields: [String] = [
            "facegate.transaction.v1", id.uuidString.lowercased(), appId.uuidString.lowercased(), String(chainSeq), kind, outcome,
            userId?.uuidString.lowercased() ?? "", deviceId ?? "", clientIp ?? "", score.map { String($0) } ?? "",
            String(latencyMs), String(Int64((createdAt.timeIntervalSince1970 * 1000).rounded())), detailText,
        ]
        var bytes: [UInt8] = []
        for field in fields {
            let utf8 = Array(field.utf8)
            bytes += Array(String(utf8.count).utf8) + [0x3A] + utf8
        }
        return bytes
    }

    /// `row_hash = HMAC-SHA256(audit key, prev_hash ‖ canonical row)`; rows written before the chain was
    /// keyed (no key) used `SHA-256(prev_hash ‖ canonical row)`.
    public func rowHash(previousHash: [UInt8], chainSeq: Int64, key: [UInt8]?) -> [UInt8] {
        let input = previousHash + canonicalBytes(chainSeq: chainSeq)
        guard let key else { return SHA256.hash(input) }
        return HMACSHA256.authenticationCode(key: key, data: input)
    }

    /// The hash the first row of every chain links to.
    public static let genesisHash = [UInt8](repeating: 0, count: 32)
}

/// A signed statement of an app's audit chain: `count` rows, the last with hash `head` (JWT claims, EdDSA
/// under the gateway's token key, `typ` `facegate-checkpoint+jwt`). Kept outside the database — by auditors,
/// on `audit.transactions.v1` — it lets a later verification notice a rewritten head, a deleted tail, or
/// the deletion of everything since.
public struct AuditCheckpoint: Codable, Sendable {
    public static let type = "facegate-checkpoint+jwt"
    public static let audience = "facegate-audit"

    public var iss: String
    public var aud: String
    /// The app.
    public var sub: String
    public var iat: Int64
    /// Checkpoints do not lapse; `exp` is far away only because every token must carry one.
    public var exp: Int64
    public var count: Int64
    /// base64url of the head row's hash (the genesis hash for an empty chain).
    public var headHash: String

    public init(issuer: String, appId: UUID, count: Int64, head: [UInt8], issuedAt: Date = Date()) {
        iss = issuer
        aud = Self.audience
        sub = appId.uuidString.lowercased()
        iat = Int64(issuedAt.timeIntervalSince1970)
        exp = iat + 100 * 365 * 86400
        self.count = count
        headHash = Base64URL.encode(head)
    }

    public var head: [UInt8] { Base64URL.decode(headHash) ?? [] }
    public var issuedAt: Date { Date(timeIntervalSince1970: TimeInterval(iat)) }
}
