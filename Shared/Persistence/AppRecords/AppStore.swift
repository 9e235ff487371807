import FaceGateCore
import Foundation
import PostgresClient

package enum ModuleState: String, Codable, Sendable, CaseIterable { case disabled, trial, formal }
package enum LivenessMode: String, Codable, Sendable, CaseIterable { case off, active }

package struct Modules: Codable, Sendable, Equatable {
    package var faceLogin: ModuleState
    package var ctid: ModuleState
    package var kiosk: ModuleState
    package var deviceAuth: ModuleState

    /// New apps start on trial, but for kiosks, which stay off until an operator has registered one and turned them on;
    /// an operator promotes modules to formal.
    package static let initial = Modules(faceLogin: .trial, ctid: .trial, kiosk: .disabled, deviceAuth: .trial)

    package subscript(module: Module) -> ModuleState {
        switch module {
        case .faceLogin: faceLogin
        case .ctid: ctid
        case .kiosk: kiosk
        case .deviceAuth: deviceAuth
        }
    }
}

package enum Module: String, Sendable, CaseIterable { case faceLogin, ctid, kiosk, deviceAuth }

package struct ModulesPatch: Codable, Sendable {
    package var faceLogin: ModuleState?
    package var ctid: ModuleState?
    package var kiosk: ModuleState?
    package var deviceAuth: ModuleState?

    package init(faceLogin: ModuleState? = nil, ctid: ModuleState? = nil, kiosk: ModuleState? = nil, deviceAuth: ModuleState? = nil) {
        self.faceLogin = faceLogin
        self.ctid = ctid
        self.kiosk = kiosk
        self.deviceAuth = deviceAuth
    }

    package func applied(to modules: Modules) -> Modules {
        Modules(faceLogin: faceLogin ?? modules.faceLogin, ctid: ctid ?? modules.ctid,
                kiosk: kiosk ?? modules.kiosk, deviceAuth: deviceAuth ?? modules.deviceAuth)
    }
}

extension ModulesPatch {
    private enum CodingKeys: String, CodingKey, CaseIterable { case faceLogin, ctid, kiosk, deviceAuth }
    private struct AnyKey: CodingKey {
        package var stringValue: String
        package var intValue: Int? { nil }
        package init(stringValue: String) { self.stringValue = stringValue }
        package init?(intValue: Int) { nil }
    }

    /// A misspelt module (`faceLogn`) is refused, never ignored: ignoring it would change nothing and still answer 200.
    package init(from decoder: any Decoder) throws {
        for key in try decoder.container(keyedBy: AnyKey.self).allKeys where CodingKeys(rawValue: key.stringValue) == nil {
            let names = CodingKeys.allCases.map(\.rawValue).joined(separator: ", ")
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath + [key], debugDescription: "no such module; the modules are \(names)"))
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        faceLogin = try container.decodeIfPresent(ModuleState.self, forKey: .faceLogin)
        ctid = try container.decodeIfPresent(ModuleState.self, forKey: .ctid)
        kiosk = try container.decodeIfPresent(ModuleState.self, forKey: .kiosk)
        deviceAuth = try container.decodeIfPresent(ModuleState.self, forKey: .deviceAuth)
    }
}

/// How a client device is identified. `dpop`: by the RFC 7638 thumbprint of the P-256 key that signs its
/// requests (RFC 9449); `header`: by the `X-Device-Id` the caller chooses — the original SDK's behaviour,
/// which anyone holding a device id can claim.
package enum DeviceBinding: String, Codable, Sendable, CaseIterable { case dpop, header }

/// What binds a new device key to a user after a face match: the employee number alone (weakest: it is
/// printed on badges), a one-time ticket from the app server, or an already-bound device of the user.
package enum DeviceBindingPolicy: String, Codable, Sendable, CaseIterable { case employeeNumber, appServerTicket, boundDevice }

package struct LivenessPolicy: Codable, Sendable, Equatable {
    package var faceLogin: LivenessMode
    package var kiosk: LivenessMode

    package init(faceLogin: LivenessMode, kiosk: LivenessMode) {
        self.faceLogin = faceLogin
        self.kiosk = kiosk
    }
    package static let initial = LivenessPolicy(faceLogin: .off, kiosk: .active)
}

