import AuditRecords
import Crypto
import Foundation
import ServiceKit

public struct GatewayConfiguration: Sendable {
    public var common: CommonConfiguration
    public var httpHost: String
    public var httpPort: Int
    public var httpThreads: Int
    public var httpMaxConnections: Int
    /// 0 = no per-address limit (the right setting behind a load balancer).
    public var httpPerIPLimit: Int
    /// Requests a second per client address (`FACEGATE_CLIENT_RATE`, 0 = unlimited) and the burst above it
    /// (`FACEGATE_CLIENT_BURST`); beyond them the answer is 429 `RATE_LIMITED`.
    public var clientRate: Int
    public var clientBurst: Int
    /// Kiosk logins a kiosk may make a minute on average (`FACEGATE_KIOSK_LOGIN_RATE`), and at once
    /// (`FACEGATE_KIOSK_LOGIN_BURST`): walk-ups who match no one cost a kiosk nothing else, so this is its limit.
    public var kioskLoginRate: Int
    public var kioskLoginBurst: Int
    /// Calls a second that one operator key or app server may make to search, verify and enroll
    /// (`FACEGATE_SERVER_CALL_RATE`, `FACEGATE_SERVER_CALL_BURST`): server callers are limited per credential, never
    /// charged as failed logins.
    public var serverCallRate: Int
    public var serverCallBurst: Int
    /// Refusals without a valid credential: the first per client address and this many seconds is a row of its own, the
    /// rest one summary row (`FACEGATE_REFUSAL_SUMMARY_SECONDS`; 0: a row each).
    public var refusalSummarySeconds: Int
    /// Open kiosk event streams per gateway (`FACEGATE_EVENT_STREAMS`) and per client address (`FACEGATE_EVENT_STREAMS_PER_CLIENT`).
    public var eventStreams: Int
    public var eventStreamsPerClient: Int
    /// SHA-256 of the bootstrap operator key: `FACEGATE_ADMIN_KEY_SHA256` (hex), so the gateway need not hold the key
    /// itself, or the hash of `FACEGATE_ADMIN_KEY`; none when neither is set.
    public var bootstrapAdminKeyHash: [UInt8]?
    public var signingKey: [UInt8]
    /// X25519 public key of the ctid-verifier: institution keys are sealed to it at app creation.
    public var ctidPublicKey: [UInt8]
    public var previousSigningKeys: [[UInt8]]
    /// Keys of the audit chain's HMAC.
    public var auditKeys: AuditKeys
    /// Whether chains may begin with rows written before the chain was keyed (an upgraded installation).
    public var acceptUnkeyedAuditRows: Bool
    /// How often each app's chain head is signed and published on the audit topic (0: never).
    public var auditCheckpointInterval: Duration
    /// The kiosk-orchestrator's token keys (raw Ed25519 public keys): kiosk identity tokens only.
    public var kioskPublicKeys: [[UInt8]]
    public var issuer: String
    public var accessTokenTTL: TimeInterval
    public var identityTokenTTL: TimeInterval
    public var confirmationTTL: TimeInterval
    public var requestTimeout: Duration
    public var maxBodyBytes: Int
    public var matcherShards: Int
    /// Face templates one user may hold (of the app's model): several photos match better than one.
    public var maxFacesPerUser: Int
    /// How often spent single-use records are deleted.
    public var sweepInterval: Duration
    /// Brute-force rule (NIST SP 800-63B): after `throttleAfter` consecutive failures at least
    /// `throttleSeconds` between attempts; after `lockAfter` failures the device is locked until reset.
    public var throttleAfter: Int
    public var throttleSeconds: Int
    public var lockAfter: Int
    /// Consecutive failures from one client address before it waits `throttleSeconds` (never locked:
    /// offices and kiosks share addresses).
    public var addressThrottleAfter: Int
    /// The sliding window of a client address's failures (`FACEGATE_ADDRESS_FAILURE_WINDOW_SECONDS`): `addressThrottleAfter`
    /// at once, then one per window / that many; successes in between give nothing back.
    public var addressFailureWindow: Int
    /// Proxies whose `X-Forwarded-For` names the client (`FACEGATE_TRUSTED_PROXIES`, comma list of addresses and CIDR
    /// ranges); from anyone else the header is ignored and the connection's address is the client's.
    var trustedProxies: TrustedProxies
    public var secretGraceSeconds: Int
    /// How long a CTID serial number stays usable.
    public var ctidSerialTTLSeconds: Int
    /// The public base URL clients call (`FACEGATE_PUBLIC_URL`, e.g. `https://id.example.com`), against which
    /// a DPoP proof's `htu` is checked; unset: `http(s)://` + the request's `Host` header.
    public var publicURL: String?
    /// How old a DPoP proof may be (`iat`), in seconds; its `jti` is remembered that long.
    public var dpopMaxAge: Int
    /// How long a device-binding ticket stays usable.
    public var bindingTicketTTL: Int
    /// Where the console's static files are (`FACEGATE_CONSOLE_DIR`); nil: the Console folder of this source tree.
    public var consoleDirectory: String?

