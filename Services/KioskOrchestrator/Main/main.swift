import KioskOrchestrator
import ServiceKit

await ServiceMain.run { environment in
    let orchestrator = try KioskOrchestrator(configuration: try KioskConfiguration(environment: environment))
    try await orchestrator.group.run()
}