/// Limits of the trial state; beyond them trial calls answer `MODULE_NOT_FORMAL`.
package struct Quotas: Codable, Sendable, Equatable {
    package var dailyCalls: Int
    package var gallerySize: Int

    package init(dailyCalls: Int, gallerySize: Int) {
        self.dailyCalls = dailyCalls
        self.gallerySize = gallerySize
    }
    package static let initial = Quotas(dailyCalls: 1000, gallerySize: 100)
}

package struct AppRecord: Sendable {
    package var id: UUID
    package var name: String
    package var secretHash: [UInt8]
    package var previousSecretHash: [UInt8]?
    package var previousSecretValidUntil: Date?
    /// Access tokens issued before this are dead: a rotation is how a leaked secret is shut out.
    package var secretRotatedAt: Date?
    package var modules: Modules
    package var faceModel: FaceModel
    /// In the face model's units.
    package var matchThreshold: Float
    package var liveness: LivenessPolicy
    package var deviceBinding: DeviceBinding
    package var deviceBindingPolicy: DeviceBindingPolicy
    package var kioskApproval: KioskApprovalPolicy
    package var quotas: Quotas
    /// Whether enrollment photos whose subject consented are kept, sealed, for a later move to another face model.
    package var keepEnrollmentPhotos: Bool
    package var createdAt: Date

    package init(id: UUID, name: String, secretHash: [UInt8], previousSecretHash: [UInt8]? = nil, previousSecretValidUntil: Date? = nil, secretRotatedAt: Date? = nil, modules: Modules, faceModel: FaceModel, matchThreshold: Float, liveness: LivenessPolicy, deviceBinding: DeviceBinding, deviceBindingPolicy: DeviceBindingPolicy, kioskApproval: KioskApprovalPolicy, quotas: Quotas, keepEnrollmentPhotos: Bool, createdAt: Date) {
        self.id = id
        self.name = name
        self.secretHash = secretHash
        self.previousSecretHash = previousSecretHash
        self.previousSecretValidUntil = previousSecretValidUntil
        self.secretRotatedAt = secretRotatedAt
        self.modules = modules
        self.faceModel = faceModel
        self.matchThreshold = matchThreshold
        self.liveness = liveness
        self.deviceBinding = deviceBinding
        self.deviceBindingPolicy = deviceBindingPolicy
        self.kioskApproval = kioskApproval
        self.quotas = quotas
        self.keepEnrollmentPhotos = keepEnrollmentPhotos
        self.createdAt = createdAt
    }

    /// The previous secret is inside its grace (neither expired nor revoked).
    package var previousSecretIsLive: Bool { previousSecretHash != nil && (previousSecretValidUntil ?? .distantPast) > Date() }

    /// The app as operators see it: never a secret.
    package struct Public: Codable, Sendable {
        package var appId: String
        package var name: String
        package var modules: Modules
        package var faceModel: FaceModel
        package var matchThreshold: Float
        /// The per-comparison false-match rate the threshold stands for by the model's calibration (absent beyond it).
        package var estimatedFalseMatchRate: Double?
        /// The app's templates of its model (one app's read, not the list).
        package var galleryTemplates: Int?
        /// The chance that someone not enrolled is identified as someone over those templates (`estimatedFalseMatchRate`
        /// compounded, `FaceModel.falsePositiveIdentificationRate`).
        package var estimatedFalsePositiveIdentificationRate: Double?
        package var liveness: LivenessPolicy
        package var deviceBinding: DeviceBinding
        package var deviceBindingPolicy: DeviceBindingPolicy
        package var kioskApproval: KioskApprovalPolicy
        package var quotas: Quotas
        package var keepEnrollmentPhotos: Bool
        package var createdAt: Date
    }

    package var publicView: Public { publicView(gallery: nil) }

    /// With `gallery`, the app's templates: how many, and the FPIR the threshold stands for over them.
    package func publicView(gallery: Int?) -> Public {
        let falseMatchRate = faceModel.falseMatchRate(atThreshold: matchThreshold)
        return Public(appId: id.wire, name: name, modules: modules, faceModel: faceModel, matchThreshold: matchThreshold,
                      estimatedFalseMatchRate: falseMatchRate, galleryTemplates: gallery,
                      estimatedFalsePositiveIdentificationRate: gallery.flatMap { size in
                          falseMatchRate.map { FaceModel.falsePositiveIdentificationRate(falseMatchRate: $0, comparisons: size) }
                      },
                      liveness: liveness, deviceBinding: deviceBinding, deviceBindingPolicy: deviceBindingPolicy, kioskApproval: kioskApproval,
                      quotas: quotas, keepEnrollmentPhotos: keepEnrollmentPhotos, createdAt: createdAt)
    }

    /// The settings an operator may change.
    package var settings: AppSettings {
        AppSettings(modules: modules, matchThreshold: matchThreshold, liveness: liveness, deviceBinding: deviceBinding,
                    deviceBindingPolicy: deviceBindingPolicy, kioskApproval: kioskApproval, quotas: quotas, keepEnrollmentPhotos: keepEnrollmentPhotos)
    }
}

