import Foundation
import KafkaClient
import PostgresClient

/// Reply-partition leases in PostgreSQL: each requester instance owns one partition of its reply
/// topic, so replies reach exactly the instance that asked. A lease lives `ttl` and is renewed well
/// before it lapses; an instance that dies frees its partition when the lease expires.
public struct PostgresPartitionLease: ReplyPartitionLease {
    private let database: PostgresPool
    private let ttlSeconds: Int

    public init(database: PostgresPool, ttlSeconds: Int = 30) {
        self.database = database
        self.ttlSeconds = ttlSeconds
    }

    public func claim(topic: String, partitionCount: Int, owner: String) async throws -> Int32 {
        for _ in 0..<20 {
            // Prefer a partition this owner already holds, then a free or lapsed one; the conditional
            // upsert makes two instances racing for the same partition end with one owner.
            let rows = try await database.query("""
                INSERT INTO reply_partition_leases (topic, partition, owner, expires_at)
                SELECT \(topic), p, \(owner), now() + make_interval(secs => \(ttlSeconds))
                FROM generate_series(0, \(partitionCount - 1)) AS p
                WHERE NOT EXISTS (
                    SELECT 1 FROM reply_partition_leases l
                    WHERE l.topic = \(topic) AND l.partition = p AND l.expires_at > now() AND l.owner <> \(owner))
                ORDER BY (SELECT count(*) FROM reply_partition_leases l WHERE l.topic = \(topic) AND l.partition = p AND l.owner = \(owner)) DESC, random()
                LIMIT 1
                ON CONFLICT (topic, partition) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
                WHERE reply_partition_leases.expires_at <= now() OR reply_partition_leases.owner = excluded.owner
                RETURNING partition
                """)
            if let row = rows.first { return Int32(try row.decode("partition", as: Int.self)) }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw LeaseError.noFreePartition(topic: topic, partitions: partitionCount)
    }

    public func renew(topic: String, partition: Int32, owner: String) async throws -> Bool {
        let rows = try await database.query("""
            UPDATE reply_partition_leases SET expires_at = now() + make_interval(secs => \(ttlSeconds))
            WHERE topic = \(topic) AND partition = \(Int(partition)) AND owner = \(owner)
            """)
        return rows.affectedRows == 1
    }

    public func release(topic: String, partition: Int32, owner: String) async {
        _ = try? await database.query("""
            DELETE FROM reply_partition_leases WHERE topic = \(topic) AND partition = \(Int(partition)) AND owner = \(owner)
            """)
    }
}

public enum LeaseError: Error, CustomStringConvertible {
    case noFreePartition(topic: String, partitions: Int)
    public var description: String {
        switch self {
        case .noFreePartition(let topic, let partitions):
            "all \(partitions) partitions of \(topic) are leased by live instances; add partitions before adding instances"
        }
    }
}
