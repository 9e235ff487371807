import Foundation
#if os(Linux)
import Crypto
import JWT
import Synchronization

/// The device's own P-256 key, which signs a DPoP proof (RFC 9449) for every call: the server knows the
/// device by the key's thumbprint, so a device id copied from somewhere else is worth nothing without it.
/// Kept in a file only this user can read (created with mode 0600 on first use). On Apple platforms
/// the key belongs in the Secure Enclave through the key store; that path is not part of this build.
public final class DeviceKey: Sendable {
    public let file: URL
    private let loaded: Mutex<P256PrivateKey?>

    /// The key in `file`, created there on first use.
    public init(file: URL) {
        self.file = file
        loaded = Mutex(nil)
    }

    /// The standard place for an app's device key: `$XDG_DATA_HOME` (or `~/.local/share`)`/facegate/`.
    public static func standard(appId: String) -> DeviceKey {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_DATA_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
        let name = appId.lowercased().filter { $0.isLetter || $0.isNumber || $0 == "-" }
        return DeviceKey(file: base.appendingPathComponent("facegate/device-\(name).p256.der"))
    }

    /// RFC 7638 thumbprint: the identity the server gives this device.
    public func thumbprint() throws(FaceGateError) -> String { DPoP.thumbprint(of: try key().publicKey) }

    /// The `DPoP` header value for one request.
    func proof(method: String, url: URL, accessToken: String?, body: Data?) throws(FaceGateError) -> String {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        components?.query = nil
        components?.fragment = nil
        let target = components?.string ?? url.absoluteString
        do {
            return try DPoP.proof(key: try key(), method: method, url: target, accessToken: accessToken, body: body.map { Array($0) } ?? [])
        } catch let error as FaceGateError {
            throw error
        } catch {
            throw .usage("the device key could not sign: \(error)")
        }
    }

    private func key() throws(FaceGateError) -> P256PrivateKey {
        do {
            return try loaded.withLock { current throws -> P256PrivateKey in
                if let current { return current }
                let key = try loadOrCreate()
                current = key
                return key
            }
        } catch let error as FaceGateError {
            throw error
        } catch {
            throw .usage("the device key file \(file.path) is unusable: \(error)")
        }
    }

    private func loadOrCreate() throws -> P256PrivateKey {
        if let existing = FileManager.default.contents(atPath: file.path) {
            return try P256PrivateKey(derRepresentation: Array(existing))
        }
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        // Created exclusively, readable by this user only; when another process created it first, its key is read back.
        let descriptor = open(file.path, O_CREAT | O_EXCL | O_WRONLY, 0o600)
        if descriptor >= 0 {
            let der = P256PrivateKey().derRepresentation
            let written = der.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
            guard written == der.count else { throw FaceGateError.usage("the device key file \(file.path) could not be written") }
        } else if errno != EEXIST {
            throw FaceGateError.usage("the device key file \(file.path) could not be created (errno \(errno))")
        }
        return try P256PrivateKey(derRepresentation: Array(try Data(contentsOf: file)))
    }
}
#endif
