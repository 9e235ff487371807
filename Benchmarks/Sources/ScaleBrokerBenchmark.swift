@_spi(Benchmarking) import FaceEngine
import FaceGateCore
import Foundation
import PostgresClient

/// `facegate-bench scale-broker LABELLED --impostors DIR [--templates 10000000] [--shards 4] [--storage int8,float32]`
///
/// The gallery of `facegate-bench scale`, end to end: `templates` sealed templates in PostgreSQL (seeded random unit
/// vectors with the real SFace templates of `PlantedSet` planted among them, each planted one its own user's), loaded by
/// `shards` matcher-worker processes (one per shard, `MATCHER_SHARD_INDEX`), and every probe photo searched over HTTP
/// (`POST /v1/apps/{appId}/faces/search`, operator key): the gateway has one shard embed the photo, then sends the
/// template to every shard over the broker and merges their answers. On this 2-core machine the shards share the cores
/// and one memory bus: this measures memory and the whole path, not scaling.
func runScaleBrokerBenchmark(arguments: [String]) async throws {
    let usage = "usage: facegate-bench scale-broker LABELLED --impostors DIR [--templates N] [--shards S] [--storage int8,float32]"
    guard let labelled = arguments.first, !labelled.hasPrefix("--") else { throw BenchError(usage) }
    let options = Bench.options(Array(arguments.dropFirst()))
    guard let impostors = options["impostors"] else { throw BenchError(usage) }
    let total = Int(options["templates"] ?? "") ?? 10_000_000
    let shardCount = Int(options["shards"] ?? "") ?? 4
    let storages = (options["storage"] ?? "int8,float32").split(separator: ",").map(String.init)
    let binaries = ProcessInfo.processInfo.environment["FACEGATE_RELEASE_DIR"] ?? ".build/release"

    let set = try PlantedSet(labelled: labelled, impostors: impostors)
    let spacing = set.spacing(among: total)
    print("[scale-broker] \(set.people) people and \(set.planted.count - set.people) strangers planted among \(total) templates; \(set.probes.count) probes")

    let (url, pool) = try await Bench.freshDatabase("bench_scale_broker")
    let adminKey = "fgk_bench_" + UUID().uuidString.lowercased()
    let (port, adminPort) = (18380, 19380)
    let common = ["FACEGATE_DATABASE_URL": url, "FACEGATE_TOPIC_PREFIX": "scale\(UUID().uuidString.prefix(6).lowercased()).",
                  "FACEGATE_ADMIN_KEY": adminKey, "FACEGATE_LOG_LEVEL": "info"]
    let gateway = try ServiceProcess(binaries + "/auth-gateway", name: "scale-gateway", environment: common.merging([
        "FACEGATE_HTTP_PORT": String(port), "FACEGATE_ADMIN_PORT": String(adminPort), "FACEGATE_MATCHER_SHARDS": String(shardCount),
        "FACEGATE_REQUEST_TIMEOUT_SECONDS": "60",
    ]) { $1 })
    defer { gateway.stop() }
    let base = "http://127.0.0.1:\(port)"
    try await HTTP.waitUntilOK("http://127.0.0.1:\(adminPort)/readyz", timeout: .seconds(60))
    let admin = ["Authorization": "Bearer \(adminKey)", "Content-Type": "application/json"]
    let (_, created) = try await HTTP.call("POST", base + "/v1/apps", headers: admin, body: Data(
        #"{"name":"scale","faceModel":"sface-2021dec","modules":{"faceLogin":"formal"}}"#.utf8))
    guard let appText = HTTP.json(created)["appId"] as? String, let appId = UUID(uuidString: appText) else {
        throw BenchError("no app: \(HTTP.json(created))")
    }

    // The planted people and strangers each their own user; the random templates spread over 1,000 more.
    let plantedUsers = set.planted.map { _ in UUID() }, fillerUsers = (0..<1000).map { _ in UUID() }
    let users = plantedUsers + fillerUsers
    for start in stride(from: 0, to: users.count, by: 1000) {
        var sql = "INSERT INTO users (id, app_id, employee_number, name) VALUES "
        var binds: [any PostgresEncodable & Sendable] = []
        for index in start..<min(start + 1000, users.count) {
            sql += (index == start ? "" : ",") + "($\(binds.count + 1), $\(binds.count + 2), $\(binds.count + 3), 'scale')"
            binds += [users[index], appId, "S\(index)"]
        }
        _ = try await pool.query(PostgresQuery(unsafeSQL: sql, binds: binds))
    }
    let sealer = try Sealer(base64Key: try Bench.environment("FACEGATE_SEALING_KEY"))
    let writeStarted = ContinuousClock.now
    let batch = 1000, lanes = 2
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<lanes {
            group.addTask {
                var random = BenchRandom(state: 0x5ca1e &+ UInt64(lane))
                var vector = [Float](repeating: 0, count: 128)
                for start in stride(from: lane * batch, to: total, by: batch * lanes) {
                    // Enrolled a day ago: a gallery in service, not one a matcher's reconciliation reads again as just stored.
                    var sql = "INSERT INTO face_templates (id, app_id, user_id, embedding_sealed, model_id, quality, created_at, shard_hash) VALUES "
                    var binds: [any PostgresEncodable & Sendable] = []
                    for row in start..<min(start + batch, total) {
                        let id = UUID(), user: UUID
                        if let index = set.plantedIndex(row: row, spacing: spacing) {
                            (vector, user) = (set.planted[index], plantedUsers[index])
                        } else {
                            vector.withUnsafeMutableBufferPointer { random.unitVector(into: $0) }
                            user = fillerUsers[row % fillerUsers.count]
                        }
                        let at = binds.count
                        sql += (row == start ? "" : ",") + "($\(at + 1), $\(at + 2), $\(at + 3), $\(at + 4), 'sface-2021dec', '{}'::jsonb, now() - interval '1 day', $\(at + 5))"
                        binds += [id, appId, user, try sealer.sealTemplate(vector, templateId: id), Int64(bitPattern: templateShardHash(id))]
                    }
                    _ = try await pool.query(PostgresQuery(unsafeSQL: sql, binds: binds))
                    if (start / batch) % 1000 == lane { print("[scale-broker] written \(start + batch) of \(total)") }
                }
            }
        }
        try await group.waitForAll()
    }
    let written = (ContinuousClock.now - writeStarted).seconds
    let tableBytes = try await pool.query("SELECT pg_total_relation_size('face_templates') AS bytes").first?.decode("bytes", as: Int64.self) ?? 0
    await pool.close()
    // As after any bulk load: vacuumed, analysed and checkpointed now, not by autovacuum in the middle of the searches.
    let maintenance = try Bench.superuser(on: "bench_scale_broker")
    _ = try await maintenance.query("VACUUM (ANALYZE) face_templates")
    _ = try await maintenance.query("CHECKPOINT")
    await maintenance.close()
    print(String(format: "[scale-broker] %d templates written in %.0f s; face_templates %.2f GB", total, written, Double(tableBytes) / 1e9))

    let bandwidth = GalleryDiagnostics.measureReadBandwidth(bytes: 1 << 30, threads: 2)
    var lines: [String] = []
    for storage in storages {
        let elementBytes = ["int8": 1, "float16": 2, "float32": 4][storage] ?? 4
        // Every shard at once, each reading its own slice (`shard_hash`, filtered in PostgreSQL); loaded when each logs so.
        let started = ContinuousClock.now
        let matchers = try (0..<shardCount).map { shard in
            try ServiceProcess(binaries + "/matcher-worker", name: "scale-matcher-\(shard)", environment: common.merging([
                "FACEGATE_ADMIN_PORT": String(adminPort + 1 + shard), "MATCHER_ENGINES": "1", "MATCHER_SHARD_INDEX": String(shard),
                "MATCHER_SHARD_COUNT": String(shardCount), "MATCHER_GALLERY_STORAGE": storage,
            ]) { $1 })
        }
        defer { matchers.forEach { $0.stop() } }
        var loaded: [Double] = []
        for matcher in matchers {
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("facegate-bench-\(matcher.name).log").path
            while !((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("gallery loaded") {
                guard ContinuousClock.now - started < .seconds(3600), matcher.process.isRunning else {
                    throw BenchError("\(matcher.name) did not load its gallery; see \(log)")
                }
                try await Task.sleep(for: .milliseconds(250))
            }
            loaded.append((ContinuousClock.now - started).seconds)
        }
        for shard in 0..<shardCount { try await HTTP.waitUntilOK("http://127.0.0.1:\(adminPort + 1 + shard)/readyz", timeout: .seconds(120)) }
        let rssGB = Double(matchers.map { $0.threadsAndRSS().rssKB }.reduce(0, +)) * 1024 / 1e9
        func metric(_ prefix: String, _ label: String = "") async throws -> Double {
            var sum = 0.0
            for shard in 0..<shardCount {
                let (_, text) = try await HTTP.call("GET", "http://127.0.0.1:\(adminPort + 1 + shard)/metrics")
                sum += String(decoding: text, as: UTF8.self).split(separator: "\n")
                    .filter { $0.hasPrefix(prefix) && (label.isEmpty || $0.contains(label)) }.compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
            }
            return sum
        }
        let held = try await metric("facegate_gallery_templates"), galleryBytes = try await metric("facegate_gallery_bytes")
        guard Int(held) == total else { throw BenchError("the shards hold \(Int(held)) templates, not \(total)") }

        // The probes one at a time, after three to warm up; the shards' own search time from their metrics.
        let searchURL = base + "/v1/apps/\(appId)/faces/search"
        let photos = try set.probes.map { try Data(contentsOf: URL(fileURLWithPath: $0.path)) }
        let upload = admin.merging(["Content-Type": "image/jpeg"]) { $1 }
        for photo in photos.prefix(3) { _ = try await HTTP.call("POST", searchURL, headers: upload, body: photo) }
        let searchSum = try await metric("facegate_matcher_stage_seconds_sum", #"stage="search""#)
        let searchCount = try await metric("facegate_matcher_stage_seconds_count", #"stage="search""#)
        var times: [Double] = [], found = 0, matched = 0, wrong = 0, failed = 0
        for (probe, photo) in zip(set.probes, photos) {
            let sent = ContinuousClock.now
            let (status, answer) = try await HTTP.call("POST", searchURL, headers: upload, body: photo)
            times.append((ContinuousClock.now - sent).seconds * 1000)
            guard status == 200 else { failed += 1; continue }
            let json = HTTP.json(answer), own = plantedUsers[probe.person].uuidString.lowercased()
            if ((json["candidates"] as? [[String: Any]])?.first?["userId"] as? String)?.lowercased() == own { found += 1 }
            if let match = (json["match"] as? [String: Any])?["userId"] as? String { if match.lowercased() == own { matched += 1 } else { wrong += 1 } }
        }
        if failed > 0 {
            // Where a failed search's job went: each shard's jobs by disposition, its redeliveries and embeddings.
            for shard in 0..<shardCount {
                let (_, text) = try await HTTP.call("GET", "http://127.0.0.1:\(adminPort + 1 + shard)/metrics")
                for line in String(decoding: text, as: UTF8.self).split(separator: "\n")
                where ["facegate_jobs_total", "facegate_messages_redelivered_total", "facegate_matcher_outcomes_total", "facegate_dead_letters_total"]
                    .contains(where: { line.hasPrefix($0) }) {
                    print("[scale-broker] shard \(shard): \(line)")
                }
            }
            let (_, text) = try await HTTP.call("GET", "http://127.0.0.1:\(adminPort)/metrics")
            for line in String(decoding: text, as: UTF8.self).split(separator: "\n")
            where ["facegate_messages_rejected_total", "facegate_deadline_misses_total", "facegate_messages_redelivered_total"].contains(where: { line.hasPrefix($0) }) {
                print("[scale-broker] gateway: \(line)")
            }
        }
        times.sort()
        let shardSearches = try await metric("facegate_matcher_stage_seconds_count", #"stage="search""#) - searchCount
        let shardMs = (try await metric("facegate_matcher_stage_seconds_sum", #"stage="search""#) - searchSum) / max(shardSearches, 1) * 1000
        let scanned = Double(total * 128 * elementBytes) / (shardMs / 1000) / 1e9
        lines.append(String(format: "| %@ | %.0f | %.2f | %.1f | %.0f | %.0f | %.1f | %.0f | %.1f (%.0f %%) | %d / %d | %d | %d | %d |", storage,
                            galleryBytes / Double(total), rssGB, loaded.max() ?? 0, Bench.percentile(times, 50), Bench.percentile(times, 99),
                            shardMs, shardSearches / Double(times.count), scanned, scanned / (bandwidth / 1e9) * 100, found, set.probes.count,
                            matched, wrong, failed))
        print(lines.last!)
    }

    try Bench.record("Gallery at scale through the broker: \(total / 1_000_000) M templates, \(shardCount) matcher processes (`facegate-bench scale-broker`)", """
    \(total) sealed templates of one SFace app in PostgreSQL (face_templates \(String(format: "%.2f", Double(tableBytes) / 1e9)) GB with its
    indexes, written in \(String(format: "%.0f", written)) s, then vacuumed, analysed and checkpointed): seeded random unit vectors with \(set.planted.count) real SFace templates planted among
    them, as in `facegate-bench scale` (\(set.people) labelled people's first photo and \(set.planted.count - set.people) impostor photos, each
    its own user; the random ones spread over 1,000 users; all stored a day before). \(shardCount) release matcher-worker processes, one per shard
    (`MATCHER_SHARD_INDEX`, one face engine each), start at once and each reads only its own slice of the table (its rows'
    `shard_hash`, filtered by PostgreSQL's scan);
    "load" is from their start to the last one's "gallery loaded". Then each of the \(set.probes.count) other photos of the labelled
    people is searched over HTTP, one at a time (`POST /v1/apps/{appId}/faces/search`, operator key): one shard
    decodes, detects and embeds the photo, then the gateway sends its sealed template to every shard over the broker and
    merges their top candidates. "found": the probe's own person is the first candidate; "matched"/"wrong": the decision at
    the app's threshold named the own person / another. Shard search: each shard's own search time per search job, mean
    (`facegate_matcher_stage_seconds`); GB/s: all shards' vector bytes over that time, the shards searching at once,
    against \(String(format: "%.1f", bandwidth / 1e9)) GB/s read bandwidth measured with 2 threads. Gateway, broker,
    PostgreSQL, the \(shardCount) matchers and this client on this 2-core machine.

    | storage | gallery bytes per template | matchers' RSS GB | load s | search p50 ms | p99 ms | shard search ms | search jobs per search | scanned GB/s (of read bandwidth) | found | matched | wrong | failed |
    | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
    \(lines.joined(separator: "\n"))
    """)
}