/// The settings an operator gives an app (`POST /v1/apps`, `PATCH /v1/apps/{appId}`).
package struct AppSettings: Sendable {
    package var modules: Modules
    package var matchThreshold: Float
    package var liveness: LivenessPolicy
    package var deviceBinding: DeviceBinding
    package var deviceBindingPolicy: DeviceBindingPolicy
    package var kioskApproval: KioskApprovalPolicy
    package var quotas: Quotas
    package var keepEnrollmentPhotos: Bool

    package init(modules: Modules, matchThreshold: Float, liveness: LivenessPolicy, deviceBinding: DeviceBinding, deviceBindingPolicy: DeviceBindingPolicy, kioskApproval: KioskApprovalPolicy, quotas: Quotas, keepEnrollmentPhotos: Bool) {
        self.modules = modules
        self.matchThreshold = matchThreshold
        self.liveness = liveness
        self.deviceBinding = deviceBinding
        self.deviceBindingPolicy = deviceBindingPolicy
        self.kioskApproval = kioskApproval
        self.quotas = quotas
        self.keepEnrollmentPhotos = keepEnrollmentPhotos
    }
}

/// The module gate of a client call (`AppStore.admit`).
package protocol ModuleAdmission: Sendable {
    func admit(_ app: AppRecord, module: Module) async throws
    /// `admit` as a step to send with other statements: `MODULE_DISABLED` is thrown at once, before anything is counted;
    /// the step counts the call and answers `MODULE_NOT_FORMAL` once a trial's calls of the day are spent, nil otherwise.
    func admission(_ app: AppRecord, module: Module) throws -> PostgresStep<APIError?>
}

extension ModuleAdmission {
    package func admission(_ app: AppRecord, module: Module) throws -> PostgresStep<APIError?> {
        .computed {
            do {
                try await admit(app, module: module)
                return nil
            } catch let refusal as APIError where refusal.code == .moduleNotFormal {
                return refusal
            }
        }
    }
}

extension AppRecord {
    /// `MODULE_DISABLED` when `module` is off for this app.
    package func ensureEnabled(_ module: Module) throws {
        if modules[module] == .disabled { throw APIError(.moduleDisabled, "the \(module.rawValue) module is disabled for this app") }
    }

    /// `MODULE_NOT_FORMAL` when `module` is a trial and `calls` today exceed its quota.
    package func quotaRefusal(_ module: Module, calls: Int) -> APIError? {
        guard modules[module] == .trial, calls > quotas.dailyCalls else { return nil }
        return APIError(.moduleNotFormal, "the \(module.rawValue) trial allows \(quotas.dailyCalls) calls a day; ask for the formal module")
    }
}

