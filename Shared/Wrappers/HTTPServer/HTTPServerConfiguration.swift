/// Where and how an `HTTPServer` listens. Defaults suit a service behind a load balancer;
/// tests use port 0 and read `HTTPServer.port` after `start()`.
public struct HTTPServerConfiguration: Sendable {
    /// Numeric address or host name to bind (`127.0.0.1`, `0.0.0.0`, `::`).
    public var host: String
    /// 0 picks a free port.
    public var port: Int
    /// Body cap for routes that do not set their own.
    public var maxBodyBytes: Int = 5 << 20
    /// Network threads; handlers run as Swift tasks and never occupy them.
    public var threadCount: Int = 2
    /// Idle time after which a connection that is not waiting on a handler is closed
    /// (a client that stalls mid-request, an idle keep-alive connection).
    public var connectionTimeoutSeconds: Int = 30
    public var perIPConnectionLimit: Int = 256
    public var maxConnections: Int = 8192
    /// Per-connection memory for the request line, headers and response staging.
    public var connectionMemoryBytes: Int = 64 << 10

    public init(host: String = "127.0.0.1", port: Int = 0) {
        self.host = host
        self.port = port
    }
}
