import CTIDRecords
import Crypto
import FaceGateClient
import FaceGateContracts
import FaceGateCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PostgresClient
import ServiceKit

/// `facegate`: operators and auditors at the command line. `migrate` and `keys` work on their own;
/// everything else calls the gateway's HTTP API with the caller's key, so every action is recorded
/// exactly as it would be from any other client.
public enum FaceGateCLI {
    /// The release this tool belongs to (`facegate --version`).
    public static let version = Release.version

    public static let usage = """
    usage: facegate <command> [arguments]

    setup
      migrate                                   apply database migrations (FACEGATE_DATABASE_URL)
      keys                                      print a fresh set of every key the services need: token, sealing,
                                                CTID, per-service message, kiosk token, audit and operator keys
      reseal                                    re-seal templates, kept photos and CTID registry rows under FACEGATE_SEALING_KEY,
                                                opening with FACEGATE_PREVIOUS_SEALING_KEYS (FACEGATE_DATABASE_URL, online)
      --version                                 this tool's release; --help anywhere prints this
    operators (FACEGATE_URL, FACEGATE_ADMIN_KEY)
      app create NAME [--formal] [--model M] [--threshold D | --false-match-rate R | --fpir R [--for-gallery-size N]] [--binding B] [--binding-policy P]
                                                M: sface-2021dec (default) or dlib-resnet-v1; B: dpop (default) or header;
                                                P: appServerTicket (default), boundDevice or employeeNumber
      app get APP_ID | app list
      app settings APP_ID [--threshold D | --false-match-rate R | --fpir R [--for-gallery-size N]] [--liveness-login L] [--liveness-kiosk L]
                       [--daily-calls N] [--gallery-size N] [--keep-photos true|false]
                                                change what is named, keep the rest; L: off or active
      app delete APP_ID --yes                   the app and all its data (users, templates, devices, kiosks, CTID rows);
                                                its audit trail stays
      app binding APP_ID B [P]                  how devices are identified and new keys bound
      app migrate-model APP_ID [M] [--re-embed] [--switch]
                                                share of users ready for model M (sface-2021dec) and who is not;
                                                --switch moves the app to M (its users without an M template must enroll again);
                                                --re-embed first makes M templates from the kept enrollment photos
      app modules APP_ID MODULE=STATE...        e.g. faceLogin=formal ctid=disabled
      app rotate-secret APP_ID [--grace S | --revoke-previous]
                                                a new secret; the previous one mints access tokens for S seconds
                                                (default 3600; --revoke-previous: not at all)
      app revoke-previous-secret APP_ID         the previous secret, and the access tokens it minted, stop now
      kiosk add APP_ID NAME JKT [--allow ADDRESS]...
                                                register a kiosk by its DPoP key's RFC 7638 thumbprint (JKT);
                                                --allow pins it to client addresses
      kiosk list APP_ID | kiosk revoke APP_ID KIOSK_ID
      user create APP_ID EMPLOYEE_NUMBER NAME
      user list APP_ID                          every user (all pages)
      user get APP_ID USER_ID | user delete APP_ID USER_ID
      user reset APP_ID USER_ID                 clear the lock on binding new devices to the user
      user import APP_ID DIR|CSV [--concurrency N] [--report FILE]
                                                many people at once: DIR holds a folder per person named NUMBER or
                                                "NUMBER Name" with their photos; CSV rows are employeeNumber,name,photo.
                                                N at a time (4), waiting out 429s; a rerun resumes (people already
                                                imported are skipped); refusals by reason on stderr and all in FILE
                                                (import-report.csv); exit 1 if any photo was refused
      enroll APP_ID USER_ID PHOTO...            JPEG/PNG files, one template each; every file is tried and named
                                                with its outcome on stderr (exit 1 if any was not enrolled)
      face list APP_ID USER_ID | face delete APP_ID USER_ID TEMPLATE_ID
      face search APP_ID PHOTO [--limit N]      1:N search at the app's operating point, with the top N candidates (1–20, 5)
      device reset APP_ID DEVICE_ID             clear a device's failed face-login count
      device-credential list APP_ID USER_ID | device-credential revoke APP_ID CREDENTIAL_ID
      ctid-registry add APP_ID NUMBER NAME VALID_FROM VALID_TO [PHOTO]
                                                an identity the CTID check accepts (dates YYYYMMDD, VALID_TO or 长期)
    a device and its app server (FACEGATE_URL, FACEGATE_APP_ID, FACEGATE_APP_SECRET)
      login PHOTO [--employee-number N] [--key FILE]
                                                a face login signed with this device's DPoP key (FILE, created on first
                                                use; default in ~/.local/share/facegate); a new key is bound with the
                                                employee number and a binding ticket the app server asks for
      exchange IDENTITY_TOKEN                   what the app server learns from the identity token (single use)
    keys (FACEGATE_ADMIN_KEY covering every app)
      operator-key create NAME [APP_ID...] [--expires T]   no APP_ID: every app; T: RFC 3339 time
      auditor create NAME (APP_ID... | --all-apps) [--expires T]
      operator-key list | auditor list          never the secrets
      operator-key revoke KEY_ID | auditor revoke AUDITOR_ID
    auditors (FACEGATE_URL, FACEGATE_AUDITOR_KEY or FACEGATE_ADMIN_KEY)
      audit query [key=value...]                appId kind outcome userId deviceId from to limit cursor
      audit export [key=value...]               CSV on stdout
      audit checkpoint APP_ID                   the chain head, signed: keep the output
      audit verify APP_ID [--checkpoint FILE]   recompute the chain; with a kept checkpoint, also catch a removed tail
    everywhere
      --output table|json                       table on a terminal, JSON (keys sorted) when piped
    """

