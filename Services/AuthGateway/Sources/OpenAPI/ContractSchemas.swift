import AuditRecords
import AppRecords
import FaceGateCore
import IdentityRecords
import Foundation
import ServiceKit

// The contract types the routes take and answer, named as the OpenAPI document names them. Their fields are read from
// their `Decodable` conformances (`SchemaRecorder`); what a field's type cannot say is in its notes.

extension AppAdministration.NewApp: DocumentedSchema { static let schemaName = "NewApp" }
extension AppAdministration.Changes: DocumentedSchema { static let schemaName = "AppChanges" }
extension AppAdministration.Created: DocumentedSchema { static let schemaName = "CreatedApp" }
extension AppAdministration.Rotated: DocumentedSchema { static let schemaName = "RotatedSecret" }
extension AppRecord.Public: DocumentedSchema { static let schemaName = "App" }
extension UserAdministration.Created: DocumentedSchema { static let schemaName = "CreatedUser" }
extension UserAdministration.Page: DocumentedSchema { static let schemaName = "UserPage" }
extension UserView: DocumentedSchema { static let schemaName = "User" }
extension FaceView: DocumentedSchema { static let schemaName = "FaceTemplate" }
extension AuditTrail.Page: DocumentedSchema { static let schemaName = "TransactionPage" }
extension AuditItem: DocumentedSchema { static let schemaName = "Transaction" }
extension AuditTrail.SignedCheckpoint: DocumentedSchema { static let schemaName = "AuditCheckpoint" }
extension TransactionLog.Verification: DocumentedSchema { static let schemaName = "ChainVerification" }
extension FaceModelMigration.Status: DocumentedSchema { static let schemaName = "FaceModelMigration" }
extension FaceModelMigration.Status.Pending: DocumentedSchema { static let schemaName = "MigrationPending" }
extension FaceModelMigration.Switched: DocumentedSchema { static let schemaName = "FaceModelSwitched" }
extension FaceModelMigration.Reembedded: DocumentedSchema { static let schemaName = "FaceModelReembedded" }
extension KioskRegistration.NewKiosk: DocumentedSchema { static let schemaName = "NewKiosk" }
extension KioskRegistration.View: DocumentedSchema { static let schemaName = "Kiosk" }
extension AccessKeys.NewKey: DocumentedSchema { static let schemaName = "NewKey" }
extension AccessKeys.View: DocumentedSchema { static let schemaName = "ApiKey" }
extension BindingTickets.Issued: DocumentedSchema { static let schemaName = "BindingTicket" }
extension CTIDEnvelope: DocumentedSchema { static let schemaName = "CtidEnvelope" }
extension CTIDRegistration: DocumentedSchema { static let schemaName = "CtidRegistration" }
extension CTIDSerialNumber: DocumentedSchema { static let schemaName = "CtidSerial" }
extension LivenessChallenge: DocumentedSchema {}
extension KioskSessionCreated: DocumentedSchema {}
extension KioskSessionView: DocumentedSchema { static let schemaName = "KioskSession" }

extension FaceGateIdentity: DocumentedSchema {
    static let schemaName = "LoginSuccess"
    static var encodedOnly: [(String, DocumentValue)] { [("status", ["type": "string", "const": .string(FaceLoginOutcome.successStatus)])] }
}

extension FaceLoginConfirmation: DocumentedSchema {
    static let schemaName = "ConfirmRequired"
    static var encodedOnly: [(String, DocumentValue)] { [("status", ["type": "string", "const": .string(FaceLoginOutcome.confirmationStatus)])] }
}

extension FaceLoginOutcome: DocumentedUnion {
    static let schemaName = "FaceLoginResult"
    static let discriminator = "status"
    static var alternatives: [(String, any DocumentedSchema.Type)] {
        [(successStatus, FaceGateIdentity.self), (confirmationStatus, FaceLoginConfirmation.self)]
    }
}

// Enumerations the document names.
extension ModuleState: DocumentedSchema {}
extension LivenessMode: DocumentedSchema {}
extension DeviceBinding: DocumentedSchema {}
extension DeviceBindingPolicy: DocumentedSchema {}
extension FaceModel: DocumentedSchema {}
extension KioskState: DocumentedSchema {}
extension KioskEventName: DocumentedSchema {}
extension LivenessAction: DocumentedSchema {}

// Parts of the contract types the document names.
extension Modules: DocumentedSchema {}
extension ModulesPatch: DocumentedSchema { static let schemaName = "ModulesChange" }
extension LivenessPolicy: DocumentedSchema { static let schemaName = "Liveness" }
extension KioskApprovalPolicy: DocumentedSchema { static let schemaName = "KioskApproval" }
extension Quotas: DocumentedSchema {}
extension FaceQualityReport: DocumentedSchema { static let schemaName = "Quality" }
extension CredentialView: DocumentedSchema { static let schemaName = "DeviceCredential" }
extension AuditItem.Actor: DocumentedSchema { static let schemaName = "TransactionActor" }
extension TransactionLog.Verification.CheckpointResult: DocumentedSchema { static let schemaName = "CheckpointCheck" }
extension KioskSessionView.Step: DocumentedSchema { static let schemaName = "KioskStep" }
extension KioskEvent: DocumentedSchema {}
extension KioskEventData: DocumentedSchema {}
extension KioskResult: DocumentedSchema {}
extension KioskDocumentSummary: DocumentedSchema {}
