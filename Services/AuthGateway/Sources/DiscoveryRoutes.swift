import HTTPServer
import Synchronization

/// Public, unauthenticated documents: the JWKS to verify tokens offline, and the OpenAPI description.
struct DiscoveryRoutes: RouteCollection {
    /// The token keys' JWKS (the gateway's current and previous keys, and the kiosk-orchestrator's).
    let jwks: [UInt8]
    /// `FACEGATE_PUBLIC_URL`, the OpenAPI document's server, or relative.
    let publicURL: String?

    func boot(_ routes: APIRoutes) {
        let jwks = jwks
        routes.add("GET", "/.well-known/jwks.json", "getJwks", "Token signing keys (Ed25519), to verify tokens offline", tag: .discovery,
                   answers: [.ok(JsonWebKeySet.self, "JWKS")]) { _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "public, max-age=300")], body: .bytes(jwks))
        }
        // Generated from the route table on the first request, when every collection has declared its routes.
        let (table, serverURL) = (routes.table, publicURL ?? "/")
        let document = Mutex<[UInt8]?>(nil)
        routes.add("GET", "/openapi.json", "getOpenApiDocument", "This document", tag: .discovery,
                   answers: [.content("OpenAPI 3.1", [("application/json", ["type": "object"])])]) { _ in
            let bytes = try document.withLock { cached in
                if let cached { return cached }
                let generated = Array(try OpenAPIDocument.generate(table.all, serverURL: serverURL).json().utf8)
                cached = generated
                return generated
            }
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(bytes))
        }
    }

    /// The JWKS's shape (`JWTKeySet.jwksJSON`), for the document.
    struct JsonWebKeySet: Codable, DocumentedSchema {
        var keys: [JsonWebKey]
    }

    struct JsonWebKey: Codable, DocumentedSchema {
        var kty: String
        var crv: String
        var kid: String
        var x: String
        var use: String
        var alg: String

        static let schemaNotes: [String: DocumentValue] = [
            "kty": ["const": "OKP"], "crv": ["const": "Ed25519"], "use": ["const": "sig"], "alg": ["const": "EdDSA"],
        ]
    }
}