    public static func run(_ arguments: [String], environment: Environment = Environment()) async -> Int32 {
        do {
            try await dispatch(arguments, environment: environment)
            return 0
        } catch let error as CLIError {
            FileHandle.standardError.write(Data("facegate: \(error.message)\n".utf8))
            // Asked for JSON, a refused call's answer too: the API's error envelope on stdout, for scripts.
            if let body = error.body, let index = arguments.firstIndex(of: "--output"), arguments.dropFirst(index + 1).first == "json" {
                FileHandle.standardOutput.write(body + Data("\n".utf8))
            }
            return error.exitCode
        } catch {
            FileHandle.standardError.write(Data("facegate: \(describe(error))\n".utf8))
            return 1
        }
    }

    /// One readable line for an error a call or a library threw: a gateway that cannot be reached is named with why, never
    /// as a Foundation error dump.
    static func describe(_ error: any Error) -> String {
        let error = error as NSError
        guard error.domain == NSURLErrorDomain else { return "\(error.localizedDescription)" }
        let url = (error.userInfo[NSURLErrorFailingURLErrorKey] as? URL).map { url in
            "\(url.scheme ?? "http")://\(url.host ?? "")\(url.port.map { ":\($0)" } ?? "")"
        } ?? "the gateway"
        let why = switch URLError.Code(rawValue: error.code) {
        case .cannotConnectToHost, .networkConnectionLost: "nothing answers there; is the gateway running, and is FACEGATE_URL right?"
        case .cannotFindHost, .dnsLookupFailed: "no such host; check FACEGATE_URL"
        case .timedOut: "it did not answer in time"
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate: "the TLS connection failed"
        default: "network error \(error.code)"
        }
        return "cannot reach \(url): \(why)"
    }