/// App rows (`apps`) and their daily usage (`usage_counters`); every tenant-owned query elsewhere is scoped by the app id
/// this returns. `admit` is the module gate of a client call: disabled → `MODULE_DISABLED`; trial beyond its daily
/// quota → `MODULE_NOT_FORMAL`; it counts the call.
package protocol AppStore: ModuleAdmission {
    /// `ctidKeySealed`: the institution key, sealed to the ctid-verifier (the gateway never opens it again).
    func create(_ id: UUID, name: String, secretHash: [UInt8], ctidKeySealed: [UInt8], faceModel: FaceModel, settings: AppSettings) async throws
    func update(_ id: UUID, settings: AppSettings) async throws
    /// A new secret; the previous one keeps working for `graceSeconds`, and access tokens issued before now are dead.
    func rotateSecret(_ id: UUID, to secretHash: [UInt8], graceSeconds: Int) async throws
    /// Ends the previous secret's grace now; false when it had none left.
    func revokePreviousSecret(_ id: UUID) async throws -> Bool
    /// Moves the app to `model` with `threshold`, if it is still on `from`; false when it changed meanwhile.
    func switchModel(_ id: UUID, from: FaceModel, to model: FaceModel, threshold: Float) async throws -> Bool
    /// The apps `covered` lets through, oldest first (of the first 1,000).
    func all(covered: (UUID) -> Bool) async throws -> [AppRecord]
    func find(_ id: UUID) async throws -> AppRecord?
    /// Erases the app and everything that hangs on it: users, templates and kept photos, devices, kiosks and their sessions,
    /// device credentials, CTID serials and registry, counters, challenges, spent token ids and gallery tombstones. Its audit
    /// trail stays. Answers how many users went and a delete change for each template (what every matcher must drop); nil:
    /// no such app.
    func delete(_ id: UUID) async throws -> (users: Int, templates: [GalleryChange])?
}

