import CTIDVerifier
import ServiceKit

await ServiceMain.run { environment in
    let verifier = try CTIDVerifier(configuration: try CTIDConfiguration(environment: environment))
    try await verifier.group.run()
}
