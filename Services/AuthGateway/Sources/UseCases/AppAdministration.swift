import Crypto
import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation

/// An operator's work on apps (`POST/PATCH /v1/apps…`, secret rotation), without HTTP: the settings rules (threshold in
/// the face model's units or from a target false-match rate, kiosk approval fitting the model, quotas), the secret and
/// the CTID institution key.
struct AppAdministration: Sendable {
    let apps: any AppStore
    /// The app's templates, which an FPIR is counted over.
    let roster: any UserRoster
    /// The ctid-verifier's public key: the institution key is sealed to it, so the gateway can never open it again.
    let ctidPublicKey: [UInt8]
    /// How long the previous secret keeps working after a rotation.
    let secretGraceSeconds: Int

    /// A new app: its name and face model, and its settings as a PATCH sends them (`Changes`, flat in the same JSON
    /// object), applied to the defaults.
    struct NewApp: Sendable {
        var name: String
        var faceModel: FaceModel?
        var settings = Changes()
    }

    /// A new app whose settings passed the rules, ready to create.
    struct CheckedApp: Sendable {
        var name: String
        var faceModel: FaceModel
        var settings: AppSettings
    }

    /// Shown once: the secret and the institution key are stored only as a hash and sealed.
    struct Created: Codable, Sendable {
        var appId: String
        var name: String
        var appSecret: String
        var ctidKey: String
        var modules: Modules
        var faceModel: FaceModel
        var matchThreshold: Float
        var estimatedFalseMatchRate: Double?
        var liveness: LivenessPolicy
        var deviceBinding: DeviceBinding
        var deviceBindingPolicy: DeviceBindingPolicy
        var kioskApproval: KioskApprovalPolicy
        var quotas: Quotas
        var keepEnrollmentPhotos: Bool
    }

    /// Settings as an operator sends them, at creation or in a PATCH: each one absent keeps the one it is applied to.
    struct Changes: Decodable, Sendable {
        var modules: ModulesPatch?
        var matchThreshold: Float?
        var falseMatchRate: Double?
        /// Instead of either: the chance that someone not enrolled is identified as someone, over `forGallerySize`
        /// templates (`AppAdministration.threshold`).
        var falsePositiveIdentificationRate: Double?
        var forGallerySize: Int?
        var liveness: LivenessPolicy?
        var deviceBinding: DeviceBinding?
        var deviceBindingPolicy: DeviceBindingPolicy?
        var kioskApproval: KioskApprovalPolicy?
        var quotas: Quotas?
        /// Turning it off keeps the photos already kept; they go with their templates.
        var keepEnrollmentPhotos: Bool?

        /// `base` with these changes, under the rules every app's settings pass: the threshold in the units of `model`
        /// (or from a target false-match rate), a kiosk approval that fits the model, quotas not negative.
        func applied(to base: AppSettings, model: FaceModel, gallery: Int) throws -> AppSettings {
            let threshold = try AppAdministration.threshold(self, model: model, gallery: gallery, otherwise: base.matchThreshold)
            let approval = kioskApproval ?? base.kioskApproval
            if let problem = approval.validationError(model: model) { throw APIError(.invalidRequest, problem) }
            let quotas = quotas ?? base.quotas
            guard quotas.dailyCalls >= 0, quotas.gallerySize >= 0 else { throw APIError(.invalidRequest, "quotas must not be negative") }
            return AppSettings(modules: (modules ?? ModulesPatch()).applied(to: base.modules), matchThreshold: threshold,
                               liveness: liveness ?? base.liveness, deviceBinding: deviceBinding ?? base.deviceBinding,
                               deviceBindingPolicy: deviceBindingPolicy ?? base.deviceBindingPolicy, kioskApproval: approval, quotas: quotas,
                               keepEnrollmentPhotos: keepEnrollmentPhotos ?? base.keepEnrollmentPhotos)
        }
    }

    struct Rotated: Codable, Sendable, Equatable {
        var appId: String
        var appSecret: String
        var previousSecretValidForSeconds: Int
    }

