import Foundation

/// The hash that places a template in a shard when a gallery is split across matcher groups: FNV-1a 64 over the id's 16
/// bytes in RFC 4122 order. Stable across processes, versions and languages; PostgreSQL keeps it beside each template
/// (`face_templates.shard_hash`, as its signed bit pattern) so that a shard loads only its own rows.
public func templateShardHash(_ templateId: UUID) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    withUnsafeBytes(of: templateId.uuid) { bytes in
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
    }
    return hash
}

/// The shard (0..<shardCount) that owns a template: its `templateShardHash` modulo shardCount.
public func shardIndex(templateId: UUID, shardCount: Int) -> Int {
    precondition(shardCount > 0, "shardCount must be positive")
    return Int(templateShardHash(templateId) % UInt64(shardCount))
}
