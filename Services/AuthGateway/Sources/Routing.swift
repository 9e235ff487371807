import FaceGateCore
import IdentityRecords
import Foundation
import HTTPServer
import PostgresClient
import ServiceKit

/// A group of routes as a type: it holds exactly the use cases and stores its handlers call, given by the composition
/// root (`GatewayComposition`), and registers its routes with their declared answers and doors.
protocol RouteCollection: Sendable {
    func boot(_ routes: APIRoutes)
}

/// How the routes of a group prove their caller, from the headers alone. Checked once per request: before the body of
/// an upload route is read (a stranger's upload is refused unread), else when the handler is called.
struct Authenticator<Caller: Sendable>: Sendable {
    /// The proof as the OpenAPI document states it: security schemes, header parameters, refusals.
    let documentation: CallerDocumentation
    let authenticate: @Sendable (HTTPRequest) async throws -> Caller

    init(_ documentation: CallerDocumentation, authenticate: @escaping @Sendable (HTTPRequest) async throws -> Caller) {
        self.documentation = documentation
        self.authenticate = authenticate
    }
}

/// What a handler gets besides the request: the caller its group proved, and the transaction log of the call.
struct CallContext<Caller: Sendable>: Sendable {
    let caller: Caller
    let request: HTTPRequest
    let calls: CallLog

    /// The client's address (`CallLog.clientAddress`).
    var clientAddress: String { calls.clientAddress(request) }

    /// Who the caller proved to be, as its audit rows name it (`operator:<key id>`, `appServer:<app id>`, `client`…).
    var actor: String { RequestCaller.actor ?? "" }

    /// Runs a call that authenticates, verifies or changes something, and writes exactly one transaction for it
    /// (`CallLog.recorded`).
    func recorded(kind: String, appId: UUID, deviceId: String? = nil,
                  _ body: (inout TransactionDraft) async throws -> HTTPResponse) async throws -> HTTPResponse {
        try await calls.recorded(request, kind: kind, appId: appId, deviceId: deviceId, body)
    }

    /// For calls that write no transaction unless refused (`CallLog.refusalRecorded`).
    func refusalRecorded<T>(kind: String, appId: UUID, _ prove: (inout TransactionDraft) async throws -> T) async throws -> T {
        try await calls.refusalRecorded(request, kind: kind, appId: appId, prove)
    }
}

/// What an admission proved, carried to the handler of the same request: the caller, and the request-scoped state its
/// proof set (the audit actor, the app whose rows the request may see).
private struct Admitted: Sendable {
    let caller: any Sendable
    let requestCaller: RequestCaller
    let scope: PostgresScope?
}

/// Registers handlers that may throw `APIError`, turning it into the wire's error envelope.
/// A route marked `idempotent` honours `Idempotency-Key` (creating POSTs). A call refused for its credentials
/// before any transaction was written for it is recorded on the trail (`CallLog.recordRefusedCredentials`).
struct APIRoutes {
    let router: Router
    /// Every route's declared answers and door.
    let table: RouteTable
    let idempotency: IdempotentRequests
    let calls: CallLog
    /// Every way a route group proves its caller.
    let callers: Callers
    /// Per client address (`FACEGATE_CLIENT_RATE`).
    let clientRate: RateLimiter
    /// Says why a request ended in 500 (the answer itself names no cause).
    let logger: Logger
    /// Refusals with a code their route did not declare (`facegate_http_undeclared_refusals_total`): the document would
    /// not have told the client. The integration tests fail on any.
    let undeclaredRefusals: Counter

    /// Only a route that names how its caller is `authenticated` before the body is read takes a body over 64 KB
    /// (photos, documents): the credential is checked from the headers, and a stranger's upload is refused unread.
    static let unauthenticatedBodyBytes = 64 << 10

    /// The routes whose caller `authenticator` proves, under `tag` in the document.
    func group<Caller>(_ authenticator: KeyPath<Callers, Authenticator<Caller>>, tag: APITag) -> RouteGroup<Caller> {
        group(callers[keyPath: authenticator], tag: tag)
    }

