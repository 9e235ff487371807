import Foundation

// facegate-bench <benchmark> [options]: one subcommand per benchmark; each appends to Benchmarks/RESULTS.md.
let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "postgres": try await runPostgresBenchmark(arguments: Array(arguments.dropFirst()))
    default: print("usage: facegate-bench <benchmark> [options]\nbenchmarks: postgres")
    }
} catch {
    FileHandle.standardError.write(Data("facegate-bench: \(error)\n".utf8))
    exit(1)
}