    /// The rules a new app's settings must pass; nothing is stored. New apps identify devices by their keys and bind a
    /// new key only with the app server's ticket, unless told otherwise.
    func check(_ new: NewApp) throws -> CheckedApp {
        let name = new.name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...200).contains(name.count) else { throw APIError(.invalidRequest, "name must be 1–200 characters") }
        let faceModel = new.faceModel ?? FaceModel.defaultForNewApps
        let defaults = AppSettings(modules: .initial, matchThreshold: faceModel.defaultThreshold, liveness: .initial, deviceBinding: .dpop,
                                   deviceBindingPolicy: .appServerTicket, kioskApproval: KioskApprovalPolicy(), quotas: .initial,
                                   keepEnrollmentPhotos: false)
        return CheckedApp(name: name, faceModel: faceModel, settings: try new.settings.applied(to: defaults, model: faceModel, gallery: 0))
    }

    func create(_ app: CheckedApp, draft: inout TransactionDraft) async throws -> Created {
        let appId = UUID()
        let secret = newSecret(prefix: "fgs_")
        let ctidKey = SecureRandom.bytes(16)
        let settings = app.settings
        try await apps.create(appId, name: app.name, secretHash: SHA256.hash(Array(secret.utf8)),
                              ctidKeySealed: try CTIDKeyBox.seal(ctidKey, appId: appId, to: ctidPublicKey), faceModel: app.faceModel,
                              settings: settings)
        draft.detail = ["appId": appId.wire, "keepEnrollmentPhotos": String(settings.keepEnrollmentPhotos)]
        return Created(appId: appId.wire, name: app.name, appSecret: secret, ctidKey: Data(ctidKey).base64EncodedString(),
                       modules: settings.modules, faceModel: app.faceModel, matchThreshold: settings.matchThreshold,
                       estimatedFalseMatchRate: app.faceModel.falseMatchRate(atThreshold: settings.matchThreshold),
                       liveness: settings.liveness, deviceBinding: settings.deviceBinding, deviceBindingPolicy: settings.deviceBindingPolicy,
                       kioskApproval: settings.kioskApproval, quotas: settings.quotas, keepEnrollmentPhotos: settings.keepEnrollmentPhotos)
    }

    /// Applies the changes that are present, under the same rules as a new app's; answers the app as stored.
    func update(_ app: AppRecord, with changes: Changes, draft: inout TransactionDraft) async throws -> AppRecord {
        let settings = try changes.applied(to: app.settings, model: app.faceModel,
                                           gallery: try await roster.templateCount(appId: app.id, model: app.faceModel))
        try await apps.update(app.id, settings: settings)
        let change = try Self.difference(from: app.settings, to: settings)
        if !change.isEmpty { draft.detail[TransactionRecord.changeKey] = String(decoding: try FaceGateJSON.encode(change), as: UTF8.self) }
        // The threshold's change is in `change`; what it was asked as, here.
        if let rate = changes.falseMatchRate { draft.detail["falseMatchRate"] = String(rate) }
        if let rate = changes.falsePositiveIdentificationRate {
            draft.detail["falsePositiveIdentificationRate"] = String(rate)
            draft.detail["forGallerySize"] = changes.forGallerySize.map(String.init) ?? "default"
        }
        guard let updated = try await apps.find(app.id) else { throw APIError(.notFound, "no such app") }
        return updated
    }

    /// The app as operators see it, with its gallery's size and the FPIR its threshold stands for at that size.
    func view(_ app: AppRecord) async throws -> AppRecord.Public {
        app.publicView(gallery: try await roster.templateCount(appId: app.id, model: app.faceModel))
    }

    /// The settings that differ, as `{"name": [old, new]}` (modules one by one): the audit row of an update says what
    /// changed, and an update that changed nothing has no change.
    static func difference(from old: AppSettings, to new: AppSettings) throws -> [String: [JSONValue]] {
        func pair<T: Encodable & Equatable>(_ name: String, _ old: T, _ new: T) throws -> (String, [JSONValue])? {
            old == new ? nil : (name, [try JSONValue(encoding: old), try JSONValue(encoding: new)])
        }
        var fields = try Module.allCases.map { try pair("modules.\($0.rawValue)", old.modules[$0], new.modules[$0]) }
        fields += [
            try pair("matchThreshold", old.matchThreshold, new.matchThreshold),
            try pair("liveness", old.liveness, new.liveness),
            try pair("deviceBinding", old.deviceBinding, new.deviceBinding),
            try pair("deviceBindingPolicy", old.deviceBindingPolicy, new.deviceBindingPolicy),
            try pair("kioskApproval", old.kioskApproval, new.kioskApproval),
            try pair("quotas", old.quotas, new.quotas),
            try pair("keepEnrollmentPhotos", old.keepEnrollmentPhotos, new.keepEnrollmentPhotos),
        ]
        return Dictionary(uniqueKeysWithValues: fields.compactMap { $0 })
    }

    /// A new secret now. The old one keeps working for `previousSecretValidFor` seconds (0–86,400; default
    /// `FACEGATE_SECRET_GRACE_SECONDS`, 3,600) so app servers can roll over, but only to mint access tokens and exchange
    /// identity tokens; 0 cuts it off at once. Access tokens issued before now are dead, and those it mints during the
    /// grace die with it.
    func rotateSecret(of app: AppRecord, previousSecretValidFor: Int?, draft: inout TransactionDraft) async throws -> Rotated {
        if let asked = previousSecretValidFor, !(0...86400).contains(asked) {
            throw APIError(.invalidRequest, "previousSecretValidFor must be 0–86400 seconds")
        }
        let grace = previousSecretValidFor ?? secretGraceSeconds
        let secret = newSecret(prefix: "fgs_")
        try await apps.rotateSecret(app.id, to: SHA256.hash(Array(secret.utf8)), graceSeconds: grace)
        draft.detail = ["previousSecretValidFor": String(grace)]
        return Rotated(appId: app.id.wire, appSecret: secret, previousSecretValidForSeconds: grace)
    }

    /// Ends the previous secret's grace now, and with it the access tokens it minted.
    func revokePreviousSecret(of app: AppRecord, draft: inout TransactionDraft) async throws {
        let ended = try await apps.revokePreviousSecret(app.id)
        draft.detail = ["previousSecretWasLive": String(ended)]
    }

    /// A threshold is in the units of the app's face model: Euclidean distance (for SFace, whose vectors have
    /// unit length, 1 − d²/2 is the cosine similarity).
    /// The app's threshold: a raw one in the model's units, the one the model's calibration gives a target false-match
    /// rate, or one for a target false-positive identification rate over a gallery (`forGallerySize` templates, else the
    /// larger of the app's `gallery` now and 1,000); `otherwise` when none is sent.
    static func threshold(_ changes: Changes, model: FaceModel, gallery: Int, otherwise: Float) throws -> Float {
        let targets = [changes.matchThreshold != nil, changes.falseMatchRate != nil, changes.falsePositiveIdentificationRate != nil]
        guard targets.filter({ $0 }).count <= 1 else {
            throw APIError(.invalidRequest, "send one of matchThreshold, falseMatchRate and falsePositiveIdentificationRate")
        }
        if let size = changes.forGallerySize {
            guard changes.falsePositiveIdentificationRate != nil else {
                throw APIError(.invalidRequest, "forGallerySize goes with falsePositiveIdentificationRate")
            }
            guard (1...100_000_000).contains(size) else { throw APIError(.invalidRequest, "forGallerySize must be 1–100,000,000 templates") }
        }
        if let rate = changes.falsePositiveIdentificationRate {
            let size = changes.forGallerySize ?? max(gallery, 1000)
            let calibrated = model.falseMatchCalibration
            let (lowest, highest) = (calibrated.last!.rate, calibrated[0].rate)
            guard rate > 0, rate < 1,
                  let threshold = model.threshold(forFalseMatchRate: FaceModel.falseMatchRate(forFalsePositiveIdentificationRate: rate, comparisons: size)) else {
                let range = [lowest, highest].map { FaceModel.falsePositiveIdentificationRate(falseMatchRate: $0, comparisons: size) }
                throw APIError(.invalidRequest, "over \(size) templates, falsePositiveIdentificationRate must be between "
                               + "\(range[0].formatted(.number.precision(.significantDigits(2)))) and \(range[1].formatted(.number.precision(.significantDigits(2)))) "
                               + "(the \(model.rawValue) calibration covers false-match rates of 1e-8 to 1e-3 per comparison)")
            }
            return threshold
        }
        return try threshold(changes.matchThreshold, falseMatchRate: changes.falseMatchRate, model: model, otherwise: otherwise)
    }

    /// A threshold in the model's units, or (in its place) from a target false-match rate; `otherwise` when neither is sent.
    static func threshold(_ raw: Float?, falseMatchRate: Double?, model: FaceModel, otherwise: Float) throws -> Float {
        if let falseMatchRate {
            guard let threshold = model.threshold(forFalseMatchRate: falseMatchRate) else {
                throw APIError(.invalidRequest, "falseMatchRate must be between 1e-8 and 1e-3 (a per-comparison rate, e.g. 1e-5 for 1 in 100,000)")
            }
            return threshold
        }
        let threshold = raw ?? otherwise
        let range = model.thresholdRange
        guard range.contains(threshold) else {
            throw APIError(.invalidRequest, "matchThreshold must be between \(range.lowerBound) and \(range.upperBound) for \(model.rawValue) "
                           + "(Euclidean distance between its vectors; \(model.defaultThreshold) by default)")
        }
        return threshold
    }
}

extension AppAdministration.NewApp: Decodable {
    private enum Keys: String, CodingKey { case name, faceModel }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        name = try container.decode(String.self, forKey: .name)
        faceModel = try container.decodeIfPresent(FaceModel.self, forKey: .faceModel)
        settings = try AppAdministration.Changes(from: decoder)
    }
}