    /// The routes whose caller a collection's own `authenticator` proves (built on `callers`).
    func group<Caller>(_ authenticator: Authenticator<Caller>, tag: APITag) -> RouteGroup<Caller> {
        RouteGroup(routes: self, authenticator: authenticator, tag: tag)
    }

    /// A route anyone may call, declared as the OpenAPI document describes it (`OpenAPIDocument`): its `operationId` and
    /// one-line `summary`; the `body` it takes and the `parameters` it reads; its `answers`; the `errors` it refuses
    /// with beyond those of its caller's proof and of its kind of route, and `because` where a code needs its cause.
    /// `doors`: where the trust policy says what the route demands, for a route that can answer an identity token, a
    /// binding ticket or a factor verdict (a `TrustAnswer`).
    func add(_ method: String, _ pattern: String, _ operationId: String, _ summary: String, tag: APITag,
             caller: CallerDocumentation = .public, body: RequestBody = .none, parameters: [Parameter] = [], answers: [Answer],
             errors: [ErrorCode] = [], because: [ErrorCode: String] = [:], doors: [Door] = [], maxBodyBytes: Int? = nil,
             idempotent: Bool = false, authenticated: (@Sendable (HTTPRequest) async throws -> any Sendable)? = nil, _ handler: @escaping HTTPHandler) {
        let documentation = RouteDocumentation(operationId: operationId, summary: summary, tag: tag, caller: caller, body: body,
                                               parameters: parameters, answers: answers, errors: errors, because: because, idempotent: idempotent)
        table.add(RouteDeclaration(method: method, pattern: pattern, documentation: documentation, doors: doors))
        let (calls, logger, idempotency, clientRate) = (calls, logger, idempotency, clientRate)
        let declared = Set(documentation.refusals).union(RouteDocumentation.undeclaredAnywhere)
        let undeclaredRefusals = undeclaredRefusals
        @Sendable func checkDeclared(_ error: APIError) {
            guard !declared.contains(error.code) else { return }
            undeclaredRefusals.increment(["route": method + " " + pattern, "code": error.code.rawValue])
            logger.warning("refusal not declared by its route", ["http.route": pattern, "error.code": error.code.rawValue, "error": error.message])
        }
        let wire: HTTPHandler = { request in
            let admitted = request.admitted as? Admitted
            let caller = admitted?.requestCaller ?? RequestCaller()
            do {
                // Row-level security: the request sees no app's rows until its caller is authenticated.
                return try await RequestCaller.$current.withValue(caller) {
                    try await Tenant.request(continuing: admitted?.scope) { try await handler(request) }
                }
            } catch let error as APIError {
                checkDeclared(error)
                throw error.http(transactionId: error.code.refusesCredentials ? await calls.recordRefusedCredentials(request, error, app: caller.concernedApp) : nil)
            }
        }
        var admission: HTTPAdmission?
        if let authenticated {
            admission = { @Sendable request -> HTTPAdmissionVerdict in
                await Self.traced(request) {
                    let caller = RequestCaller()
                    do {
                        return try await RequestCaller.$current.withValue(caller) {
                            try await Tenant.request {
                                .admit(Admitted(caller: try await authenticated(request), requestCaller: caller, scope: PostgresScope.current))
                            }
                        }
                    } catch let error as APIError {
                        checkDeclared(error)
                        let transactionId = error.code.refusesCredentials ? await calls.recordRefusedCredentials(request, error, app: caller.concernedApp) : nil
                        return .refuse(error.http(transactionId: transactionId).response)
                    } catch let error as PostgresError where error.isServerUnavailable {
                        return .refuse(APIError(.serviceUnavailable, "the service is unavailable right now; try again").http(transactionId: nil).response)
                    } catch {
                        logger.error("request failed", ["http.route": pattern, "error": "\(error)"])
                        return .refuse(HTTPError.internalError.response)
                    }
                }
            }
        }
        let bodyLimit = maxBodyBytes ?? (authenticated == nil ? Self.unauthenticatedBodyBytes : nil)
        router.add(method, pattern, maxBodyBytes: bodyLimit, admission: admission) { request in
            try await Self.traced(request) {
                guard clientRate.admit(calls.clientAddress(request)) else {
                    throw APIError(.rateLimited, "too many requests from this client; slow down", retryAfter: 1).http(transactionId: nil)
                }
                do {
                    return try await idempotent ? idempotency.run(request, wire) : wire(request)
                } catch let error as PostgresError where error.isServerUnavailable {
                    // PostgreSQL away (a restart, a failover): the documented 503, which a client may retry.
                    logger.warning("database not reachable", ["http.route": pattern, "error": error.description])
                    throw APIError(.serviceUnavailable, "the service is unavailable right now; try again").http(transactionId: nil)
                } catch let error as HTTPError {
                    throw error
                } catch {
                    logger.error("request failed", ["http.route": pattern, "error": "\(error)"])
                    throw error
                }
            }
        }
    }

