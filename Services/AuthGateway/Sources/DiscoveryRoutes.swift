import HTTPServer

/// Public, unauthenticated documents: the JWKS to verify tokens offline, and the OpenAPI description.
extension GatewayContext {
    func registerDiscoveryRoutes(on router: APIRoutes) {
        let jwks = jwks
        router.add("GET", "/.well-known/jwks.json", answers: []) { _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "public, max-age=300")], body: .bytes(jwks))
        }
        let openAPI = Array(OpenAPIDocument.json(serverURL: configuration.publicURL ?? "/").utf8)
        router.add("GET", "/openapi.json", answers: []) { _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(openAPI))
        }
    }
}
