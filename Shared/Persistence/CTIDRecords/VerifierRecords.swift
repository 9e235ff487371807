import FaceGateCore
import Foundation
import PlatformRecords
import PostgresClient
import ServiceKit

/// An app as the ctid-verifier reads it (`apps`, which it may only read).
package struct VerifierApp: Sendable {
    /// The institution key sealed to this service; nil when the app has none.
    package var sealedKey: [UInt8]?
    package var matchThreshold: Float

    package init(sealedKey: [UInt8]? = nil, matchThreshold: Float) {
        self.sealedKey = sealedKey
        self.matchThreshold = matchThreshold
    }
}

/// The ctid-verifier's reads of apps and its record of answered verifications (`ProcessedMessages`, consumer
/// `ctid.verify`): a redelivered job gets the first answer, since its serial is already spent. Serials are
/// `CTIDSerialStore`'s, identities `IdentityRegistry`'s.
package protocol VerifierRecords: Sendable {
    func app(_ id: UUID) async throws -> VerifierApp?
    /// The answer the job with this message id got, sealed as it was sent.
    func answer(to messageId: String) async throws -> [UInt8]?
    /// Keeps the first answer to a message id; a later one is dropped.
    func keep(_ answer: [UInt8], for messageId: String) async throws
}

package struct PostgresVerifierRecords: VerifierRecords {
    package let database: PostgresPool

    package init(database: PostgresPool) {
        self.database = database
    }

    package func app(_ id: UUID) async throws -> VerifierApp? {
        guard let row = try await database.query("SELECT ctid_key_sealed, match_threshold FROM apps WHERE id = \(id)").first else { return nil }
        return VerifierApp(sealedKey: try row.decode("ctid_key_sealed"), matchThreshold: try row.decode("match_threshold"))
    }

    private static let verifications = ProcessedMessages(consumer: "ctid.verify")

    package func answer(to messageId: String) async throws -> [UInt8]? {
        try await Self.verifications.answer(to: messageId, on: database)
    }

    package func keep(_ answer: [UInt8], for messageId: String) async throws {
        try await Self.verifications.keep(answer, for: messageId, on: database)
    }
}
