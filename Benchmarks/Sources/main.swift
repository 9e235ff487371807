// facegate-bench <benchmark> [options]: one subcommand per benchmark.
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "kafka": try await runKafkaBenchmark(arguments: Array(arguments.dropFirst()))
default: print("usage: facegate-bench <benchmark> [options]; benchmarks: kafka")
}
