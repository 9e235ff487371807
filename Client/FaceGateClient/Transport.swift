import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// One HTTP body with its content type.
struct RequestBody: Sendable {
    var data: Data
    var contentType: String

    static func json(_ value: some Encodable) throws(FaceGateError) -> RequestBody {
        do {
            return RequestBody(data: try JSONEncoder().encode(value), contentType: "application/json")
        } catch {
            throw .usage("the request could not be encoded: \(error)")
        }
    }

    /// A raw image body typed by its magic bytes. Bytes that are neither JPEG nor PNG still go as
    /// `image/jpeg`, so the server gives its verdict (`IMAGE_FORMAT_ERROR`) rather than this library.
    static func image(_ data: Data) -> RequestBody {
        RequestBody(data: data, contentType: ImageKind.of(data) == .png ? "image/png" : "image/jpeg")
    }

    /// `multipart/form-data` with a `challengeId` text field and repeated `frame` file fields, in order.
    static func frames(_ frames: [Data], challengeId: String) -> RequestBody {
        var form = MultipartForm()
        form.addField("challengeId", challengeId)
        for (index, frame) in frames.enumerated() {
            let kind = ImageKind.of(frame)
            form.addFile("frame", fileName: "frame\(index).\(kind == .png ? "png" : "jpg")",
                         contentType: kind == .png ? "image/png" : "image/jpeg", data: frame)
        }
        return form.body()
    }
}

enum ImageKind {
    case jpeg, png, other
    static func of(_ data: Data) -> ImageKind {
        if data.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        return .other
    }
}

struct MultipartForm {
    let boundary = "facegate-" + UUID().uuidString
    private var data = Data()

    mutating func addField(_ name: String, _ value: String) {
        data.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8))
    }

    mutating func addFile(_ name: String, fileName: String, contentType: String, data file: Data) {
        data.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(fileName)\"\r\nContent-Type: \(contentType)\r\n\r\n".utf8))
        data.append(file)
        data.append(Data("\r\n".utf8))
    }

    func body() -> RequestBody {
        var body = data
        body.append(Data("--\(boundary)--\r\n".utf8))
        return RequestBody(data: body, contentType: "multipart/form-data; boundary=\(boundary)")
    }
}

/// An HTTP answer that was a success (2xx).
struct HTTPAnswer: Sendable {
    var status: Int
    var body: Data

    func decode<T: Decodable>(_ type: T.Type) throws(FaceGateError) -> T {
        do {
            return try JSONDecoder().decode(type, from: body)
        } catch {
            throw .decoding("HTTP \(status): the answer is not a valid \(T.self): \(error)")
        }
    }
}

/// The calls every client makes: base URL, device id and DPoP proof, access token (refreshed through the
/// app's hook and retried once), timeout, cancellation, and the error envelope turned into `FaceGateError`.
final class Transport: Sendable {
    let configuration: FaceGateConfiguration
    let session: URLSession
    private let token: Mutex<String?>

