import Foundation

/// One log line from librdkafka.
public struct KafkaLogEvent: Sendable {
    /// syslog severity: 0 emergency … 3 error, 4 warning, 6 info, 7 debug.
    public var level: Int32
    /// librdkafka's facility, e.g. `FAIL`, `REQTMOUT`, `CGRPOP`.
    public var facility: String
    public var message: String
    /// librdkafka's instance name, e.g. `facegate#producer-1`.
    public var clientName: String

    public init(level: Int32, facility: String, message: String, clientName: String) {
        self.level = level
        self.facility = facility
        self.message = message
        self.clientName = clientName
    }
}

/// Connection settings shared by producers, consumers and admin calls.
public struct KafkaConfiguration: Sendable {
    /// `bootstrap.servers`: comma-separated `host:port` list.
    public var brokers: String
    /// `client.id`, visible in broker logs.
    public var clientId: String
    /// Extra librdkafka properties (CONFIGURATION.md names); they override this wrapper's defaults.
    public var properties: [String: String] = [:]
    /// Receives librdkafka's log lines (called on librdkafka's own threads). `nil` keeps librdkafka's
    /// default, which prints to stderr.
    public var logHandler: (@Sendable (KafkaLogEvent) -> Void)?

    public init(brokers: String, clientId: String = "facegate") {
        self.brokers = brokers
        self.clientId = clientId
    }

    /// The property set handed to librdkafka: wrapper defaults, then connection settings, then `properties`.
    func librdkafkaProperties(defaults: [String: String]) -> [String: String] {
        var all = defaults
        all["bootstrap.servers"] = brokers
        all["client.id"] = clientId
        all.merge(properties) { _, override in override }
        return all
    }

    /// Reports a condition found by the wrapper itself (not by librdkafka's logger).
    func report(level: Int32, facility: String, message: String, clientName: String) {
        let event = KafkaLogEvent(level: level, facility: facility, message: message, clientName: clientName)
        if let logHandler {
            logHandler(event)
        } else {
            FileHandle.standardError.write(Data("kafka \(clientName) \(facility): \(message)\n".utf8))
        }
    }
}
