if CommandLine.arguments.dropFirst().first == "face-engine" { try await runFaceEngineBenchmark(arguments: Array(CommandLine.arguments.dropFirst(2))) }
print("benchmarks")
