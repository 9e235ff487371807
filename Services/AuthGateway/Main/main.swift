import AuthGateway
import ServiceKit

await ServiceMain.run { environment in
    let gateway = try AuthGateway(configuration: try GatewayConfiguration(environment: environment))
    try await gateway.group.run()
}
