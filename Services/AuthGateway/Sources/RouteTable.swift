import FaceGateCore
import Foundation
import Synchronization

/// An answer that hands out an identity token, a binding ticket or a verdict on a factor (is this the face, the number,
/// the identity?). A route that can answer one must name its door in `TrustPolicy`, which the route-table test checks.
protocol TrustAnswer {}

extension FaceGateIdentity: TrustAnswer {}
extension FaceLoginOutcome: TrustAnswer {}
extension KioskSessionView: TrustAnswer {}
extension CTIDEnvelope: TrustAnswer {}

/// What a route declared at registration: its documentation (what it takes, answers and refuses) and its doors.
public struct RouteDeclaration: Sendable {
    public let method: String
    public let pattern: String
    let documentation: RouteDocumentation
    let doors: [Door]

    /// The declared answer types, by name.
    public var answerTypes: [String] { documentation.answers.compactMap(\.type).map { String(reflecting: $0) } }
    /// The declared answer types that hand out an identity, a ticket or a verdict (`TrustAnswer`).
    public var trustAnswers: [String] {
        documentation.answers.compactMap(\.type).filter { $0 is any TrustAnswer.Type }.map { String(reflecting: $0) }
    }

    /// The route's doors in `TrustPolicy`, by name.
    public var doorNames: [String] { doors.map(\.rawValue) }
}

/// Every route's declaration, in registration order.
final class RouteTable: Sendable {
    private let declarations = Mutex<[RouteDeclaration]>([])

    func add(_ declaration: RouteDeclaration) { declarations.withLock { $0.append(declaration) } }

    var all: [RouteDeclaration] { declarations.withLock { $0 } }
}
