import MatcherWorker
import ServiceKit

await ServiceMain.run { environment in
    let worker = try MatcherWorker(configuration: try MatcherConfiguration(environment: environment))
    try await worker.group.run()
}
