if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "gallery" { try await runGalleryBenchmark(arguments: Array(CommandLine.arguments.dropFirst(2))) } else {
print("benchmarks")
}
