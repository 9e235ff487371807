import FaceGateCore
import Foundation
import PostgresClient
import ServiceKit

/// How long a matcher-worker takes from start to a loaded gallery, and what the gallery costs in memory:
/// N sealed templates are written to a fresh database, then a release matcher-worker process is started
/// against it; the figures are its own "gallery loaded" log line and its resident memory before and after.
func runGalleryLoadBenchmark(arguments: [String]) async throws {
    let count = Int(arguments.first ?? "") ?? 1_000_000
    let binaries = ProcessInfo.processInfo.environment["FACEGATE_RELEASE_DIR"] ?? ".build/release"
    let sealingKey = try Bench.environment("FACEGATE_SEALING_KEY")
    let sealer = try Sealer(base64Key: sealingKey)
    let (url, pool) = try await Bench.freshDatabase("bench_gallery_load")

    // 1,000 users of one app, the templates spread over them; random unit-scale embeddings.
    let appId = UUID()
    _ = try await pool.query("""
        INSERT INTO apps (id, name, secret_hash, modules, liveness, quotas)
        VALUES (\(appId), 'gallery load', \(SHA256Placeholder.bytes), '{}'::jsonb, '{}'::jsonb, '{}'::jsonb)
        """)
    let users = (0..<1000).map { _ in UUID() }
    for (index, user) in users.enumerated() {
        _ = try await pool.query("INSERT INTO users (id, app_id, employee_number, name) VALUES (\(user), \(appId), \(String(index)), 'bench')")
    }
    let writeStarted = ContinuousClock.now
    var generator = SystemRandomNumberGenerator()
    let batch = 500
    for start in stride(from: 0, to: count, by: batch) {
        var sql = "INSERT INTO face_templates (id, app_id, user_id, embedding_sealed, model_id, quality) VALUES "
        var binds: [any PostgresEncodable & Sendable] = []
        for row in 0..<min(batch, count - start) {
            let templateId = UUID()
            let embedding = (0..<128).map { _ in Float.random(in: -0.2...0.2, using: &generator) }
            let base = binds.count
            sql += (row == 0 ? "" : ",") + "($\(base + 1), $\(base + 2), $\(base + 3), $\(base + 4), 'dlib-resnet-v1', '{}'::jsonb)"
            binds += [templateId, appId, users[(start + row) % users.count], try sealer.sealTemplate(embedding, templateId: templateId)]
        }
        _ = try await pool.query(PostgresQuery(unsafeSQL: sql, binds: binds))
    }
    let written = (ContinuousClock.now - writeStarted).seconds
    await pool.close()

    let matcher = try ServiceProcess(binaries + "/matcher-worker", name: "gallery-load", environment: [
        "FACEGATE_DATABASE_URL": url, "FACEGATE_ADMIN_PORT": "19150", "MATCHER_ENGINES": "1", "FACEGATE_LOG_LEVEL": "info",
        "FACEGATE_TOPIC_PREFIX": "galleryload\(UUID().uuidString.prefix(6).lowercased()).",
    ])
    defer { matcher.stop() }
    let started = ContinuousClock.now
    var loadedLine = ""
    var engineRSS = 0
    while ContinuousClock.now - started < .seconds(600), loadedLine.isEmpty {
        try await Task.sleep(for: .milliseconds(100))
        let log = (try? String(contentsOfFile: FileManager.default.temporaryDirectory.appendingPathComponent("facegate-bench-gallery-load.log").path,
                               encoding: .utf8)) ?? ""
        if engineRSS == 0, log.contains("starting gallery") { engineRSS = matcher.threadsAndRSS().rssKB }
        loadedLine = log.split(separator: "\n").first { $0.contains("gallery loaded") }.map(String.init) ?? ""
    }
    guard !loadedLine.isEmpty else { throw BenchError("the matcher did not report a loaded gallery within 10 minutes") }
    let toReady = (ContinuousClock.now - started).seconds
    let loadedRSS = matcher.threadsAndRSS().rssKB
    let seconds = loadedLine.range(of: "\"seconds\":\"")
        .map { loadedLine[$0.upperBound...].prefix { $0 != "\"" } }.map(String.init) ?? "?"
    let perTemplate = Double(loadedRSS - engineRSS) * 1024 / Double(count)
    try Bench.record("Matcher start-up: loading the gallery from PostgreSQL", """
    \(count) sealed templates (AES-256-GCM, 128-D float32) in one app, written in \(String(format: "%.0f", written)) s; then a release
    matcher-worker (one face engine) started against them. The matcher streams every row, opens each sealed template and adds it to
    the in-memory gallery (fp32).

    | templates | gallery load (matcher's own figure) | process start → loaded | RSS before the load | RSS after | resident bytes per template |
    | --- | --- | --- | --- | --- | --- |
    | \(count) | \(seconds) s | \(String(format: "%.1f", toReady)) s | \(engineRSS / 1024) MiB | \(loadedRSS / 1024) MiB | \(String(format: "%.0f", perTemplate)) B |

    Resident bytes per template include the allocator's overhead and the id index, not only the 556 B of vector, norm and ids.
    """)
}

/// A fixed 32-byte value standing in for a secret hash in rows no one authenticates against.
private enum SHA256Placeholder {
    static let bytes = [UInt8](repeating: 0, count: 32)
}
