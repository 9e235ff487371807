// facegate-bench <benchmark> [options]: one subcommand per benchmark; `all` runs every one in turn.
import FaceEngine
import Foundation

let benchmarks: [(name: String, summary: String, run: ([String]) async throws -> Void)] = [
    ("kafka", "request→reply round trip through the broker", runKafkaBenchmark),
    ("postgres", "pool point-select throughput vs pgbench; streaming a large result", runPostgresBenchmark),
    ("http", "trivial JSON route driven by wrk at 1, 64 and 1000 connections", runHTTPBenchmark),
    ("face-engine", "per-image pipeline and embedding equality vs Python face_recognition", runFaceEngineBenchmark),
    ("sface-engine", "YuNet + SFace pipeline per photo vs opencv-python (same ONNX files) and face_recognition", runSFaceEngineBenchmark),
    ("area-reduction", "the SFace engine's area reduction vs OpenCV's INTER_AREA on the test photos: time and differing values", runAreaReductionBenchmark),
    ("detection-size", "SFace detection on a reduced copy first vs one scan at 1024 px: time, faces, box and descriptor drift", runDetectionSizeBenchmark),
    ("gallery", "1:N search at 10k/100k/1M templates vs numpy and FAISS; memory per template", runGalleryBenchmark),
    ("batching", "identify throughput of one matcher's pipeline with and without search batching at concurrency 1, 4, 16", runSearchBatchingBenchmark),
    ("gallery-load", "matcher start-up with 1M sealed templates in PostgreSQL; memory per template", runGalleryLoadBenchmark),
    ("e2e", "face login over HTTP through the whole stack, 1 and 2 matcher replicas; requests in flight", runEndToEndBenchmark),
    ("login-peer", "SFace face login over HTTP, p50 at one client, vs the same photo through the same models in Python in-process", runLoginPeerBenchmark),
    ("throughput", "face login throughput and CPU-ms per login of every process at 1, 4 and 8 clients, header mode and DPoP", runThroughputBenchmark),
    ("import", "facegate user import of 200 calibration people into a formal app, interrupted then resumed; refusals by reason", runImportBenchmark),
    ("dpop", "DPoP proof make/verify cost; face login on a bound key (1:1) vs header mode (1:N) over HTTP, p50/p99", runDPoPBenchmark),
    ("device-assertion", "device-credential challenge + assertion round trips over HTTP; p50/p99", runDeviceAssertionBenchmark),
    ("mrz", "ID-card MRZ read back from rendered cards at three degradation levels; accuracy and time", runMRZBenchmark),
    ("ctid", "CTID envelope seal/open and forged-tag refusal on one core vs Python cryptography", runCTIDBenchmark),
    ("frames", "write a synthetic liveness burst from a photo (not a benchmark; not part of all)", runLivenessFramesCommand),
    ("kiosk", "kiosk onboarding, returning customer and kiosk login over HTTP: latency per step", runKioskFlowBenchmark),
    ("walls", "cost of sealed job messages and of row-level security scopes, each against the same work without", runWallsBenchmark),
    ("policy", "the trust policy's cost per login: face login, kiosk login and verify p50 against the release before it, in turn", runPolicyBenchmark),
    ("accuracy", "open-set rank-1, FNIR/FPIR, TPIR at FPIR 0.01/0.001 per model on identity/image folders (not part of all)", runAccuracyTool),
    ("subjects", "subject-face selection on composites of public photos with bystanders: refusals, wrong picks, TPIR (not part of all)",
     runSubjectBenchmark),
    ("scale", "10 M templates across 4 shards with real SFace templates planted: memory, load, search p50/p99, GB/s and recall per storage, beside FAISS Flat and SQ8 (not part of all)",
     runScaleBenchmark),
    ("scale-broker", "the scale gallery end to end: 10 M sealed templates in PostgreSQL, 4 matcher processes, every probe searched over HTTP through the broker, per storage (not part of all)",
     runScaleBrokerBenchmark),
    ("idle", "the whole stack's CPU while idle, reply partitions paused when idle or always fetched, and the first login after idleness",
     runIdleBenchmark),
    ("enrollment-options", "TPIR at FPIR 0.01 and 0.001 of one or two enrollment photos (two templates or fused), plain or flip-averaged, against the plain model with paired intervals, on searches as taken and degraded (not part of all)",
     runEnrollmentOptionsBenchmark),
]

let arguments = Array(CommandLine.arguments.dropFirst())
// An SFace analysis in this process runs on one thread, as the benchmarks' tables say and their peers run, unless a
// benchmark asks for more (login-peer's column on every core). The services it starts keep their own setting.
FaceEngine.setLoneAnalysisThreads(1)
let selected = arguments.first ?? "help"
do {
if selected == "all" {
    for benchmark in benchmarks where !["accuracy", "frames", "subjects", "enrollment-options", "scale", "scale-broker"].contains(benchmark.name) {
        print("== \(benchmark.name)")
        try await benchmark.run([])
    }
} else if let benchmark = benchmarks.first(where: { $0.name == selected }) {
    try await benchmark.run(Array(arguments.dropFirst()))
} else {
    print("usage: facegate-bench <benchmark> [options] | all")
    for benchmark in benchmarks { print("  \(benchmark.name.padding(toLength: 12, withPad: " ", startingAt: 0)) \(benchmark.summary)") }
}
} catch {
    FileHandle.standardError.write(Data("facegate-bench: \(error)\n".utf8))
    exit(1)
}
