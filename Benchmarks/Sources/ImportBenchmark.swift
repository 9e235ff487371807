import Foundation

/// `facegate user import` onboarding a folder of people into a formal app beyond the trial's 100: interrupted part-way,
/// then run again to the end, as an operator would. Figures: people and photos per second, what the rerun skipped, the
/// refusals by reason (from the run's CSV report), and the app's gallery and estimated FPIR after it.
func runImportBenchmark(arguments: [String]) async throws {
    let count = Int(arguments.first ?? "") ?? 200
    let source = arguments.dropFirst().first ?? ".run/calibration/impostors"
    let interruptAfter = Double(arguments.dropFirst(2).first ?? "") ?? 8
    let binaries = ProcessInfo.processInfo.environment["FACEGATE_RELEASE_DIR"] ?? ".build/release"
    let images = try Bench.environment("FACEGATE_TEST_IMAGES")
    let manager = FileManager.default

    // One folder per person, `NUMBER Name`, linking to their photos.
    let people = try manager.contentsOfDirectory(atPath: source).sorted().filter { folder in
        var directory: ObjCBool = false
        return manager.fileExists(atPath: source + "/" + folder, isDirectory: &directory) && directory.boolValue
    }.prefix(count)
    guard people.count == count else { throw BenchError("\(source) holds \(people.count) people, not \(count): run scripts/calibration-data.sh") }
    let root = manager.temporaryDirectory.appendingPathComponent("facegate-import-\(UUID().uuidString.prefix(8))")
    defer { try? manager.removeItem(at: root) }
    var photos = 0
    for (index, person) in people.enumerated() {
        let folder = root.appendingPathComponent(String(format: "I%04d %@", index + 1, person))
        try manager.createDirectory(at: folder, withIntermediateDirectories: true)
        for photo in try manager.contentsOfDirectory(atPath: source + "/" + person) where photo.lowercased().hasSuffix(".jpg") || photo.lowercased().hasSuffix(".png") {
            try manager.createSymbolicLink(atPath: folder.appendingPathComponent(photo).path,
                                           withDestinationPath: URL(fileURLWithPath: source + "/" + person + "/" + photo).standardizedFileURL.path)
            photos += 1
        }
    }

    let stack = try await BenchStack.start(matcherEngines: 2)
    defer { stack.stop() }
    let app = try await stack.app(binding: "dpop", gallery: images)
    let report = root.appendingPathComponent("report.csv").path

    /// One run of the CLI: its exit status (nil when interrupted), its stderr and how long it ran.
    func run(interruptingAfter limit: Double?) throws -> (status: Int32?, log: String, seconds: Double) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binaries + "/facegate")
        process.arguments = ["user", "import", app.id, root.path, "--concurrency", "4", "--report", report]
        process.environment = ProcessInfo.processInfo.environment.merging(["FACEGATE_URL": stack.base, "FACEGATE_ADMIN_KEY": stack.adminKey]) { $1 }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        let started = Date()
        try process.run()
        if let limit {
            Thread.sleep(forTimeInterval: limit)
            if process.isRunning { process.interrupt() }
        }
        let log = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let interrupted = process.terminationReason == .uncaughtSignal
        return (interrupted ? nil : process.terminationStatus, log, Date().timeIntervalSince(started))
    }

    let first = try run(interruptingAfter: interruptAfter)
    let doneBefore = first.log.split(separator: "\n").filter { $0.contains("/\(count) ") }.count
    let second = try run(interruptingAfter: nil)
    guard let status = second.status else { throw BenchError("the rerun was interrupted") }
    let results = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n").dropFirst()
        .map { $0.split(separator: ",", omittingEmptySubsequences: false) }.filter { $0.count >= 3 }
    let byResult = results.reduce(into: [String: Int]()) { $0[String($1[2]), default: 0] += 1 }
    let (_, viewData) = try await HTTP.call("GET", stack.base + "/v1/apps/\(app.id)", headers: ["Authorization": "Bearer \(stack.adminKey)"])
    let view = HTTP.json(viewData)
    let templates = view["galleryTemplates"] as? Int ?? -1
    let fpir = view["estimatedFalsePositiveIdentificationRate"] as? Double ?? .nan
    let summary = byResult.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    let tail = second.log.split(separator: "\n").suffix(6).map { "    " + $0 }.joined(separator: "\n")

    try Bench.record("Bulk import: \(count) people into a formal app (`facegate-bench import`)", """
    `facegate user import APP DIR --concurrency 4 --report FILE` over \(count) people (\(photos) photos, one folder each, the first \(count)
    of \(source) as laid out by scripts/calibration-data.sh) into a formal app that already held 2 users, release build,
    gateway + one matcher (2 face engines) + broker + PostgreSQL on this 2-core machine. The first run was interrupted
    (SIGINT) after \(String(format: "%.0f", first.seconds)) s with \(doneBefore) of \(count) people done; the rerun took \(String(format: "%.1f", second.seconds)) s and
    ended with exit status \(status) (1: some photos refused). The rerun's report, by result: \(summary). After it the
    app holds \(templates) templates, at which its threshold stands for an estimated FPIR of \(String(format: "%.2g", fpir)).
    The rerun's last lines on stderr (not a terminal, so a line per person):

    \(tail)
    """)
}