    /// The public port is reachable from this machine only (`FACEGATE_HTTP_HOST` a loopback address).
    public var listensOnLoopbackOnly: Bool { ["127.0.0.1", "::1", "localhost"].contains(httpHost) }

    public init(environment env: Environment) throws(ConfigurationError) {
        common = try CommonConfiguration(serviceName: "auth-gateway", defaultAdminPort: 9100, environment: env)
        httpHost = env.string("FACEGATE_HTTP_HOST", default: "127.0.0.1")
        httpPort = try env.int("FACEGATE_HTTP_PORT", default: 8080, range: 0...65535)
        httpThreads = try env.int("FACEGATE_HTTP_THREADS", default: 2, range: 1...64)
        httpMaxConnections = try env.int("FACEGATE_HTTP_MAX_CONNECTIONS", default: 8192, range: 1...1_000_000)
        httpPerIPLimit = try env.int("FACEGATE_HTTP_PER_IP_LIMIT", default: 0, range: 0...1_000_000)
        clientRate = try env.int("FACEGATE_CLIENT_RATE", default: 50, range: 0...1_000_000)
        clientBurst = try env.int("FACEGATE_CLIENT_BURST", default: 100, range: 1...1_000_000)
        kioskLoginRate = try env.int("FACEGATE_KIOSK_LOGIN_RATE", default: 30, range: 0...100_000)
        kioskLoginBurst = try env.int("FACEGATE_KIOSK_LOGIN_BURST", default: 10, range: 1...100_000)
        serverCallRate = try env.int("FACEGATE_SERVER_CALL_RATE", default: 20, range: 0...1_000_000)
        serverCallBurst = try env.int("FACEGATE_SERVER_CALL_BURST", default: 40, range: 1...1_000_000)
        refusalSummarySeconds = try env.int("FACEGATE_REFUSAL_SUMMARY_SECONDS", default: 60, range: 0...3600)
        eventStreams = try env.int("FACEGATE_EVENT_STREAMS", default: 256, range: 1...100_000)
        eventStreamsPerClient = try env.int("FACEGATE_EVENT_STREAMS_PER_CLIENT", default: 8, range: 1...100_000)
        if let hex = env.optionalString("FACEGATE_ADMIN_KEY_SHA256") {
            guard let hash = Hex.decode(hex), hash.count == 32 else {
                throw ConfigurationError(variable: "FACEGATE_ADMIN_KEY_SHA256", problem: "must be the SHA-256 of the operator key: 64 hex digits")
            }
            bootstrapAdminKeyHash = hash
        } else {
            bootstrapAdminKeyHash = env.optionalString("FACEGATE_ADMIN_KEY").map { SHA256.hash(Array($0.utf8)) }
        }
        signingKey = try env.base64Key("FACEGATE_SIGNING_KEY", bytes: 32)
        ctidPublicKey = try env.base64Key("FACEGATE_CTID_PUBLIC_KEY", bytes: 32)
        previousSigningKeys = []
        if let previous = env.optionalString("FACEGATE_PREVIOUS_SIGNING_KEYS") {
            for item in previous.split(separator: ",") {
                guard let data = Data(base64Encoded: String(item).trimmingCharacters(in: .whitespaces)), data.count == 32 else {
                    throw ConfigurationError(variable: "FACEGATE_PREVIOUS_SIGNING_KEYS", problem: "must be a comma list of base64 32-byte seeds")
                }
                previousSigningKeys.append(Array(data))
            }
        }
        auditKeys = try AuditKeys(environment: env)
        acceptUnkeyedAuditRows = try env.bool("FACEGATE_AUDIT_ACCEPT_UNKEYED", default: false)
        auditCheckpointInterval = .seconds(try env.int("FACEGATE_AUDIT_CHECKPOINT_SECONDS", default: 3600, range: 0...604_800))
        kioskPublicKeys = []
        for item in (env.optionalString("FACEGATE_KIOSK_PUBLIC_KEYS") ?? "").split(separator: ",") {
            guard let data = Data(base64Encoded: String(item).trimmingCharacters(in: .whitespaces)), data.count == 32 else {
                throw ConfigurationError(variable: "FACEGATE_KIOSK_PUBLIC_KEYS", problem: "must be a comma list of base64 32-byte Ed25519 public keys")
            }
            kioskPublicKeys.append(Array(data))
        }
        issuer = env.string("FACEGATE_ISSUER", default: "facegate")
        accessTokenTTL = TimeInterval(try env.int("FACEGATE_ACCESS_TOKEN_TTL_SECONDS", default: 7200, range: 60...604_800))
        identityTokenTTL = TimeInterval(try env.int("FACEGATE_IDENTITY_TOKEN_TTL_SECONDS", default: 300, range: 10...3600))
        confirmationTTL = TimeInterval(try env.int("FACEGATE_CONFIRMATION_TTL_SECONDS", default: 300, range: 10...3600))
        requestTimeout = .seconds(try env.int("FACEGATE_REQUEST_TIMEOUT_SECONDS", default: 10, range: 1...120))
        maxBodyBytes = try env.int("FACEGATE_MAX_BODY_BYTES", default: 5 << 20, range: 1024...(64 << 20))
        matcherShards = try env.int("FACEGATE_MATCHER_SHARDS", default: 1, range: 1...1024)
        maxFacesPerUser = try env.int("FACEGATE_MAX_FACES_PER_USER", default: 5, range: 1...50)
        throttleAfter = try env.int("FACEGATE_THROTTLE_AFTER", default: 5, range: 1...1000)
        throttleSeconds = try env.int("FACEGATE_THROTTLE_SECONDS", default: 30, range: 1...86400)
        lockAfter = try env.int("FACEGATE_LOCK_AFTER", default: 50, range: 2...100_000)
        addressThrottleAfter = try env.int("FACEGATE_ADDRESS_THROTTLE_AFTER", default: 20, range: 1...100_000)
        addressFailureWindow = try env.int("FACEGATE_ADDRESS_FAILURE_WINDOW_SECONDS", default: 600, range: 1...86400)
        trustedProxies = try TrustedProxies(env.optionalString("FACEGATE_TRUSTED_PROXIES") ?? "")
        secretGraceSeconds = try env.int("FACEGATE_SECRET_GRACE_SECONDS", default: 3600, range: 0...2_592_000)
        ctidSerialTTLSeconds = try env.int("FACEGATE_CTID_SERIAL_TTL_SECONDS", default: 600, range: 30...86400)
        sweepInterval = .seconds(try env.int("FACEGATE_SWEEP_SECONDS", default: 60, range: 1...86400))
        consoleDirectory = env.optionalString("FACEGATE_CONSOLE_DIR")
        publicURL = env.optionalString("FACEGATE_PUBLIC_URL").map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        dpopMaxAge = try env.int("FACEGATE_DPOP_MAX_AGE_SECONDS", default: 300, range: 10...3600)
        bindingTicketTTL = try env.int("FACEGATE_BINDING_TICKET_TTL_SECONDS", default: 600, range: 30...86400)
    }
}
