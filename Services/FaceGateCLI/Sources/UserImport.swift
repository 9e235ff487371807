import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `facegate user import APP_ID DIR|CSV`: onboarding many people at once. Each person becomes a user (created once:
/// people already in the app are matched by employee number) and each of their photos a template. Every call carries an
/// `Idempotency-Key` made from the app, the number and the photo's SHA-256, so a rerun after an interruption replays what
/// was done (within the API's 24 hours) and a person who already holds as many templates as they have photos is skipped.
/// Several people are imported at once, under the server's rate: a 429 waits its `Retry-After` and tries again.
struct UserImport: Sendable {
    struct Person: Sendable {
        var employeeNumber: String
        var name: String
        var photos: [String]
    }

    /// What became of one photo: `enrolled`, `skipped` (the person was imported before) or the API's error code.
    struct Outcome: Sendable {
        var employeeNumber: String
        var photo: String
        var result: String
        var message: String
    }

    let client: APIClient
    let appId: String
    let concurrency: Int

    /// A folder of one folder per person, named `NUMBER` or `NUMBER Name`, holding their JPEG/PNG photos; or a CSV of
    /// `employeeNumber,name,photo` rows (photo paths relative to the CSV; a person may have several rows).
    static func people(at path: String) throws -> [Person] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { throw CLIError("no such folder or file: \(path)", exitCode: 2) }
        if isDirectory.boolValue {
            let folders = try FileManager.default.contentsOfDirectory(atPath: path).filter { !$0.hasPrefix(".") }.sorted()
            return try folders.compactMap { folder -> Person? in
                let directory = (path as NSString).appendingPathComponent(folder)
                var inner: ObjCBool = false
                guard FileManager.default.fileExists(atPath: directory, isDirectory: &inner), inner.boolValue else { return nil }
                let photos = try FileManager.default.contentsOfDirectory(atPath: directory).filter { Self.isPhoto($0) }.sorted()
                    .map { (directory as NSString).appendingPathComponent($0) }
                let parts = folder.split(separator: " ", maxSplits: 1).map(String.init)
                return Person(employeeNumber: parts[0], name: parts.count > 1 ? parts[1] : parts[0], photos: photos)
            }
        }
        let base = (path as NSString).deletingLastPathComponent
        var people: [String: Person] = [:]
        var order: [String] = []
        for (index, line) in String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
            .split(whereSeparator: \.isNewline).enumerated() {
            let fields = line.split(separator: ",", maxSplits: 2, omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            if index == 0, fields.first?.lowercased() == "employeenumber" { continue }
            guard fields.count == 3, !fields[0].isEmpty, !fields[1].isEmpty, !fields[2].isEmpty else {
                throw CLIError("\(path) line \(index + 1): expected employeeNumber,name,photo", exitCode: 2)
            }
            let photo = fields[2].hasPrefix("/") ? fields[2] : (base as NSString).appendingPathComponent(fields[2])
            if people[fields[0]] == nil { order.append(fields[0]) }
            people[fields[0], default: Person(employeeNumber: fields[0], name: fields[1], photos: [])].photos.append(photo)
        }
        return order.compactMap { people[$0] }
    }

    static func isPhoto(_ name: String) -> Bool { [".jpg", ".jpeg", ".png"].contains { name.lowercased().hasSuffix($0) } }

    func run(_ people: [Person], progress: ImportProgress) async throws -> [Outcome] {
        // The app's people as they are: who exists, and with how many templates.
        var existing: [String: (id: String, faces: Int)] = [:]
        var cursor: String?
        repeat {
            let page = try await call("GET", "/v1/apps/\(appId)/users?limit=500" + (cursor.map { "&cursor=\($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0)" } ?? ""))
            for user in page.object["items"] as? [[String: Any]] ?? [] {
                if let number = user["employeeNumber"] as? String, let id = user["userId"] as? String { existing[number] = (id, user["faces"] as? Int ?? 0) }
            }
            cursor = page.object["nextCursor"] as? String
        } while cursor != nil
        let known = existing
        return try await withThrowingTaskGroup(of: [Outcome].self) { group in
            var (outcomes, next, running) = ([Outcome](), 0, 0)
            while true {
                while running < max(1, concurrency), next < people.count {
                    let person = people[next]
                    next += 1
                    running += 1
                    group.addTask { try await self.importPerson(person, existing: known[person.employeeNumber]) }
                }
                guard let done = try await group.next() else { return outcomes }
                running -= 1
                outcomes += done
                progress.person(done)
            }
        }
    }

    private func importPerson(_ person: Person, existing: (id: String, faces: Int)?) async throws -> [Outcome] {
        func outcome(_ photo: String, _ result: String, _ message: String = "") -> Outcome {
            Outcome(employeeNumber: person.employeeNumber, photo: photo, result: result, message: message)
        }
        if let existing, existing.faces >= person.photos.count, !person.photos.isEmpty {
            return person.photos.map { outcome($0, "skipped", "already imported: \(existing.faces) templates") }
        }
        guard !person.photos.isEmpty else { return [outcome("", "NO_PHOTO", "no JPEG or PNG photo for this person")] }
        let userId: String
        if let existing {
            userId = existing.id
        } else {
            let created = try await call("POST", "/v1/apps/\(appId)/users", json: ["employeeNumber": person.employeeNumber, "name": person.name],
                                         idempotencyKey: "import-user-\(appId)-\(person.employeeNumber)")
            guard let id = created.object["userId"] as? String else {
                return person.photos.map { outcome($0, created.code ?? "HTTP_\(created.status)", created.message) }
            }
            userId = id
        }
        var outcomes: [Outcome] = []
        for photo in person.photos {
            // Once the user holds as many templates as the app allows, the rest would each cost the matcher a refusal.
            if outcomes.last?.result == "FACE_LIMIT_REACHED" {
                outcomes.append(outcome(photo, "FACE_LIMIT_REACHED", "not sent: the user already holds as many templates as the app allows"))
                continue
            }
            guard let data = FileManager.default.contents(atPath: photo) else {
                outcomes.append(outcome(photo, "UNREADABLE", "cannot read the file"))
                continue
            }
            let digest = SHA256.hash(Array(data)).prefix(16).map { String(format: "%02x", $0) }.joined()
            let answer = try await call("POST", "/v1/apps/\(appId)/users/\(userId)/faces", body: data,
                                        contentType: photo.lowercased().hasSuffix(".png") ? "image/png" : "image/jpeg",
                                        idempotencyKey: "import-face-\(appId)-\(person.employeeNumber)-\(digest)")
            outcomes.append(answer.status == 201 ? outcome(photo, "enrolled") : outcome(photo, answer.code ?? "HTTP_\(answer.status)", answer.message))
        }
        return outcomes
    }

    struct Answer {
        var status: Int
        var object: [String: Any]
        var code: String? { (object["error"] as? [String: Any])?["code"] as? String }
        var message: String { (object["error"] as? [String: Any])?["message"] as? String ?? "" }
    }

    /// One call, again after each 429's `Retry-After` (up to ten times); a refused credential or a server that is down
    /// stops the import.
    private func call(_ method: String, _ path: String, json: [String: Any]? = nil, body: Data? = nil, contentType: String? = nil,
                      idempotencyKey: String? = nil) async throws -> Answer {
        var request = try client.request(method, path, json: json, body: body, contentType: contentType)
        if let idempotencyKey { request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key") }
        for _ in 0..<10 {
            let (data, response) = try await URLSession.shared.data(for: request)
            let http = response as? HTTPURLResponse
            let status = http?.statusCode ?? 0
            if status == 429 {
                let wait = Double(http?.value(forHTTPHeaderField: "Retry-After") ?? "") ?? 1
                try await Task.sleep(for: .seconds(min(max(wait, 0.1), 60)))
                continue
            }
            if status == 401 || status == 403 || status >= 500 { throw APIClient.refusal(method, path, status, data) }
            return Answer(status: status, object: (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
        }
        throw CLIError("\(method) \(path): still rate limited after ten waits", exitCode: 1)
    }

    /// The summary: counts by result, then each refused photo by reason, on stderr; the same rows as CSV in `report`.
    static func summarize(_ outcomes: [Outcome], people: Int, report: String) throws -> Int {
        let refused = outcomes.filter { !["enrolled", "skipped"].contains($0.result) }
        var csv = "employeeNumber,photo,result,message\n"
        for outcome in outcomes {
            csv += [outcome.employeeNumber, outcome.photo, outcome.result, outcome.message].map(csvField).joined(separator: ",") + "\n"
        }
        try Data(csv.utf8).write(to: URL(fileURLWithPath: report))
        var lines = ["imported \(people) people: " + Dictionary(grouping: outcomes, by: \.result).map { "\($0.value.count) \($0.key)" }.sorted().joined(separator: ", ")]
        for (reason, rows) in Dictionary(grouping: refused, by: \.result).sorted(by: { $0.key < $1.key }) {
            lines.append("\(reason) (\(rows.count)):")
            lines += rows.map { "  \($0.photo.isEmpty ? $0.employeeNumber : $0.photo): \($0.message)" }
        }
        lines.append("report: \(report)")
        FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        return refused.count
    }

    static func csvField(_ value: String) -> String {
        value.contains(where: { ",\"\n".contains($0) }) ? "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : value
    }
}

/// Progress of an import on stderr: a bar redrawn in place on a terminal, a line per person otherwise.
final class ImportProgress: @unchecked Sendable {  // used from the importing task only
    private let total: Int
    private let terminal = isatty(STDERR_FILENO) == 1
    private var done = 0
    private var refused = 0

    init(total: Int) { self.total = total }

    func person(_ outcomes: [UserImport.Outcome]) {
        done += 1
        refused += outcomes.filter { !["enrolled", "skipped"].contains($0.result) }.count
        if terminal {
            let width = 30, filled = total == 0 ? width : width * done / total
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            FileHandle.standardError.write(Data("\r[\(bar)] \(done)/\(total) people, \(refused) photos refused\(done == total ? "\n" : "")".utf8))
        } else {
            let summary = outcomes.map { $0.result }.joined(separator: " ")
            FileHandle.standardError.write(Data("\(done)/\(total) \(outcomes.first?.employeeNumber ?? "?"): \(summary)\n".utf8))
        }
    }
}