    /// `sessionDelegate`: for tests, to watch the session end.
    init(configuration: FaceGateConfiguration, sessionDelegate: (any URLSessionDelegate)? = nil) {
        self.configuration = configuration
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = configuration.requestTimeout.timeInterval
        sessionConfiguration.timeoutIntervalForResource = configuration.requestTimeout.timeInterval * 2
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: sessionConfiguration, delegate: sessionDelegate, delegateQueue: nil)
        token = Mutex(configuration.accessToken)
    }

    deinit { session.finishTasksAndInvalidate() }

    func setAccessToken(_ value: String?) { token.withLock { $0 = value } }

    /// The current access token, asking the refresh hook when there is none.
    func currentAccessToken() async throws(FaceGateError) -> String {
        if let current = token.withLock({ $0 }) { return current }
        return try await refreshedAccessToken()
    }

    func refreshedAccessToken() async throws(FaceGateError) -> String {
        guard let refresh = configuration.refreshAccessToken else {
            throw .usage("no access token: call setAccessToken(_:) or configure refreshAccessToken")
        }
        let fresh: String
        do {
            fresh = try await refresh()
        } catch let error as FaceGateError {
            throw error
        } catch is CancellationError {
            throw .cancelled
        } catch {
            throw .usage("the access-token refresh hook failed: \(error)")
        }
        token.withLock { $0 = fresh }
        return fresh
    }

    /// A client call (Bearer access token + `X-Device-Id`), retried once with a refreshed token when the
    /// gateway refuses the token and the app gave a refresh hook.
    ///
    /// The gateway checks the credential of an upload (a photo, a burst, a document) before it reads the body, and
    /// refuses a bad one at once, closing the connection with the body unread. A client still sending the photo then
    /// sees a failed send instead of the refusal, so a transport failure of an upload counts as a possible refusal too.
    func send(_ method: String, _ path: String, body: RequestBody? = nil, headers: [String: String] = [:]) async throws(FaceGateError) -> HTTPAnswer {
        let first = try await currentAccessToken()
        do {
            return try await sendOnce(method, path, body: body, headers: headers, accessToken: first)
        } catch {
            guard configuration.refreshAccessToken != nil else { throw error }
            switch error {
            case .accessTokenInvalid, .accessTokenExpired:
                let fresh = try await refreshedAccessToken()
                return try await sendOnce(method, path, body: body, headers: headers, accessToken: fresh)
            case .transport(_, let message) where Self.isUnsentUpload(body, message):
                // The body never arrived, so the gateway did no work: sending it again cannot count twice. A refresh that
                // fails leaves the transport error as the answer.
                guard let fresh = try? await refreshedAccessToken() else { throw error }
                return try await sendOnce(method, path, body: body, headers: headers, accessToken: fresh)
            default:
                throw error
            }
        }
    }

    /// A body over 64 KB (the gateway reads no more from a caller it has not checked) whose sending failed: on Linux,
    /// URLSession reports curl's "Send failure" then. A failure after the body was sent (the answer lost) is not one:
    /// the gateway may have done the work.
    static func isUnsentUpload(_ body: RequestBody?, _ message: String) -> Bool {
        (body?.data.count ?? 0) > 64 << 10 && message.contains("Send failure")
    }

    func request(_ method: String, _ path: String, accessToken: String?, headers: [String: String]) throws(FaceGateError) -> URLRequest {
        var base = configuration.baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base + path) else {
            throw .usage("not a valid path: \(path)")
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = configuration.requestTimeout.timeInterval
        if let accessToken { request.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization") }
        request.setValue(configuration.deviceId, forHTTPHeaderField: "X-Device-Id")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// Adds the device key's DPoP proof for this request, when the configuration has a key.
    func sign(_ request: inout URLRequest, accessToken: String?, body: Data?) throws(FaceGateError) {
        #if os(Linux)
        if let key = configuration.deviceKey, let url = request.url {
            request.setValue(try key.proof(method: request.httpMethod ?? "GET", url: url, accessToken: accessToken, body: body),
                             forHTTPHeaderField: "DPoP")
        }
        #endif
    }

    func sendOnce(_ method: String, _ path: String, body: RequestBody?, headers: [String: String], accessToken: String?) async throws(FaceGateError) -> HTTPAnswer {
        var request = try request(method, path, accessToken: accessToken, headers: headers)
        if let body {
            request.httpBody = body.data
            request.setValue(body.contentType, forHTTPHeaderField: "Content-Type")
        }
        try sign(&request, accessToken: accessToken, body: body?.data)
        let (data, response) = try await perform(request)
        if (200..<300).contains(response.statusCode) { return HTTPAnswer(status: response.statusCode, body: data) }
        throw Self.error(status: response.statusCode, body: data, retryAfter: response.value(forHTTPHeaderField: "Retry-After"))
    }

    /// The error envelope `{"error": {code, message, transactionId}}` as a `FaceGateError`.
    static func error(status: Int, body: Data, retryAfter: String?) -> FaceGateError {
        struct Envelope: Decodable {
            struct Detail: Decodable {
                var code: String
                var message: String?
                var transactionId: String?
            }
            var error: Detail
        }
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: body) else {
            return .decoding("HTTP \(status) without the error envelope")
        }
        return FaceGateError(server: FaceGateServerError(
            code: envelope.error.code, message: envelope.error.message ?? "", transactionId: envelope.error.transactionId,
            httpStatus: status, retryAfter: retryAfter.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }))
    }

    /// Runs one URLSession data task; cancelling the calling task cancels the data task. A data task is always resumed
    /// or cancelled: one left suspended would hold its session's invalidation (and so the session) forever.
    func perform(_ request: URLRequest) async throws(FaceGateError) -> (Data, HTTPURLResponse) {
        let state = Mutex<PendingTask>(.notStarted)
        let result: Result<(Data, HTTPURLResponse), FaceGateError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<(Data, HTTPURLResponse), FaceGateError>, Never>) in
                if state.withLock({ if case .cancelled = $0 { true } else { false } }) {
                    return continuation.resume(returning: .failure(.cancelled))
                }
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        continuation.resume(returning: .failure(Self.transportError(error)))
                    } else if let response = response as? HTTPURLResponse {
                        continuation.resume(returning: .success((data ?? Data(), response)))
                    } else {
                        continuation.resume(returning: .failure(.decoding("the answer is not HTTP")))
                    }
                }
                let start = state.withLock { pending -> Bool in
                    if case .cancelled = pending { return false }
                    pending = .running(task)
                    return true
                }
                // Cancelled in between: the cancelled task answers the continuation with NSURLErrorCancelled.
                if start { task.resume() } else { task.cancel() }
            }
        } onCancel: {
            let running = state.withLock { pending -> URLSessionDataTask? in
                defer { pending = .cancelled }
                if case .running(let task) = pending { return task }
                return nil
            }
            running?.cancel()
        }
        return try result.get()
    }

    static func transportError(_ error: any Error) -> FaceGateError {
        if let urlError = error as? URLError {
            switch urlError.code {
            case .cancelled: return .cancelled
            case .timedOut: return .timedOut
            default: return .transport(code: urlError.errorCode, message: urlError.localizedDescription)
            }
        }
        let nsError = error as NSError
        if nsError.domain == NSURLErrorDomain {
            if nsError.code == NSURLErrorCancelled { return .cancelled }
            if nsError.code == NSURLErrorTimedOut { return .timedOut }
        }
        return .transport(code: nsError.code, message: nsError.localizedDescription)
    }
}

/// The data task of one call, as its cancellation handler sees it.
private enum PendingTask: @unchecked Sendable {  // URLSessionTask is thread-safe; only cancel() is called from another thread
    case notStarted
    case running(URLSessionDataTask)
    case cancelled
}
