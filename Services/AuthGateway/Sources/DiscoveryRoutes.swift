import HTTPServer

/// Public, unauthenticated documents: the JWKS to verify tokens offline, and the OpenAPI description.
struct DiscoveryRoutes: RouteCollection {
    /// The token keys' JWKS (the gateway's current and previous keys, and the kiosk-orchestrator's).
    let jwks: [UInt8]
    /// `FACEGATE_PUBLIC_URL`, the OpenAPI document's server, or relative.
    let publicURL: String?

    func boot(_ routes: APIRoutes) {
        let jwks = jwks
        routes.add("GET", "/.well-known/jwks.json", answers: []) { _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "public, max-age=300")], body: .bytes(jwks))
        }
        let openAPI = Array(OpenAPIDocument.json(serverURL: publicURL ?? "/").utf8)
        routes.add("GET", "/openapi.json", answers: []) { _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(openAPI))
        }
    }
}