    static func dispatch(_ arguments: [String], environment: Environment) async throws {
        var arguments = arguments
        let output = try Output.take(from: &arguments)
        guard let command = arguments.first else { throw CLIError(usage, exitCode: 2) }
        // Help and version win wherever they appear: `app create --help` explains, it creates nothing.
        if arguments.contains(where: { ["--help", "-h", "help"].contains($0) }) {
            print(help(for: command))
            return
        }
        if command == "--version" || command == "version" {
            print("facegate \(version)")
            return
        }
        let rest = Array(arguments.dropFirst())
        try CommandSpec.check(command, rest)
        func admin(_ environment: Environment) throws -> APIClient { try FaceGateCLI.admin(environment, output) }
        func auditor(_ environment: Environment) throws -> APIClient { try FaceGateCLI.auditor(environment, output) }
        switch (command, rest.first) {
        case ("migrate", _):
            let pool = PostgresPool(configuration: try PostgresConfiguration(url: try environment.required("FACEGATE_DATABASE_URL")))
            let applied = try await ServiceRuntime.migrate(pool)
            print(applied.isEmpty ? "schema up to date" : "applied migrations \(applied.map(String.init).joined(separator: ", "))")
            await pool.close()
        case ("reseal", _):
            let sealer = try Sealer(key: try environment.base64Key("FACEGATE_SEALING_KEY", bytes: 32), previous: try environment.previousSealingKeys())
            let pool = PostgresPool(configuration: try PostgresConfiguration(url: try environment.required("FACEGATE_DATABASE_URL")))
            let counts = try await Resealer(database: pool, sealer: sealer).run()
            await pool.close()
            for (table, counts) in counts.sorted(by: { $0.key < $1.key }) {
                print("\(table): \(counts.checked) checked, \(counts.resealed) re-sealed")
            }
        case ("keys", _):
            let ctid = X25519PrivateKey()
            print("FACEGATE_SIGNING_KEY=\(Data(SecureRandom.bytes(32)).base64EncodedString())")
            print("FACEGATE_SEALING_KEY=\(Data(SecureRandom.bytes(32)).base64EncodedString())")
            print("FACEGATE_CTID_PRIVATE_KEY=\(Data(ctid.rawRepresentation).base64EncodedString())")
            print("FACEGATE_CTID_PUBLIC_KEY=\(Data(ctid.publicKey.rawRepresentation).base64EncodedString())")
            // One message-signing key per service: each service gets its own line as FACEGATE_SERVICE_KEY, every
            // service the public list.
            let services = ServiceKeys.generate(for: ServiceKeys.platformServices)
            for service in ServiceKeys.platformServices {
                print("FACEGATE_SERVICE_KEY_\(service.uppercased().replacingOccurrences(of: "-", with: "_"))=\(services.seeds[service]!)")
            }
            print("FACEGATE_SERVICE_PUBLIC_KEYS=\(services.publicKeys)")
            // The kiosk-orchestrator's own token key (its identity tokens only); the gateway gets the public half.
            let kiosk = Ed25519PrivateKey()
            print("FACEGATE_KIOSK_SIGNING_KEY=\(Data(kiosk.seed).base64EncodedString())")
            print("FACEGATE_KIOSK_PUBLIC_KEYS=\(Data(kiosk.publicKey.rawRepresentation).base64EncodedString())")
            // The audit chains' key, the same for the gateway, the ctid-verifier and the kiosk-orchestrator.
            print("FACEGATE_AUDIT_KEY=\(Data(SecureRandom.bytes(32)).base64EncodedString())")
            // The bootstrap operator key for the CLI and the console; the gateway needs only its SHA-256.
            let operatorKey = "fgk_admin_" + Base64URL.encode(SecureRandom.bytes(24))
            print("FACEGATE_ADMIN_KEY=\(operatorKey)")
            print("FACEGATE_ADMIN_KEY_SHA256=\(Hex.encode(SHA256.hash(operatorKey)))")
        case ("app", "create"):
            guard rest.count >= 2 else {
                throw CLIError("usage: facegate app create NAME [--formal] [--model M] [--threshold D | --false-match-rate R | --fpir R [--for-gallery-size N]] [--binding B] [--binding-policy P]", exitCode: 2)
            }
            guard !rest[1].hasPrefix("-") else { throw CLIError("the app's NAME comes first: facegate app create NAME [options]", exitCode: 2) }
            var body: [String: Any] = ["name": rest[1]]
            if rest.contains("--formal") {
                body["modules"] = ["faceLogin": "formal", "ctid": "formal", "kiosk": "formal", "deviceAuth": "formal"]
            }
            if let index = rest.firstIndex(of: "--threshold") {
                guard index + 1 < rest.count, let value = Double(rest[index + 1]), value.isFinite, value > 0 else {
                    throw CLIError("--threshold needs a positive number (a distance in the face model's units)", exitCode: 2)
                }
                body["matchThreshold"] = value
            }
            if let index = rest.firstIndex(of: "--false-match-rate") {
                guard index + 1 < rest.count, let value = Double(rest[index + 1]), value > 0 else {
                    throw CLIError("--false-match-rate needs a rate such as 1e-5", exitCode: 2)
                }
                body["falseMatchRate"] = value
            }
            try operatingPoint(rest, into: &body)
            for (flag, field) in [("--model", "faceModel"), ("--binding", "deviceBinding"), ("--binding-policy", "deviceBindingPolicy")] {
                if let value = try option(rest, flag) { body[field] = value }
            }
            try await admin(environment).print("POST", "/v1/apps", json: body)
        case ("app", "binding"):
            var body = ["deviceBinding": try argument(rest, 2, "BINDING")]
            if rest.count > 3 { body["deviceBindingPolicy"] = rest[3] }
            try await admin(environment).print("PATCH", "/v1/apps/\(try argument(rest, 1, "APP_ID"))", json: body)
        case ("app", "migrate-model"):
            let app = try argument(rest, 1, "APP_ID")
            let positional = rest.dropFirst(2).filter { !$0.hasPrefix("--") }
            let model = positional.first ?? FaceModel.defaultForNewApps.rawValue
            if rest.contains("--re-embed") {
                // Call after call, until no kept photo is left to try; the counts and refusals of every call, the last status.
                let client = try admin(environment)
                var body: [String: Any] = ["to": model]
                var answer: [String: Any]
                var (reembedded, refused) = (0, [Any]())
                repeat {
                    answer = try await client.json("POST", "/v1/apps/\(app)/face-model-migration/re-embed", json: body)
                    reembedded += answer["reembedded"] as? Int ?? 0
                    refused += answer["refused"] as? [Any] ?? []
                    body["after"] = answer["next"]
                } while answer["next"] is String
                answer["reembedded"] = reembedded
                answer["refused"] = refused
                output.write(answer)
            }
            if rest.contains("--switch") {
                try await admin(environment).print("POST", "/v1/apps/\(app)/face-model-migration", json: ["to": model])
            } else if !rest.contains("--re-embed") {
                try await admin(environment).print("GET", "/v1/apps/\(app)/face-model-migration?to=\(model)")
            }
        case ("app", "get"):
            try await admin(environment).print("GET", "/v1/apps/\(try argument(rest, 1, "APP_ID"))")
        case ("app", "list"):
            try await admin(environment).print("GET", "/v1/apps")
        case ("app", "settings"):
            let app = try argument(rest, 1, "APP_ID")
            let client = try admin(environment)
            var body: [String: Any] = [:]
            if let value = try option(rest, "--threshold") {
                guard let number = Double(value), number > 0 else { throw CLIError("--threshold needs a positive number", exitCode: 2) }
                body["matchThreshold"] = number
            }
            if let value = try option(rest, "--false-match-rate") {
                guard let number = Double(value), number > 0 else { throw CLIError("--false-match-rate needs a rate such as 1e-5", exitCode: 2) }
                body["falseMatchRate"] = number
            }
            try operatingPoint(rest, into: &body)
            if let value = try option(rest, "--keep-photos") {
                guard let flag = Bool(value) else { throw CLIError("--keep-photos takes true or false", exitCode: 2) }
                body["keepEnrollmentPhotos"] = flag
            }
            // Liveness and quotas are whole objects in the API: the half not named is kept from the app as it is.
            let liveness = try [("--liveness-login", "faceLogin"), ("--liveness-kiosk", "kiosk")].compactMap { flag, field in
                try option(rest, flag).map { value in
                    guard ["off", "active"].contains(value) else { throw CLIError("\(flag) takes off or active", exitCode: 2) }
                    return (field, value)
                }
            }
            let quotas = try [("--daily-calls", "dailyCalls"), ("--gallery-size", "gallerySize")].compactMap { flag, field in
                try option(rest, flag).map { value in
                    guard let number = Int(value), number >= 0 else { throw CLIError("\(flag) takes a whole number, 0 or more", exitCode: 2) }
                    return (field, number)
                }
            }
            guard !body.isEmpty || !liveness.isEmpty || !quotas.isEmpty else {
                throw CLIError("app settings APP_ID: name at least one setting to change (facegate app settings --help)", exitCode: 2)
            }
            if !liveness.isEmpty || !quotas.isEmpty {
                let current = try await client.json("GET", "/v1/apps/\(app)")
                if !liveness.isEmpty {
                    body["liveness"] = (current["liveness"] as? [String: Any] ?? [:]).merging(liveness.map { ($0.0, $0.1 as Any) }) { _, new in new }
                }
                if !quotas.isEmpty {
                    body["quotas"] = (current["quotas"] as? [String: Any] ?? [:]).merging(quotas.map { ($0.0, $0.1 as Any) }) { _, new in new }
                }
            }
            try await client.print("PATCH", "/v1/apps/\(app)", json: body)
        case ("app", "delete"):
            let app = try argument(rest, 1, "APP_ID")
            guard rest.contains("--yes") else {
                throw CLIError("app delete erases the app's users, templates, devices, kiosks and CTID rows for good; add --yes to go on", exitCode: 2)
            }
            try await admin(environment).print("DELETE", "/v1/apps/\(app)")
            FileHandle.standardError.write(Data("app \(app) deleted; its audit trail stays\n".utf8))
        case ("app", "modules"):
            let names = ["faceLogin", "ctid", "kiosk", "deviceAuth"], states = ["disabled", "trial", "formal"]
            var modules: [String: String] = [:]
            for pair in rest.dropFirst(2) {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { throw CLIError("expected MODULE=STATE, got \(pair)", exitCode: 2) }
                guard names.contains(parts[0]) else {
                    throw CLIError("no module '\(parts[0])'; the modules are \(names.joined(separator: ", "))", exitCode: 2)
                }
                guard states.contains(parts[1]) else {
                    throw CLIError("\(parts[0]): no state '\(parts[1])'; the states are \(states.joined(separator: ", "))", exitCode: 2)
                }
                modules[parts[0]] = parts[1]
            }
            guard !modules.isEmpty else { throw CLIError("app modules APP_ID MODULE=STATE...: name at least one module", exitCode: 2) }
            try await admin(environment).print("PATCH", "/v1/apps/\(try argument(rest, 1, "APP_ID"))", json: ["modules": modules])
        case ("app", "rotate-secret"):
            let app = try argument(rest, 1, "APP_ID")
            var body: [String: Any] = [:]
            if let grace = try option(rest, "--grace") {
                guard let seconds = Int(grace), (0...86400).contains(seconds) else { throw CLIError("--grace takes 0–86400 seconds", exitCode: 2) }
                body["previousSecretValidFor"] = seconds
            }
            if rest.contains("--revoke-previous") {
                guard body.isEmpty else { throw CLIError("--grace and --revoke-previous exclude each other", exitCode: 2) }
                body["previousSecretValidFor"] = 0
            }
            try await admin(environment).print("POST", "/v1/apps/\(app)/secret", json: body)
        case ("app", "revoke-previous-secret"):
            try await admin(environment).print("DELETE", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/secret/previous")
        case ("kiosk", "add"):
            var body: [String: Any] = ["name": try argument(rest, 2, "NAME"), "jkt": try argument(rest, 3, "JKT")]
            let allowed = zip(rest, rest.dropFirst()).filter { $0.0 == "--allow" }.map(\.1)
            if !allowed.isEmpty { body["allowedAddresses"] = allowed }
            try await admin(environment).print("POST", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/kiosks", json: body)
        case ("kiosk", "list"):
            try await admin(environment).print("GET", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/kiosks")
        case ("kiosk", "revoke"):
            try await admin(environment).print("DELETE", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/kiosks/\(try argument(rest, 2, "KIOSK_ID"))")
        case ("user", "create"):
            try await admin(environment).print("POST", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/users",
                                               json: ["employeeNumber": try argument(rest, 2, "EMPLOYEE_NUMBER"), "name": try argument(rest, 3, "NAME")])
        case ("user", "list"):
            // Every page, as one list.
            let client = try admin(environment)
            let path = "/v1/apps/\(try argument(rest, 1, "APP_ID"))/users?limit=500"
            var items: [Any] = []
            var cursor: String?
            repeat {
                let page = try await client.json("GET", path + (cursor.map { "&cursor=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) } ?? ""))
                items += page["items"] as? [Any] ?? []
                cursor = page["nextCursor"] as? String
            } while cursor != nil
            output.write(["items": items])
        case ("user", "import"):
            let people = try UserImport.people(at: try argument(rest, 2, "DIR|CSV"))
            let concurrency = try option(rest, "--concurrency").map { value in
                guard let number = Int(value), (1...32).contains(number) else { throw CLIError("--concurrency takes 1–32", exitCode: 2) }
                return number
            } ?? 4
            let report = try option(rest, "--report") ?? "import-report.csv"
            let outcomes = try await UserImport(client: try admin(environment), appId: try argument(rest, 1, "APP_ID"), concurrency: concurrency)
                .run(people, progress: ImportProgress(total: people.count))
            let refused = try UserImport.summarize(outcomes, people: people.count, report: report)
            guard refused == 0 else { throw CLIError("\(refused) photos not enrolled (see \(report))", exitCode: 1) }
        case ("user", "get"):
            try await admin(environment).print("GET", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/users/\(try argument(rest, 2, "USER_ID"))")
        case ("user", "reset"):
            try await admin(environment).print("POST", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/users/\(try argument(rest, 2, "USER_ID"))/reset")
        case ("user", "delete"):
            try await admin(environment).print("DELETE", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/users/\(try argument(rest, 2, "USER_ID"))")
        case ("enroll", _):
            let app = try argument(rest, 0, "APP_ID"), user = try argument(rest, 1, "USER_ID")
            guard rest.count >= 3 else { throw CLIError("usage: facegate enroll APP_ID USER_ID PHOTO...", exitCode: 2) }
            let client = try admin(environment)
            // Each photo's answer on stdout and its outcome, named, on stderr; a refused or unreadable photo does not stop the
            // others (an unreachable server does).
            let photos = rest.dropFirst(2)
            var refused: [String] = []
            for path in photos {
                do {
                    guard let data = FileManager.default.contents(atPath: path) else { throw CLIError("cannot read the file", exitCode: 1) }
                    let type = path.lowercased().hasSuffix(".png") ? "image/png" : "image/jpeg"
                    try await client.print("POST", "/v1/apps/\(app)/users/\(user)/faces", body: data, contentType: type)
                    FileHandle.standardError.write(Data("\(path): enrolled\n".utf8))
                } catch let error as CLIError {
                    FileHandle.standardError.write(Data("\(path): not enrolled: \(error.message)\n".utf8))
                    refused.append(path)
                }
            }
            guard refused.isEmpty else {
                throw CLIError("\(refused.count) of \(photos.count) photos not enrolled: \(refused.joined(separator: ", "))", exitCode: 1)
            }
        case ("face", "list"):
            try await admin(environment).print("GET", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/users/\(try argument(rest, 2, "USER_ID"))/faces")
        case ("face", "delete"):
            try await admin(environment).print("DELETE", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/users/\(try argument(rest, 2, "USER_ID"))"
                                               + "/faces/\(try argument(rest, 3, "TEMPLATE_ID"))")
        case ("face", "search"):
            let limit = try option(rest, "--limit").map { value in
                guard let number = Int(value), (1...20).contains(number) else { throw CLIError("--limit takes 1–20", exitCode: 2) }
                return "?limit=\(number)"
            } ?? ""
            let path = try argument(rest, 2, "PHOTO")
            guard let data = FileManager.default.contents(atPath: path) else { throw CLIError("cannot read \(path)", exitCode: 1) }
            try await admin(environment).print("POST", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/faces/search" + limit, body: data,
                                               contentType: path.lowercased().hasSuffix(".png") ? "image/png" : "image/jpeg")
        case ("device", "reset"):
            try await admin(environment).print("POST", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/devices/\(try argument(rest, 2, "DEVICE_ID"))/reset")
        case ("device-credential", "list"):
            try await admin(environment).print("GET", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/users/\(try argument(rest, 2, "USER_ID"))/device-credentials")
        case ("device-credential", "revoke"):
            try await admin(environment).print("DELETE", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/device-credentials/\(try argument(rest, 2, "CREDENTIAL_ID"))")
        case ("ctid-registry", "add"):
            var body: [String: Any] = ["number": try argument(rest, 2, "NUMBER"), "name": try argument(rest, 3, "NAME"),
                                       "validDateStart": try argument(rest, 4, "VALID_FROM"), "validDateEnd": try argument(rest, 5, "VALID_TO")]
            if rest.count > 6 {
                guard let photo = FileManager.default.contents(atPath: rest[6]) else { throw CLIError("cannot read \(rest[6])", exitCode: 1) }
                body["photoData"] = photo.base64EncodedString()
            }
            try await admin(environment).print("POST", "/v1/apps/\(try argument(rest, 1, "APP_ID"))/ctid-registry", json: body)
        case ("login", _):
            try await DeviceLogin(environment: environment, output: output).run(photo: try argument(rest, 0, "PHOTO"),
                                                                                employeeNumber: try option(rest, "--employee-number"),
                                                                                keyFile: try option(rest, "--key"))
        case ("exchange", _):
            try await DeviceLogin(environment: environment, output: output).exchange(try argument(rest, 0, "IDENTITY_TOKEN"))
        case ("auditor", "create"), ("operator-key", "create"):
            let collection = command == "auditor" ? "/v1/auditors" : "/v1/operator-keys"
            var arguments = Array(rest.dropFirst(1))
            var body: [String: Any] = [:]
            if let index = arguments.firstIndex(of: "--expires") {
                guard index + 1 < arguments.count, ISO8601DateFormatter().date(from: arguments[index + 1]) != nil else {
                    throw CLIError("--expires needs an RFC 3339 time such as 2027-01-31T00:00:00Z", exitCode: 2)
                }
                body["expiresAt"] = arguments[index + 1]
                arguments.removeSubrange(index...index + 1)
            }
            if let index = arguments.firstIndex(of: "--all-apps") {
                body["allApps"] = true
                arguments.remove(at: index)
            }
            body["name"] = try argument(arguments, 0, "NAME")
            if arguments.count > 1 { body["appIds"] = Array(arguments.dropFirst()) }
            if command == "auditor", arguments.count < 2, body["allApps"] == nil {
                throw CLIError("auditor create NAME (APP_ID... | --all-apps): an auditor key reads only the apps it is given", exitCode: 2)
            }
            try await admin(environment).print("POST", collection, json: body)
        case ("auditor", "list"), ("operator-key", "list"):
            try await admin(environment).print("GET", command == "auditor" ? "/v1/auditors" : "/v1/operator-keys")
        case ("auditor", "revoke"), ("operator-key", "revoke"):
            let collection = command == "auditor" ? "/v1/auditors" : "/v1/operator-keys"
            try await admin(environment).print("DELETE", "\(collection)/\(try argument(rest, 1, command == "auditor" ? "AUDITOR_ID" : "KEY_ID"))")
        case ("audit", "query"):
            try await auditor(environment).print("GET", "/v1/audit/transactions" + (try queryString(rest.dropFirst())))
        case ("audit", "export"):
            try await auditor(environment).stream("GET", "/v1/audit/transactions.csv" + (try queryString(rest.dropFirst())))
        case ("audit", "checkpoint"):
            try await auditor(environment).print("GET", "/v1/audit/checkpoint?appId=\(try argument(rest, 1, "APP_ID"))")
        case ("audit", "verify"):
            var query = "appId=\(try argument(rest, 1, "APP_ID"))"
            if let index = rest.firstIndex(of: "--checkpoint") {
                guard index + 1 < rest.count else { throw CLIError("--checkpoint needs a FILE (the output of audit checkpoint)", exitCode: 2) }
                guard let data = FileManager.default.contents(atPath: rest[index + 1]) else { throw CLIError("cannot read \(rest[index + 1])", exitCode: 1) }
                // The saved output of `audit checkpoint`, or the bare token.
                let saved = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
                let token = (saved?["checkpoint"] as? String ?? String(decoding: data, as: UTF8.self)).trimmingCharacters(in: .whitespacesAndNewlines)
                query += "&checkpoint=" + token
            }
            try await auditor(environment).print("GET", "/v1/audit/verify?" + query)
        default:
            throw CLIError(usage, exitCode: 2)
        }
    }

    /// The usage lines of one command (`facegate auditor --help`), with their continuation lines; all of
    /// them for anything else.
    static func help(for command: String) -> String {
        var lines: [Substring] = []
        var taking = false
        for line in usage.split(separator: "\n") {
            let text = line.drop { $0 == " " }
            let indent = line.count - text.count
            if indent == 2 {
                taking = text.hasPrefix(command + " ") || text.contains("| \(command) ")
            } else if indent < 2 {
                taking = false
            }
            if taking { lines.append(line) }
        }
        return lines.isEmpty ? usage : "usage: facegate " + command + " …\n" + lines.joined(separator: "\n")
    }

    /// The value after `flag`, nil when the flag is absent; a flag without a value stops with exit 2.
    static func option(_ list: [String], _ flag: String) throws -> String? {
        guard let index = list.firstIndex(of: flag) else { return nil }
        guard index + 1 < list.count, !list[index + 1].hasPrefix("--") else { throw CLIError("\(flag) needs a value", exitCode: 2) }
        return list[index + 1]
    }

    /// `--fpir R [--for-gallery-size N]`: the app's threshold as a false-positive identification rate over a gallery.
    static func operatingPoint(_ list: [String], into body: inout [String: Any]) throws {
        let size = try option(list, "--for-gallery-size")
        guard let value = try option(list, "--fpir") else {
            if size != nil { throw CLIError("--for-gallery-size goes with --fpir", exitCode: 2) }
            return
        }
        guard let rate = Double(value), rate > 0, rate < 1 else { throw CLIError("--fpir needs a rate such as 0.01", exitCode: 2) }
        body["falsePositiveIdentificationRate"] = rate
        if let size {
            guard let templates = Int(size), templates > 0 else { throw CLIError("--for-gallery-size needs a number of templates", exitCode: 2) }
            body["forGallerySize"] = templates
        }
    }

    static func argument(_ list: [String], _ index: Int, _ name: String) throws -> String {
        guard index < list.count, !list[index].isEmpty else { throw CLIError("missing \(name)", exitCode: 2) }
        return list[index]
    }

    /// The audit filters `audit query` and `audit export` take.
    static let auditFilters = ["appId", "kind", "outcome", "userId", "deviceId", "from", "to", "limit", "cursor"]

    static func queryString(_ pairs: ArraySlice<String>) throws -> String {
        var components = URLComponents()
        components.queryItems = try pairs.map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw CLIError("expected key=value, got \(pair)", exitCode: 2) }
            guard auditFilters.contains(parts[0]) else {
                throw CLIError("no filter '\(parts[0])'; the filters are \(auditFilters.joined(separator: ", "))", exitCode: 2)
            }
            return URLQueryItem(name: parts[0], value: parts[1])
        }
        return components.queryItems?.isEmpty == false ? "?" + (components.percentEncodedQuery ?? "") : ""
    }

    static func admin(_ environment: Environment, _ output: Output) throws -> APIClient {
        APIClient(base: gatewayURL(environment), authorization: "Bearer " + (try environment.required("FACEGATE_ADMIN_KEY")), output: output)
    }

    static func auditor(_ environment: Environment, _ output: Output) throws -> APIClient {
        let key = environment.optionalString("FACEGATE_AUDITOR_KEY") ?? environment.optionalString("FACEGATE_ADMIN_KEY")
        guard let key else { throw CLIError("set FACEGATE_AUDITOR_KEY (or FACEGATE_ADMIN_KEY)", exitCode: 2) }
        return APIClient(base: gatewayURL(environment), authorization: "Bearer " + key, output: output)
    }

    static func gatewayURL(_ environment: Environment) -> String { environment.string("FACEGATE_URL", default: "http://127.0.0.1:8080") }
}

struct CLIError: Error {
    var message: String
    var exitCode: Int32
    /// The API's error envelope, for a refused call.
    var body: Data?
    init(_ message: String, exitCode: Int32, body: Data? = nil) {
        self.message = message
        self.exitCode = exitCode
        self.body = body
    }
}

/// A minimal Bearer-authenticated client for the gateway's JSON API; prints answers to stdout.
struct APIClient {
    var base: String
    /// The `Authorization` header: an operator's or auditor's Bearer key, or an app server's Basic credentials.
    var authorization: String
    var output: Output

    /// The request with the caller's credential and, when given, a JSON body or `body` of `contentType`.
    func request(_ method: String, _ path: String, json: [String: Any]? = nil, body: Data? = nil, contentType: String? = nil) throws -> URLRequest {
        guard let url = URL(string: base + path) else { throw CLIError("bad URL \(base + path)", exitCode: 2) }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue(authorization, forHTTPHeaderField: "Authorization")
        if let json {
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        } else if let body {
            request.httpBody = body
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    func print(_ method: String, _ path: String, json: [String: Any]? = nil, body: Data? = nil, contentType: String? = nil) async throws {
        let request = try request(method, path, json: json, body: body, contentType: contentType)
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard (200..<300).contains(status) else { throw Self.refusal(method, path, status, data) }
        guard !data.isEmpty else { return }
        let answer = try? JSONSerialization.jsonObject(with: data)
        if let answer { output.write(answer) } else { FileHandle.standardOutput.write(data) }
        if let app = answer as? [String: Any], app["deviceBinding"] as? String == "header" {
            let warning = "warning: this app identifies devices by the X-Device-Id header, which any caller can set; "
                + "bind devices by key with `facegate app binding APP_ID dpop`\n"
            FileHandle.standardError.write(Data(warning.utf8))
        }
    }

    /// A refused call as one line: status, the API's error code and message, its transaction id, and for 401 what to check.
    static func refusal(_ method: String, _ path: String, _ status: Int, _ data: Data) -> CLIError {
        var line = "\(method) \(path) answered \(status)"
        if let error = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["error"] as? [String: Any] {
            if let code = error["code"] as? String { line += " \(code)" }
            if let message = error["message"] as? String { line += ": \(message)" }
            if let transaction = error["transactionId"] as? String { line += " (transaction \(transaction))" }
        }
        if status == 401 { line += "; the key was refused: wrong, revoked or expired (FACEGATE_ADMIN_KEY, FACEGATE_AUDITOR_KEY)" }
        return CLIError(line, exitCode: 1, body: (try? JSONSerialization.jsonObject(with: data)) != nil ? data : nil)
    }

    /// A JSON object answer, for commands that combine several calls.
    func json(_ method: String, _ path: String, json body: [String: Any]? = nil) async throws -> [String: Any] {
        let request = try request(method, path, json: body)
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard (200..<300).contains(status) else { throw Self.refusal(method, path, status, data) }
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw CLIError("\(method) \(path) answered \(status) with no JSON object", exitCode: 1)
        }
        return object
    }

    /// Writes the answer's body to stdout as it arrives (an audit export can be larger than memory).
    func stream(_ method: String, _ path: String) async throws {
        let status = try await StdoutDownload().run(try request(method, path))
        guard (200..<300).contains(status) else { throw CLIError("\(method) \(path) answered \(status)", exitCode: 1) }
    }
}

/// One request whose body goes to stdout chunk by chunk; answers the HTTP status.
final class StdoutDownload: NSObject, URLSessionDataDelegate, @unchecked Sendable {  // the session calls it on one delegate queue
    private var status = 0
    private var continuation: CheckedContinuation<Int, Error>?

    func run(_ request: URLRequest) async throws -> Int {
        let session = URLSession(configuration: .ephemeral, delegate: self, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        return try await withCheckedThrowingContinuation { continuation in
            self.continuation = continuation
            session.dataTask(with: request).resume()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        status = (response as? HTTPURLResponse)?.statusCode ?? 0
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        (200..<300).contains(status) ? FileHandle.standardOutput.write(data) : FileHandle.standardError.write(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error { continuation?.resume(throwing: error) } else { continuation?.resume(returning: status) }
        continuation = nil
    }
}
