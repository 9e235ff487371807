// facegate-bench <benchmark> [arguments…]; each benchmark appends its figures to Benchmarks/RESULTS.md.
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "http": try await runHTTPBenchmark(arguments: Array(arguments.dropFirst()))
default: print("usage: facegate-bench <benchmark> [arguments…]; benchmarks: http")
}
