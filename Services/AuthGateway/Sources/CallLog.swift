import AuditRecords
import FaceGateCore
import Foundation
import HTTPServer
import ServiceKit

/// The transactions the gateway's calls write, and who the client of a call is.
struct CallLog: Sendable {
    let transactions: TransactionLog
    let trustedProxies: TrustedProxies
    /// Refused credentials, first of each address and period as a row, the rest counted (`RefusalLedger`).
    let refusals: RefusalLedger
    let logger: Logger

    /// The client's address: the connection's, or — only when the connection comes from a configured
    /// trusted proxy — the nearest `X-Forwarded-For` entry that is not itself a trusted proxy.
    func clientAddress(_ request: HTTPRequest) -> String {
        guard trustedProxies.contains(request.remoteAddress), let forwarded = request.headers["X-Forwarded-For"] else { return request.remoteAddress }
        let hops = forwarded.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return hops.last(where: { !trustedProxies.contains($0) }) ?? hops.first ?? request.remoteAddress
    }

    /// Runs a call that authenticates or verifies, and writes exactly one transaction for it, whatever
    /// happens; errors carry the transaction id.
    func recorded(_ request: HTTPRequest, kind: String, appId: UUID, deviceId: String? = nil,
                  _ body: (inout TransactionDraft) async throws -> HTTPResponse) async throws -> HTTPResponse {
        let started = ContinuousClock.now
        var draft = TransactionDraft(appId: appId, kind: kind, deviceId: deviceId)
        var response: HTTPResponse?
        var failure: Error?
        do {
            response = try await body(&draft)
        } catch let error as APIError {
            draft.outcome = error.code.rawValue
            failure = error
        } catch let error as HTTPError {
            draft.outcome = error.code
            failure = error
        } catch {
            draft.outcome = ErrorCode.internalError.rawValue
            failure = error
            logger.error("call failed", ["request.id": request.requestId, "error": "\(error)"])
        }
        try await append(draft, for: request, started: started)
        if let error = failure as? APIError { throw error.http(transactionId: draft.id) }
        if let error = failure as? HTTPError {
            throw HTTPError(status: error.status, code: error.code, message: error.message, transactionId: draft.id.uuidString.lowercased(),
                            headers: error.headers, details: error.details)
        }
        if failure != nil { throw APIError(.internalError, "internal error").http(transactionId: draft.id) }
        return response!
    }

    /// For calls that write no transaction unless refused (reads, challenges): runs `prove` (a device or kiosk proof) and
    /// records its refusal on the app's chain as `kind`, so a forged or replayed proof leaves a row like a refused login.
    func refusalRecorded<T>(_ request: HTTPRequest, kind: String, appId: UUID, _ prove: (inout TransactionDraft) async throws -> T) async throws -> T {
        let started = ContinuousClock.now
        var draft = TransactionDraft(appId: appId, kind: kind)
        do {
            return try await prove(&draft)
        } catch let error as APIError {
            draft.outcome = error.code.rawValue
            draft.detail["route"] = request.method + " " + request.routeTemplate
            try await append(draft, for: request, started: started)
            throw error.http(transactionId: draft.id)
        }
    }

    /// Writes `draft` as the call's transaction. Written outside the handler's task: a client that hangs up cancels that
    /// task, and the attempt must still reach the trail (with the call's trace, which a detached task does not inherit).
    /// No audit record, no answer: an unrecorded success would be a hole in the trail (`SERVICE_UNAVAILABLE`).
    private func append(_ draft: TransactionDraft, for request: HTTPRequest, started: ContinuousClock.Instant) async throws {
        var draft = draft
        if var actor = RequestCaller.actor {
            // A client is its device; a registered kiosk's call names the kiosk.
            if actor == "client" { actor = draft.detail["kioskId"].map { "kiosk:" + $0 } ?? draft.deviceId.map { "client:" + $0 } ?? actor }
            draft.detail[TransactionRecord.actorKey] = actor
        }
        let record = TransactionRecord(id: draft.id, appId: draft.appId, kind: draft.kind, outcome: draft.outcome, userId: draft.userId,
                                       deviceId: draft.deviceId, clientIp: clientAddress(request), score: draft.score,
                                       latencyMs: Int((ContinuousClock.now - started).milliseconds.rounded()), detail: draft.detail)
        do {
            let (transactions, trace) = (self.transactions, TraceContext.current)
            // Awaited, but detached from the request's task: a client that goes away (cancelling it) still leaves its row.
            try await Task.detached { try await TraceContext.$current.withValue(trace) { try await transactions.append(record) } }.value
        } catch {
            logger.error("transaction not recorded", ["request.id": request.requestId, "error": "\(error)"])
            throw APIError(.serviceUnavailable, "the audit trail is unavailable; try again")
        }
    }

    /// A failed authentication (`auth.refused`, the code as outcome, the route): on the chain of the app the credential
    /// named when that app exists (`RequestCaller.concerns`: an app server's app id with a wrong secret, a genuinely signed
    /// access token refused afterwards, e.g. for its app's secret rotation), where the app's auditors read it; else on the platform
    /// chain. No credential or user is named, since none was proven. Only the first of an address's period is a row of its
    /// own (`RefusalLedger`); the rest are counted into a summary row on the platform chain, so no one can flood a trail.
    func recordRefusedCredentials(_ request: HTTPRequest, _ error: APIError, app: UUID?) async -> UUID? {
        let (address, route) = (clientAddress(request), request.method + " " + request.routeTemplate)
        guard refusals.isFirst(address: address, code: error.code.rawValue, route: route) else { return nil }
        let record = TransactionRecord(id: UUID(), appId: app ?? platformAppId, kind: "auth.refused", outcome: error.code.rawValue, userId: nil,
                                       deviceId: nil, clientIp: address, score: nil, latencyMs: 0, detail: ["route": route])
        return await appendRefusal(record) ? record.id : nil
    }

    /// The counted refusals of the periods that are over: one `auth.refused` row per address and period, outcome
    /// `REPEATED`, with how many, which codes and which routes.
    func recordRefusalSummaries(all: Bool = false) async {
        for summary in refusals.summaries(all: all) {
            func tally(_ counts: [String: Int]) -> String { counts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ") }
            _ = await appendRefusal(TransactionRecord(
                id: UUID(), appId: platformAppId, kind: "auth.refused", outcome: "REPEATED", userId: nil, deviceId: nil, clientIp: summary.address,
                score: nil, latencyMs: 0, detail: ["count": String(summary.count), "periodStart": ISO8601DateFormatter().string(from: summary.periodStart),
                                                   "codes": tally(summary.codes), "routes": tally(summary.routes)]))
        }
    }

    private func appendRefusal(_ record: TransactionRecord) async -> Bool {
        do {
            try await transactions.append(record)
            return true
        } catch {
            logger.warning("refused authentication not recorded", ["error": "\(error)"])
            return false
        }
    }
}
