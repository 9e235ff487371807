import Foundation
import HTTPServer
import Synchronization

/// Named readiness checks. `/readyz` is 200 only while every check passes, so a load balancer or
/// Kubernetes stops sending work while PostgreSQL or the broker is down.
public final class Readiness: Sendable {
    private let checks = Mutex<[(String, @Sendable () async -> Bool)]>([])
    private let draining = Atomic<Bool>(false)

    public init() {}

    public func add(_ name: String, _ check: @escaping @Sendable () async -> Bool) {
        checks.withLock { $0.append((name, check)) }
    }

    /// After shutdown begins the instance reports not ready, so traffic moves elsewhere first.
    public func markDraining() { draining.store(true, ordering: .relaxed) }

    public func evaluate() async -> (ready: Bool, results: [String: Bool]) {
        var results: [String: Bool] = [:]
        for (name, check) in checks.withLock({ $0 }) { results[name] = await check() }
        let isDraining = draining.load(ordering: .relaxed)
        if isDraining { results["draining"] = false }
        return (!isDraining && results.values.allSatisfy { $0 }, results)
    }
}

/// `/healthz` (the process answers), `/readyz` (dependencies reachable) and `/metrics` on the admin port.
public final class AdminServer: Service {
    public let name = "admin-server"
    private let server: HTTPServer
    private let logger: Logger

    public init(host: String, port: Int, readiness: Readiness, metrics: MetricsRegistry, logger: Logger) {
        let router = Router()
        router.add("GET", "/healthz") { _ in .json(["status": "ok"]) }
        router.add("GET", "/readyz") { _ in
            let (ready, results) = await readiness.evaluate()
            struct Body: Encodable { var ready: Bool; var checks: [String: Bool] }
            return .json(Body(ready: ready, checks: results), status: ready ? 200 : 503)
        }
        // Readiness is evaluated at each scrape too, so an alert can fire on an instance that is up but not ready.
        let ready = metrics.gauge("facegate_ready", help: "1 while every readiness check passes")
        let checks = metrics.gauge("facegate_readiness_check", help: "1 while the named readiness check passes")
        router.add("GET", "/metrics") { _ in
            let (isReady, results) = await readiness.evaluate()
            ready.set(isReady ? 1 : 0)
            for (name, passed) in results { checks.set(passed ? 1 : 0, ["check": name]) }
            return .text(metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
        var configuration = HTTPServerConfiguration(host: host, port: port)
        configuration.threadCount = 1
        configuration.maxBodyBytes = 1024
        server = HTTPServer(configuration: configuration, router: router)
        self.logger = logger
    }

    public var port: Int { server.port }

    public func run(_ context: ServiceContext) async throws {
        try server.start()
        logger.info("admin endpoints listening", ["admin.port": String(server.port)])
        context.ready()
        await context.shutdownRequested()
        await server.shutdown(gracePeriod: .seconds(2))
    }
}
