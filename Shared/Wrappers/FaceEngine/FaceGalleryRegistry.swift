import Foundation
import Synchronization

/// The matcher's galleries, one per app, created on first use.
public final class GalleryRegistry: Sendable {
    public let storage: GalleryStorage
    private let galleries = Mutex<[UUID: FaceGallery]>([:])

    public init(storage: GalleryStorage = .float32) {
        self.storage = storage
    }

    /// The app's gallery (a new empty one the first time).
    public func gallery(for appId: UUID) -> FaceGallery {
        galleries.withLock { map in
            if let existing = map[appId] { return existing }
            let created = FaceGallery(storage: storage)
            map[appId] = created
            return created
        }
    }

    /// Drops the app's gallery (the app was deleted).
    public func remove(app appId: UUID) {
        _ = galleries.withLock { $0.removeValue(forKey: appId) }
    }

    /// Gives back every gallery's spare room (`FaceGallery.trim`).
    public func trim() { snapshot().forEach { $0.trim() } }

    /// Templates across all apps.
    public var totalCount: Int { snapshot().reduce(0) { $0 + $1.count } }

    /// Bytes held for templates across all apps.
    public var memoryBytes: Int { snapshot().reduce(0) { $0 + $1.memoryBytes } }

    private func snapshot() -> [FaceGallery] { galleries.withLock { Array($0.values) } }
}
