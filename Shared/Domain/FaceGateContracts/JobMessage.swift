/// A job one service asks of another over Kafka: the envelope `type` it travels under, the topic that carries it (whose
/// name carries its version, `….v1`) and the reply it gets, under `type` + ".result". `JobResponder` and
/// `RequesterService` read these, so no sender or worker names them, and each refuses a message whose `type` is not
/// the one its payload names.
public protocol JobMessage: Codable, Sendable {
    associatedtype Reply: Codable & Sendable
    /// Which job this is: "face.identify", "ctid.verify", "kiosk.command".
    var messageType: String { get }
    /// The topic it is sent on.
    static func topic(in topics: Topics) -> String
}

extension JobMessage {
    /// The reply envelope's `type`.
    public var replyType: String { messageType + ".result" }
}

extension FaceJob: JobMessage {
    public typealias Reply = FaceJobResult
    public var messageType: String { kind.messageType }
    public static func topic(in topics: Topics) -> String { topics.faceJobs }
}

extension CTIDJob: JobMessage {
    public typealias Reply = CTIDJobResult
    public var messageType: String { kind.messageType }
    public static func topic(in topics: Topics) -> String { topics.ctidJobs }
}

extension KioskCommand: JobMessage {
    public typealias Reply = KioskCommandReply
    public var messageType: String { "kiosk.command" }
    public static func topic(in topics: Topics) -> String { topics.kioskCommands }
}