package struct PostgresApps: AppStore {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    package func create(_ id: UUID, name: String, secretHash: [UInt8], ctidKeySealed: [UInt8], faceModel: FaceModel, settings: AppSettings) async throws {
        _ = try await database.query("""
            INSERT INTO apps (id, name, secret_hash, ctid_key_sealed, modules, face_model, match_threshold, liveness, device_binding,
                              device_binding_policy, kiosk_approval, quotas, keep_enrollment_photos)
            VALUES (\(id), \(name), \(secretHash), \(ctidKeySealed), \(settings.modules.jsonText)::jsonb, \(faceModel.rawValue),
                    \(Double(settings.matchThreshold)), \(settings.liveness.jsonText)::jsonb, \(settings.deviceBinding.rawValue),
                    \(settings.deviceBindingPolicy.rawValue), \(settings.kioskApproval.jsonText)::jsonb, \(settings.quotas.jsonText)::jsonb,
                    \(settings.keepEnrollmentPhotos))
            """)
    }

    package func update(_ id: UUID, settings: AppSettings) async throws {
        _ = try await database.query("""
            UPDATE apps SET modules = \(settings.modules.jsonText)::jsonb, match_threshold = \(Double(settings.matchThreshold)),
                   liveness = \(settings.liveness.jsonText)::jsonb, device_binding = \(settings.deviceBinding.rawValue),
                   device_binding_policy = \(settings.deviceBindingPolicy.rawValue), kiosk_approval = \(settings.kioskApproval.jsonText)::jsonb,
                   quotas = \(settings.quotas.jsonText)::jsonb, keep_enrollment_photos = \(settings.keepEnrollmentPhotos), updated_at = now()
            WHERE id = \(id)
            """)
    }

    package func rotateSecret(_ id: UUID, to secretHash: [UInt8], graceSeconds: Int) async throws {
        _ = try await database.query("""
            UPDATE apps SET previous_secret_hash = secret_hash,
                   previous_secret_valid_until = now() + make_interval(secs => \(graceSeconds)),
                   secret_hash = \(secretHash), secret_rotated_at = now(), updated_at = now()
            WHERE id = \(id)
            """)
    }

    package func revokePreviousSecret(_ id: UUID) async throws -> Bool {
        try await database.query("""
            UPDATE apps SET previous_secret_valid_until = now(), updated_at = now()
            WHERE id = \(id) AND previous_secret_valid_until > now()
            """).affectedRows == 1
    }

    package func switchModel(_ id: UUID, from: FaceModel, to model: FaceModel, threshold: Float) async throws -> Bool {
        try await database.query("""
            UPDATE apps SET face_model = \(model.rawValue), match_threshold = \(Double(threshold)), updated_at = now()
            WHERE id = \(id) AND face_model = \(from.rawValue)
            """).affectedRows == 1
    }

    package func all(covered: (UUID) -> Bool) async throws -> [AppRecord] {
        var apps: [AppRecord] = []
        for row in try await database.query("SELECT id FROM apps ORDER BY created_at, id LIMIT 1000") {
            let id: UUID = try row.decode("id")
            if covered(id), let app = try await find(id) { apps.append(app) }
        }
        return apps
    }

    package func delete(_ id: UUID) async throws -> (users: Int, templates: [GalleryChange])? {
        try await database.withTransaction { connection in
            let users: Int = try await connection.query("SELECT count(*) AS n FROM users WHERE app_id = \(id)").first?.decode("n") ?? 0
            let templates = try await connection.query("SELECT id, user_id, change_seq FROM face_templates WHERE app_id = \(id)")
            // The one table that names an app without a foreign key; every other one follows `apps` by cascade.
            _ = try await connection.query("DELETE FROM used_token_ids WHERE app_id = \(id)")
            guard try await connection.query("DELETE FROM apps WHERE id = \(id)").affectedRows == 1 else { return nil }
            return (users, try templates.rows.map {
                GalleryChange(operation: .delete, appId: id, userId: try $0.decode("user_id"), templateId: try $0.decode("id"),
                              changeSeq: try $0.decode("change_seq"))
            })
        }
    }

    package func find(_ id: UUID) async throws -> AppRecord? {
        let rows = try await database.query("""
            SELECT id, name, secret_hash, previous_secret_hash, previous_secret_valid_until, secret_rotated_at, modules::text AS modules,
                   face_model, match_threshold, liveness::text AS liveness, device_binding, device_binding_policy, kiosk_approval::text AS kiosk_approval, quotas::text AS quotas, keep_enrollment_photos, created_at
            FROM apps WHERE id = \(id)
            """)
        guard let row = rows.first else { return nil }
        func json<T: Decodable>(_ column: String, _ type: T.Type) throws -> T {
            try FaceGateJSON.decode(type, from: Array(try row.decode(column, as: String.self).utf8))
        }
        return AppRecord(
            id: try row.decode("id"), name: try row.decode("name"), secretHash: try row.decode("secret_hash"),
            previousSecretHash: try row.decode("previous_secret_hash"), previousSecretValidUntil: try row.decode("previous_secret_valid_until"),
            secretRotatedAt: try row.decode("secret_rotated_at"),
            modules: try json("modules", Modules.self), faceModel: FaceModel(rawValue: try row.decode("face_model")) ?? .dlibResNetV1,
            matchThreshold: try row.decode("match_threshold"),
            liveness: try json("liveness", LivenessPolicy.self),
            deviceBinding: DeviceBinding(rawValue: try row.decode("device_binding")) ?? .header,
            deviceBindingPolicy: DeviceBindingPolicy(rawValue: try row.decode("device_binding_policy")) ?? .employeeNumber,
            kioskApproval: try json("kiosk_approval", KioskApprovalPolicy.self), quotas: try json("quotas", Quotas.self),
            keepEnrollmentPhotos: try row.decode("keep_enrollment_photos"), createdAt: try row.decode("created_at"))
    }

    package func admit(_ app: AppRecord, module: Module) async throws {
        if let refusal = try await admission(app, module: module).run() { throw refusal }
    }

    package func admission(_ app: AppRecord, module: Module) throws -> PostgresStep<APIError?> {
        try app.ensureEnabled(module)
        return PostgresStep(database, """
            INSERT INTO usage_counters (app_id, module, day, calls) VALUES (\(app.id), \(module.rawValue), (now() AT TIME ZONE 'UTC')::date, 1)
            ON CONFLICT (app_id, module, day) DO UPDATE SET calls = usage_counters.calls + 1
            RETURNING calls
            """) { rows in app.quotaRefusal(module, calls: try rows.first?.decode("calls", as: Int.self) ?? 0) }
    }
}
