import Foundation
import PostgresClient

/// The answers a worker gave, by message id (`processed_messages`, one `consumer` name per kind of job): a redelivered
/// job is answered from here instead of being done twice. The platform's table, like the reply-partition leases; each
/// worker reads and writes only its own consumer's rows.
public struct ProcessedMessages: Sendable {
    public let consumer: String

    public init(consumer: String) { self.consumer = consumer }

    /// The answer the job with this message id got, as it was kept.
    public func answer(to messageId: String, on database: some PostgresQueryable) async throws -> [UInt8]? {
        try await database.query("""
            SELECT result FROM processed_messages WHERE consumer = \(consumer) AND message_id = \(messageId)
            """).first?.decode("result", as: [UInt8]?.self)
    }

    /// Keeps the first answer to a message id (a later one is dropped); inside the caller's transaction when `database`
    /// is its connection, so the answer commits with the work it answers.
    public func keep(_ answer: [UInt8], for messageId: String, on database: some PostgresQueryable) async throws {
        _ = try await database.query("""
            INSERT INTO processed_messages (consumer, message_id, result) VALUES (\(consumer), \(messageId), \(answer))
            ON CONFLICT DO NOTHING
            """)
    }
}
