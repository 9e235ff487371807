import FaceGateCore
import Foundation
import Synchronization

/// The in-memory twin of `TransactionLog`: the transactions a worker recorded, in order.
public final class RecordedTransactions: TransactionRecorder {
    private let state = Mutex<[TransactionRecord]>([])
    public var records: [TransactionRecord] { state.withLock { $0 } }

    public init() {}

    public func append(_ record: TransactionRecord) async throws { state.withLock { $0.append(record) } }
}
