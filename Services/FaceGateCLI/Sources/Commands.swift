import FaceGateClient
import FaceGateContracts
import Foundation
import ServiceKit

/// What one command accepts: how many arguments after its words, the options that take a value and the switches. Every
/// command is checked against it before anything runs, so a typo stops with exit 2 and the valid choices, never silently.
struct CommandSpec {
    var arguments: ClosedRange<Int>
    var options: [String] = []
    var switches: [String] = []

    static let table: [String: CommandSpec] = [
        "migrate": .init(arguments: 0...0), "reseal": .init(arguments: 0...0), "keys": .init(arguments: 0...0),
        "app create": .init(arguments: 1...1, options: ["--model", "--threshold", "--false-match-rate", "--fpir", "--for-gallery-size", "--binding",
                                                        "--binding-policy"],
                            switches: ["--formal"]),
        "app get": .init(arguments: 1...1), "app list": .init(arguments: 0...0),
        "app settings": .init(arguments: 1...1, options: ["--threshold", "--false-match-rate", "--fpir", "--for-gallery-size", "--liveness-login",
                                                         "--liveness-kiosk",
                                                         "--daily-calls", "--gallery-size", "--keep-photos"]),
        "app delete": .init(arguments: 1...1, switches: ["--yes"]),
        "app binding": .init(arguments: 2...3),
        "app migrate-model": .init(arguments: 1...2, switches: ["--re-embed", "--switch"]),
        "app modules": .init(arguments: 2...Int.max),
        "app rotate-secret": .init(arguments: 1...1, options: ["--grace"], switches: ["--revoke-previous"]),
        "app revoke-previous-secret": .init(arguments: 1...1),
        "kiosk add": .init(arguments: 3...3, options: ["--allow"]), "kiosk list": .init(arguments: 1...1), "kiosk revoke": .init(arguments: 2...2),
        "user create": .init(arguments: 3...3), "user list": .init(arguments: 1...1), "user get": .init(arguments: 2...2),
        "user delete": .init(arguments: 2...2), "user reset": .init(arguments: 2...2),
        "user import": .init(arguments: 2...2, options: ["--concurrency", "--report"]),
        "enroll": .init(arguments: 3...Int.max),
        "face list": .init(arguments: 2...2), "face delete": .init(arguments: 3...3), "face search": .init(arguments: 2...2, options: ["--limit"]),
        "device reset": .init(arguments: 2...2),
        "device-credential list": .init(arguments: 2...2), "device-credential revoke": .init(arguments: 2...2),
        "ctid-registry add": .init(arguments: 5...6),
        "login": .init(arguments: 1...1, options: ["--employee-number", "--key"]), "exchange": .init(arguments: 1...1),
        "operator-key create": .init(arguments: 1...Int.max, options: ["--expires"]),
        "auditor create": .init(arguments: 1...Int.max, options: ["--expires"], switches: ["--all-apps"]),
        "operator-key list": .init(arguments: 0...0), "auditor list": .init(arguments: 0...0),
        "operator-key revoke": .init(arguments: 1...1), "auditor revoke": .init(arguments: 1...1),
        "audit query": .init(arguments: 0...Int.max), "audit export": .init(arguments: 0...Int.max),
        "audit checkpoint": .init(arguments: 1...1), "audit verify": .init(arguments: 1...1, options: ["--checkpoint"]),
    ]

    /// Stops with exit 2 on an unknown command, an unknown option, an option without its value or the wrong number of
    /// arguments. `rest`: what follows the first word.
    static func check(_ command: String, _ rest: [String]) throws {
        let (name, spec, arguments): (String, CommandSpec, ArraySlice<String>)
        if let single = table[command] {
            (name, spec, arguments) = (command, single, rest[...])
        } else if let word = rest.first, let double = table[command + " " + word] {
            (name, spec, arguments) = (command + " " + word, double, rest.dropFirst())
        } else {
            let known = table.keys.filter { $0.hasPrefix(command + " ") }.sorted()
            throw CLIError(known.isEmpty ? FaceGateCLI.usage : "facegate \(command): say which, one of: \(known.joined(separator: ", "))", exitCode: 2)
        }
        var count = 0
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let word = arguments[index]
            index += 1
            guard word.hasPrefix("--") else {
                count += 1
                continue
            }
            if spec.options.contains(word) {
                guard index < arguments.endIndex, !arguments[index].hasPrefix("--") else { throw CLIError("\(word) needs a value", exitCode: 2) }
                index += 1
            } else if !spec.switches.contains(word) {
                let valid = (spec.options + spec.switches + ["--output"]).sorted()
                throw CLIError("facegate \(name): unknown option \(word); it takes \(valid.joined(separator: ", "))", exitCode: 2)
            }
        }
        guard spec.arguments.contains(count) else {
            throw CLIError("facegate \(name): \(count) argument\(count == 1 ? "" : "s") given\n" + FaceGateCLI.help(for: command), exitCode: 2)
        }
    }
}

/// How answers are printed: a table for people, JSON (keys sorted, one line) for programs.
enum Output {
    case table, json

