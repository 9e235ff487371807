import Synchronization

/// Method + path-pattern table. Patterns are `/`-separated; a segment `{name}` captures one path segment.
/// A literal segment wins over a parameter at the same position (`/users/me` before `/users/{id}`).
public final class Router: Sendable {
    struct Route: Sendable {
        var method: String
        var pattern: String
        /// Names of the `{…}` segments, in path order.
        var parameterNames: [String]
        var maxBodyBytes: Int?
        var admission: HTTPAdmission?
        var handler: HTTPHandler
    }

    enum Lookup {
        case matched(Route, parameters: [String: String])
        case methodNotAllowed(allowed: [String])
        case notFound
    }

    private struct Node {
        var literals: [String: Node] = [:]
        /// Zero or one child for a `{parameter}` segment (an array keeps the recursive struct sized).
        var parameter: [Node] = []
        var routes: [String: Route] = [:]

        mutating func insert(_ route: Route, segments: ArraySlice<PatternSegment>) -> Bool {
            guard let segment = segments.first else {
                guard routes[route.method] == nil else { return false }
                routes[route.method] = route
                return true
            }
            switch segment {
            case .literal(let text):
                return literals[text, default: Node()].insert(route, segments: segments.dropFirst())
            case .parameter:
                if parameter.isEmpty { parameter.append(Node()) }
                return parameter[0].insert(route, segments: segments.dropFirst())
            }
        }

        /// Every node whose pattern matches the whole path, literal branches first, with the parameter values.
        func collect(_ segments: ArraySlice<Substring>, captured: [Substring], into matches: inout [(Node, [Substring])]) {
            guard let segment = segments.first else {
                if !routes.isEmpty { matches.append((self, captured)) }
                return
            }
            if let literal = literals[String(segment)] {
                literal.collect(segments.dropFirst(), captured: captured, into: &matches)
            }
            if let child = parameter.first, !segment.isEmpty {
                child.collect(segments.dropFirst(), captured: captured + [segment], into: &matches)
            }
        }
    }

    private enum PatternSegment {
        case literal(String)
        case parameter(String)
    }

    private struct Table {
        var root = Node()
        var order: [(method: String, pattern: String)] = []
    }

    private let table = Mutex(Table())

    public init() {}

    /// Registers `handler` for `method` (upper case, e.g. `GET`) on `pattern` (e.g. `/v1/apps/{appId}/users/{userId}`).
    /// `maxBodyBytes` overrides the server-wide body cap for this route; `admission` runs before a body is read
    /// (authentication, so that nobody unknown gets to upload megabytes). A `GET` route also answers `HEAD`.
    /// Registering the same method and pattern twice, or a malformed pattern, is a programming error.
    public func add(_ method: String, _ pattern: String, maxBodyBytes: Int? = nil, admission: HTTPAdmission? = nil,
                    _ handler: @escaping HTTPHandler) {
        let method = method.uppercased()
        guard let segments = Self.parse(pattern: pattern) else {
            preconditionFailure("Router: malformed route pattern \(pattern)")
        }
        let names = segments.compactMap { segment -> String? in
            if case .parameter(let name) = segment { return name }
            return nil
        }
        precondition(Set(names).count == names.count, "Router: repeated parameter name in \(pattern)")
        let route = Route(method: method, pattern: pattern, parameterNames: names, maxBodyBytes: maxBodyBytes, admission: admission,
                          handler: handler)
        table.withLock { table in
            guard table.root.insert(route, segments: segments[...]) else {
                preconditionFailure("Router: \(method) \(pattern) registered twice")
            }
            table.order.append((method: method, pattern: pattern))
        }
    }

    /// Every registered route in registration order.
    public var routes: [(method: String, pattern: String)] {
        table.withLock { $0.order }
    }

    func lookup(method: String, path: String) -> Lookup {
        guard path.first == "/" else { return .notFound }
        let segments = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        var matches: [(Node, [Substring])] = []
        table.withLock { table in
            table.root.collect(segments[...], captured: [], into: &matches)
        }
        guard !matches.isEmpty else { return .notFound }
        for (node, captured) in matches {
            guard let route = node.routes[method] ?? (method == "HEAD" ? node.routes["GET"] : nil) else { continue }
            var parameters: [String: String] = [:]
            for (name, value) in zip(route.parameterNames, captured) {
                parameters[name] = percentDecode(value, plusAsSpace: false)
            }
            return .matched(route, parameters: parameters)
        }
        var allowed = Set<String>()
        for (node, _) in matches {
            allowed.formUnion(node.routes.keys)
        }
        if allowed.contains("GET") { allowed.insert("HEAD") }
        return .methodNotAllowed(allowed: allowed.sorted())
    }

    private static func parse(pattern: String) -> [PatternSegment]? {
        guard pattern.first == "/" else { return nil }
        var segments: [PatternSegment] = []
        for piece in pattern.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            if piece.first == "{" {
                guard piece.last == "}", piece.count > 2 else { return nil }
                let name = piece.dropFirst().dropLast()
                guard !name.contains("{"), !name.contains("}") else { return nil }
                segments.append(.parameter(String(name)))
            } else {
                guard !piece.contains("{"), !piece.contains("}") else { return nil }
                segments.append(.literal(String(piece)))
            }
        }
        return segments
    }
}
