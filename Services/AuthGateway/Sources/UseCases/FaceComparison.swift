import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation

/// Face comparisons without a login, without HTTP: 1:1 "is this photo user X?" (`/v1/face-verify`, Rekognition
/// CompareFaces / Azure Verify) and 1:N search of an app (`/v1/apps/{appId}/faces/search`, Rekognition
/// SearchFacesByImage). Both count against the face-login module; the routes authenticate, limit server callers per
/// credential, prove a client's device and record the transaction.
struct FaceComparison: Sendable {
    let admission: any ModuleAdmission
    let attempts: AttemptGuard
    let users: any UserDirectory
    let bindings: any DeviceBindingStore
    let matcher: any FaceMatching

    /// Who asks for a verification: the app server (HTTP Basic), or a client app on a device at an address.
    enum Verifier: Sendable {
        case appServer
        case client(device: ClientDevice, address: String)
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

    /// A client learns only yes or no, and only about users its device is bound to (`TrustPolicy`'s `clientFaceVerify`):
    /// anyone else — an unknown number, another person's, a stranger's face — gets the same `false`, the probe compared
    /// with nobody, so neither the answer nor its time confirms a number. A client re-verifying its own user is charged
    /// like a binding attempt of that user; every client try costs the device and the address. The app server gets 404
    /// for an unknown user and is charged to the claimed user (shared with face-login confirmations, so the two cannot be
    /// alternated for more tries). `image` and `claim` are read after the module is admitted.
    func verify(app: AppRecord, by verifier: Verifier, image: () throws -> Data, claim: () throws -> Claim,
                draft: inout TransactionDraft) async throws -> Verdict {
        try await admission.admit(app, module: .faceLogin)
        let image = try image()
        let named = try await user(named: try claim(), app: app)
        draft.userId = named
        var compared = named
        var subjects: [AttemptGuard.Subject] = []
        switch verifier {
        case .appServer:
            guard let named else { throw APIError(.notFound, "no such user in this app") }
            subjects = [.bindingUser(named)]
        case .client(let device, let address):
            // Read whether or not the user exists, so the time says nothing about it either.
            let bound = try await bindings.boundUsers(appId: app.id, device: device)
            if let named, !bound.contains(named) {
                compared = nil
                draft.detail["compared"] = "nobody: the device is not bound to the user"
            }
            subjects = [.device(device.id)] + (compared.map { [AttemptGuard.Subject.bindingUser($0)] } ?? []) + [.clientAddress(address)]
        }
        return try await attempts.attempt(appId: app.id, subjects) {
            // Nobody is a fresh id, which holds no template.
            let result = try await matcher.match(FaceJob(appId: app.id, threshold: app.matchThreshold,
                                                         .verify(image: image, against: .user(compared ?? UUID()))))
            guard result.outcome == .match || result.outcome == .noMatchFace else { throw APIError(refusing: result) }
            let match = result.outcome == .match && compared != nil
            draft.score = result.candidates.first?.distance
            if !match { draft.outcome = ErrorCode.noMatchFace.rawValue }
            return (Verdict(match: match, userId: named, distance: result.candidates.first?.distance), match ? .success : .failure)
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

    /// 1:N search at the app's operating point, the same decision as face login (threshold, ambiguity margin). Only
    /// server callers search, limited per credential by the route: a search that finds no one is an answer, never a
    /// failed attempt (an app server behind one address must not be throttled by its users' strangers).
    /// `limit` is 1–20 (the route checks it before anything is recorded); `image` is read after the module is admitted.
    func search(app: AppRecord, forAppServer: Bool, limit: Int, image: () throws -> Data, draft: inout TransactionDraft) async throws -> Search {
        try await admission.admit(app, module: .faceLogin)
        let image = try image()
        // An operator's search takes a photo's clear subject among several faces; an app server's, like a login, only the
        // largest face, and no near tie (SubjectSelection).
        let result = try await matcher.match(FaceJob(appId: app.id, threshold: app.matchThreshold, lenientSubject: !forAppServer,
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
        return Search(outcome: result.outcome, match: match, candidates: hits)
    }
}
