import FaceGateCore
import Foundation

/// Face comparisons without a login, without HTTP: 1:1 "is this photo user X?" (`/v1/face-verify`, Rekognition
/// CompareFaces / Azure Verify) and 1:N search of an app (`/v1/apps/{appId}/faces/search`, Rekognition
/// SearchFacesByImage). Both are throttled and counted against the face-login module like a login; the routes
/// authenticate, prove a client's device and record the transaction.
struct FaceComparison: Sendable {
    let admission: any ModuleAdmission
    let attempts: AttemptGuard
    let users: any UserDirectory
    let matcher: any FaceMatching

    /// Who asks for a verification: the app server (HTTP Basic), or a client app on a device at an address.
    enum Verifier: Sendable {
        case appServer
        case client(device: String, address: String)
    }

    /// The user a verification names, as sent (`userId` wins when both are given).
    struct Claim: Sendable {
        var userId: String?
        var employeeNumber: String?
    }

    struct Verdict: Sendable, Equatable {
        var match: Bool
        /// The user compared with; nil for a user not in the app (a client is not told, an app server gets 404).
        var userId: UUID?
        /// The best distance found, in the model's units (for the app server and the trail only).
        var distance: Float?
    }

    /// A client learns only yes or no: a score would let an attacker tune a face, and an unknown user gets the same
    /// `false` as a stranger's face (the probe is still compared, with nobody, so the time tells nothing either). The
    /// app server gets 404 for an unknown user. Charged like a binding attempt to the claimed user (shared with
    /// face-login confirmations, so the two cannot be alternated for more tries), and for clients to the device and
    /// the address. `image` and `claim` are read after the module is admitted.
    func verify(app: AppRecord, by verifier: Verifier, image: () throws -> Data, claim: () throws -> Claim,
                draft: inout TransactionDraft) async throws -> Verdict {
        var subjects: [AttemptGuard.Subject] = []
        if case .client(let device, let address) = verifier { subjects = [.device(device), .clientAddress(address)] }
        try await admission.admit(app, module: .faceLogin)
        let image = try image()
        let claimed = try await user(named: try claim(), app: app)
        draft.userId = claimed
        if let claimed { subjects.insert(.bindingUser(claimed), at: 0) }
        if case .appServer = verifier, claimed == nil { throw APIError(.notFound, "no such user in this app") }
        return try await attempts.attempt(appId: app.id, subjects) {
            // An unknown user is compared with nobody: a fresh id holds no template.
            let result = try await matcher.match(FaceJob(appId: app.id, threshold: app.matchThreshold,
                                                         .verify(image: image, against: .user(claimed ?? UUID()))))
            guard result.outcome == .match || result.outcome == .noMatchFace else { throw APIError(refusing: result) }
            let match = result.outcome == .match && claimed != nil
            draft.score = result.candidates.first?.distance
            if !match { draft.outcome = ErrorCode.noMatchFace.rawValue }
            return (Verdict(match: match, userId: claimed, distance: result.candidates.first?.distance), match ? .success : .failure)
        }
    }

    /// The user `claim` names in the app, nil when there is none.
    private func user(named claim: Claim, app: AppRecord) async throws -> UUID? {
        if let text = claim.userId {
            guard let userId = UUID(uuidString: text.trimmingCharacters(in: .whitespaces)) else {
                throw APIError(.invalidRequest, "userId must be a UUID")
            }
            return try await users.exists(userId, appId: app.id) ? userId : nil
        }
        guard let number = claim.employeeNumber?.trimmingCharacters(in: .whitespaces), !number.isEmpty else {
            throw APIError(.invalidRequest, "name the user to compare with: userId or employeeNumber (a multipart field or a query parameter)")
        }
        guard number.utf8.count <= 64 else { return nil }
        return try await users.user(appId: app.id, employeeNumber: number)
    }

    struct Hit: Sendable, Equatable {
        var userId: UUID
        var employeeNumber: String
        var distance: Float
    }

    struct Search: Sendable, Equatable {
        var outcome: FaceOutcome
        var match: Hit?
        /// Best first, one per user: up to `limit` for an operator, only the best for the app server.
        var candidates: [Hit]
    }

    /// 1:N search at the app's operating point, the same decision as face login (threshold, ambiguity margin).
    /// Charged to the client address like a login (a stranger's face is a failed attempt, so a flood of probes waits).
    /// `limit` is 1–20 (the route checks it before anything is recorded); `image` is read after the module is admitted.
    func search(app: AppRecord, forAppServer: Bool, clientAddress: String, limit: Int, image: () throws -> Data,
                draft: inout TransactionDraft) async throws -> Search {
        try await admission.admit(app, module: .faceLogin)
        let image = try image()
        return try await attempts.attempt(appId: app.id, [.clientAddress(clientAddress)]) {
            let result = try await matcher.match(FaceJob(appId: app.id, threshold: app.matchThreshold,
                                                         .identify(image: image, topK: max(limit * 3, 10))))
            guard [.match, .noMatchFace, .ambiguousMatch].contains(result.outcome) else { throw APIError(refusing: result) }
            var bestPerUser: [FaceCandidate] = []
            for candidate in result.candidates.sorted(by: { $0.distance < $1.distance })
            where !bestPerUser.contains(where: { $0.userId == candidate.userId }) {
                bestPerUser.append(candidate)
            }
            let shown = Array(bestPerUser.prefix(forAppServer ? 1 : limit))
            let numbers = try await users.employeeNumbers(of: shown.map(\.userId), appId: app.id)
            let hits = shown.compactMap { candidate in
                numbers[candidate.userId].map { Hit(userId: candidate.userId, employeeNumber: $0, distance: candidate.distance) }
            }
            let match = result.outcome == .match ? hits.first : nil
            draft.userId = match?.userId
            draft.score = bestPerUser.first?.distance
            if result.outcome != .match { draft.outcome = result.outcome.rawValue }
            return (Search(outcome: result.outcome, match: match, candidates: hits), result.outcome == .match ? .success : .failure)
        }
    }
}