    /// Runs a call as the gateway's span of the caller's trace (W3C `traceparent`, or a new trace): every log line and job
    /// of the call carries it, and the answer names it in `traceresponse` (Trace Context level 2), errors included.
    static func traced(_ request: HTTPRequest, _ body: () async throws -> HTTPResponse) async throws -> HTTPResponse {
        let span = (request.headers["traceparent"].flatMap(TraceContext.init(traceparent:)) ?? .random()).child()
        do {
            var response = try await TraceContext.$current.withValue(span) { try await body() }
            response.headers.append(("traceresponse", span.traceparent))
            return response
        } catch var error as HTTPError {
            error.headers.append(("traceresponse", span.traceparent))
            throw error
        }
    }

    static func traced(_ request: HTTPRequest, _ body: () async -> HTTPAdmissionVerdict) async -> HTTPAdmissionVerdict {
        let span = (request.headers["traceparent"].flatMap(TraceContext.init(traceparent:)) ?? .random()).child()
        let verdict = await TraceContext.$current.withValue(span) { await body() }
        guard case .refuse(var response) = verdict else { return verdict }
        response.headers.append(("traceresponse", span.traceparent))
        return .refuse(response)
    }
}

/// Routes sharing one way of authenticating their caller (`APIRoutes.group`): no handler authenticates by hand.
struct RouteGroup<Caller: Sendable> {
    let routes: APIRoutes
    let authenticator: Authenticator<Caller>
    let tag: APITag

    /// As `APIRoutes.add`. An `upload` body (photos, documents) may be over 64 KB: its caller is proven from the headers
    /// before the body is read.
    func add(_ method: String, _ pattern: String, _ operationId: String, _ summary: String, body: RequestBody = .none,
             parameters: [Parameter] = [], answers: [Answer], errors: [ErrorCode] = [], because: [ErrorCode: String] = [:],
             doors: [Door] = [], maxBodyBytes: Int? = nil, idempotent: Bool = false,
             _ handler: @escaping @Sendable (HTTPRequest, CallContext<Caller>) async throws -> HTTPResponse) {
        let (authenticator, calls) = (authenticator, routes.calls)
        var admission: (@Sendable (HTTPRequest) async throws -> any Sendable)?
        if body.isUpload { admission = { request in try await authenticator.authenticate(request) } }
        routes.add(method, pattern, operationId, summary, tag: tag, caller: authenticator.documentation, body: body,
                   parameters: parameters, answers: answers, errors: errors, because: because, doors: doors,
                   maxBodyBytes: maxBodyBytes, idempotent: idempotent, authenticated: admission) { request in
            // Proven by the admission when it ran (an upload with a body), else here. (`Caller` may itself be optional, so
            // the admission's record is unwrapped first: a missing one must never pass for a proven nil.)
            let caller: Caller
            if let admitted = request.admitted as? Admitted, let proven = admitted.caller as? Caller {
                caller = proven
            } else {
                caller = try await authenticator.authenticate(request)
            }
            return try await handler(request, CallContext(caller: caller, request: request, calls: calls))
        }
    }
}
