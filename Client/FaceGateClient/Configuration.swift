import Foundation

/// Where and as whom a client calls FaceGate. Shared by every client of this library.
public struct FaceGateConfiguration: Sendable {
    /// The gateway, e.g. `http://127.0.0.1:8080`.
    public var baseURL: URL
    /// The app's id (a UUID): CTID envelopes and device assertions name it.
    public var appId: String
    /// Sent as `X-Device-Id` on every call: 1–128 printable ASCII characters, stable per installation. On apps
    /// that bind devices by key it is only a label: the device is its key.
    public var deviceId: String
    #if os(Linux)
    /// Signs a DPoP proof for every client call; by default the app's key in the user's data directory
    /// (`DeviceKey.standard(appId:)`). Nil sends no proof (only apps in header mode accept that).
    public var deviceKey: DeviceKey?
    #endif
    /// The access token to start with; `setAccessToken(_:)` replaces it later.
    public var accessToken: String?
    /// Asked for a new access token (from the app's own server) when there is none yet or the gateway answers
    /// `ACCESS_TOKEN_INVALID` / `ACCESS_TOKEN_EXPIRED`; the refused call is then retried once.
    public var refreshAccessToken: (@Sendable () async throws -> String)?
    /// Longest wait for one HTTP answer (a face match runs on the server within this).
    public var requestTimeout: Duration
    /// Longest silence on a kiosk event stream before it is reopened.
    public var eventStreamIdleTimeout: Duration
    /// Pause before reopening a kiosk event stream that ended early (the server's `retry:` overrides it).
    public var eventStreamReconnectDelay: Duration

    public init(baseURL: URL, appId: String, deviceId: String, accessToken: String? = nil,
                refreshAccessToken: (@Sendable () async throws -> String)? = nil,
                requestTimeout: Duration = .seconds(30), eventStreamIdleTimeout: Duration = .seconds(90),
                eventStreamReconnectDelay: Duration = .milliseconds(500)) {
        self.baseURL = baseURL
        self.appId = appId
        self.deviceId = deviceId
        #if os(Linux)
        deviceKey = .standard(appId: appId)
        #endif
        self.accessToken = accessToken
        self.refreshAccessToken = refreshAccessToken
        self.requestTimeout = requestTimeout
        self.eventStreamIdleTimeout = eventStreamIdleTimeout
        self.eventStreamReconnectDelay = eventStreamReconnectDelay
    }
}

extension Duration {
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