    /// Takes `--output table|json` out of `arguments`; without it, a table on a terminal and JSON when piped.
    static func take(from arguments: inout [String]) throws -> Output {
        guard let index = arguments.firstIndex(of: "--output") else { return isatty(STDOUT_FILENO) == 1 ? .table : .json }
        guard index + 1 < arguments.count, let output = ["table": Output.table, "json": .json][arguments[index + 1]] else {
            throw CLIError("--output takes table or json", exitCode: 2)
        }
        arguments.removeSubrange(index...index + 1)
        return output
    }

    func write(_ answer: Any) {
        FileHandle.standardOutput.write(Data((render(answer) + "\n").utf8))
    }

    func render(_ answer: Any) -> String {
        guard self == .table, let object = answer as? [String: Any] else { return Self.json(answer) }
        var lines: [String] = []
        if let items = object["items"] as? [[String: Any]] {
            lines += Self.table(items)
        }
        let fields = object.filter { $0.key != "items" || !($0.value is [[String: Any]]) }.sorted { $0.key < $1.key }
        let width = fields.map(\.key.count).max() ?? 0
        lines += fields.map { $0.key.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + Self.cell($0.value) }
        return lines.joined(separator: "\n")
    }

    /// Rows under a header: the columns are every key the rows have, sorted, ids first.
    static func table(_ rows: [[String: Any]]) -> [String] {
        guard !rows.isEmpty else { return ["(none)"] }
        let columns = Set(rows.flatMap(\.keys)).sorted { ($0.hasSuffix("Id") ? 0 : 1, $0) < ($1.hasSuffix("Id") ? 0 : 1, $1) }
        let cells = rows.map { row in columns.map { row[$0].map(cell) ?? "-" } }
        let widths = columns.indices.map { column in max(columns[column].count, cells.map { $0[column].count }.max() ?? 0) }
        func line(_ values: [String]) -> String {
            zip(values, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces)
        }
        return [line(columns)] + cells.map(line)
    }

    static func cell(_ value: Any) -> String {
        switch value {
        case let text as String: text
        case is NSNull: "-"
        case let number as NSNumber where String(cString: number.objCType) == "c": number.boolValue ? "true" : "false"
        case let number as NSNumber: number.stringValue
        default: json(value)
        }
    }

    static func json(_ value: Any) -> String {
        guard JSONSerialization.isValidJSONObject(value),
              let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return "\(value)"
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// `facegate login` and `facegate exchange`: one device and its app server, as the quick start runs them. The device signs
/// every call with its DPoP key (kept in a file); a key the app does not know yet is bound by confirming the employee
/// number with a binding ticket the app server asks for, which is what a real app server does after its own sign-in.
struct DeviceLogin {
    let environment: Environment
    let output: Output

    func appServer() throws -> (appId: String, client: APIClient) {
        let appId = try environment.required("FACEGATE_APP_ID")
        let secret = try environment.required("FACEGATE_APP_SECRET")
        let basic = "Basic " + Data("\(appId):\(secret)".utf8).base64EncodedString()
        return (appId, APIClient(base: FaceGateCLI.gatewayURL(environment), authorization: basic, output: output))
    }

    func run(photo path: String, employeeNumber: String?, keyFile: String?) async throws {
        guard let photo = FileManager.default.contents(atPath: path) else { throw CLIError("cannot read \(path)", exitCode: 1) }
        let (appId, server) = try appServer()
        guard let token = try await server.json("POST", "/v1/access-tokens")["accessToken"] as? String else {
            throw CLIError("POST /v1/access-tokens answered no accessToken", exitCode: 1)
        }
        guard let base = URL(string: FaceGateCLI.gatewayURL(environment)) else { throw CLIError("FACEGATE_URL is not a URL", exitCode: 2) }
        var configuration = FaceGateConfiguration(baseURL: base, appId: appId, deviceId: "facegate-cli", accessToken: token)
        if let keyFile { configuration.deviceKey = DeviceKey(file: URL(fileURLWithPath: keyFile)) }
        let login = FaceLogin(configuration: configuration)
        do {
            switch try await login.validate(image: photo) {
            case .success(let identity):
                write(identity)
            case .confirmationRequired:
                guard let employeeNumber else {
                    throw CLIError("this device key is new to the app: run again with --employee-number N to bind it", exitCode: 1)
                }
                let ticket = try await server.json("POST", "/v1/device-bindings", json: ["employeeNumber": employeeNumber])["bindingTicket"] as? String
                write(try await login.confirm(employeeNumber: employeeNumber, bindingTicket: ticket))
            }
        } catch let error as FaceGateError {
            throw CLIError("face login refused: \(error)", exitCode: 1)
        }
        if let thumbprint = try? configuration.deviceKey?.thumbprint() {
            FileHandle.standardError.write(Data("device key \(configuration.deviceKey?.file.path ?? ""), thumbprint \(thumbprint)\n".utf8))
        }
    }

    func exchange(_ identityToken: String) async throws {
        try await appServer().client.print("POST", "/v1/identity/exchange", json: ["identityToken": identityToken])
    }

    private func write(_ identity: FaceGateIdentity) {
        output.write(["identityToken": identity.identityToken, "expiresIn": identity.expiresIn, "transactionId": identity.transactionId,
                      "userId": identity.userId])
    }
}
