import AppRecords
@testable import AuthGateway
import CTIDRecords
import FaceGateCore
import FaceGateTestSupport
import Foundation
import IdentityRecords
import Testing

/// `CTIDVerification` over the in-memory serial store and a scripted verifier. End to end (the verifier opening real
/// envelopes, serials spent in PostgreSQL): IntegrationTests' CTIDTests and ClientEndToEndTests.
@Suite struct CTIDVerificationUseCaseTests {
    let app = AppRecord(id: UUID(), name: "app", secretHash: [], modules: .initial, faceModel: .sface2021dec,
                        matchThreshold: FaceModel.sface2021dec.defaultThreshold, liveness: .initial, deviceBinding: .dpop,
                        deviceBindingPolicy: .appServerTicket, kioskApproval: KioskApprovalPolicy(), quotas: .initial,
                        keepEnrollmentPhotos: false, createdAt: Date())

    /// Answers every job with `answer` and keeps the jobs.
    final class ScriptedVerifier: CTIDJobs {
        let answer: CTIDJobResult
        let jobs = Calls<CTIDJob>()
        init(_ answer: CTIDJobResult) { self.answer = answer }
        func ctidJob(_ job: CTIDJob) async throws -> CTIDJobResult {
            jobs.record(job)
            return answer
        }
    }

    struct RefuseCTID: ModuleAdmission {
        func admit(_ app: AppRecord, module: Module) async throws {
            if module == .ctid { throw APIError(.moduleDisabled, "ctid is disabled") }
        }
    }

    let clock = FakeClock()
    let counters: InMemoryAttemptCounters

    init() { counters = InMemoryAttemptCounters(clock: clock) }

    func verification(admission: any ModuleAdmission = AdmitEverything(), serials: InMemoryCTIDSerials = InMemoryCTIDSerials(),
                      verifier: some CTIDJobs = ScriptedVerifier(CTIDJobResult(outcome: .invalidEnvelope))) -> CTIDVerification {
        CTIDVerification(admission: admission,
                         attempts: AttemptGuard(store: counters, rule: .init(throttleAfter: 3, throttleSeconds: 30, lockAfter: 6),
                                                addressRule: .init(throttleAfter: 100, throttleSeconds: 30, lockAfter: 0, failureWindow: 600)),
                         serials: serials, verifier: verifier, serialTTLSeconds: 600)
    }

    @Test func aSerialIsRandomStoredForItsModeAndApp() async throws {
        let serials = InMemoryCTIDSerials()
        let ctid = verification(serials: serials)
        let first = try await ctid.issueSerial(app: app) { "0x42" }
        let second = try await ctid.issueSerial(app: app) { "0X10" }
        #expect(first.bizSerialNum.count == 32 && first.bizSerialNum.allSatisfy(\.isHexDigit))
        #expect(first.randNum.count == 6 && first.randNum.allSatisfy(\.isNumber))
        #expect(first.bizSerialNum != second.bizSerialNum)
        #expect(first.expiresIn == 600)
        let stored = serials.issued
        #expect(stored.map(\.mode) == [.portraitNameNumber, .nameNumberValidity])
        #expect(stored.map(\.serial) == [first.bizSerialNum, second.bizSerialNum])
        #expect(stored.allSatisfy { $0.appId == app.id && $0.ttl == 600 })
        #expect(stored[0].randNum == first.randNum)
    }

    @Test func modesThatNeedTheNetworkCredentialOrAreNoCodeGetNoSerial() async {
        let serials = InMemoryCTIDSerials()
        let ctid = verification(serials: serials)
        for mode in ["0x06", "0x16", "42", "0xZZ", ""] {
            #expect(await errorCode { _ = try await ctid.issueSerial(app: app) { mode } } == .invalidRequest, "\(mode)")
        }
        // The module is judged before the body is read.
        #expect(await errorCode {
            _ = try await verification(admission: RefuseCTID(), serials: serials).issueSerial(app: app) { throw APIError(.invalidRequest, "bad JSON") }
        } == .moduleDisabled)
        #expect(serials.issued.isEmpty)
    }

    @Test func theVerifiersVerdictIsTheAnswer() async throws {
        let sealed = CTIDEnvelope(version: "v1", appId: app.id.wire, iv: "aXY=", data: "ZGF0YQ==", mac: "bWFj")
        let answering = ScriptedVerifier(CTIDJobResult(outcome: .answered, envelope: sealed))
        let envelope = CTIDEnvelope(version: "v1", appId: app.id.wire, iv: "x", data: "y", mac: "z")
        let verdict = try await verification(verifier: answering).verify(app: app, envelope: envelope, deviceId: "phone-1", clientAddress: "10.0.0.1")
        #expect(verdict == .answered(sealed))
        let job = try #require(answering.jobs.all.first)
        #expect(job.appId == app.id && job.payload == .verify(envelope: envelope, deviceId: "phone-1", clientIp: "10.0.0.1"))

        // A body that is not even an envelope still reaches the verifier, which records the refusal.
        let refusing = ScriptedVerifier(CTIDJobResult(outcome: .invalidEnvelope))
        #expect(try await verification(verifier: refusing).verify(app: app, envelope: nil, deviceId: nil, clientAddress: "10.0.0.2") == .invalidEnvelope)
        #expect(refusing.jobs.all.map(\.payload) == [.verify(envelope: nil, deviceId: nil, clientIp: "10.0.0.2")])

        for (result, expected) in [(CTIDJobResult(outcome: .unavailable), ErrorCode.serviceUnavailable),
                                   (CTIDJobResult(outcome: .answered), .internalError), (CTIDJobResult(outcome: .registered), .internalError)] {
            #expect(await errorCode { _ = try await verification(verifier: ScriptedVerifier(result)).verify(app: app, envelope: envelope, deviceId: nil, clientAddress: "10.0.0.3") }
                    == expected)
        }
        let untouched = ScriptedVerifier(CTIDJobResult(outcome: .answered, envelope: sealed))
        #expect(await errorCode { _ = try await verification(admission: RefuseCTID(), verifier: untouched).verify(app: app, envelope: envelope, deviceId: nil, clientAddress: "10.0.0.3") }
                == .moduleDisabled)
        #expect(untouched.jobs.all.isEmpty)
    }

    /// Tries at one identity are limited whoever sends them: once its failures reach the limit, the next verdict is
    /// withheld (`RATE_LIMITED`) from any device or address, and the count is by the verifier's opaque key of the number.
    @Test func triesAtOneIdentityAreLimitedWhoeverSendsThem() async throws {
        let sealed = CTIDEnvelope(version: "v1", appId: app.id.wire, iv: "aXY=", data: "ZGF0YQ==", mac: "bWFj")
        let failing = ScriptedVerifier(CTIDJobResult(outcome: .answered, envelope: sealed, attempt: .failure, registryEntry: "entry-1"))
        let ctid = verification(verifier: failing)
        for device in ["phone-1", "phone-2", "phone-3"] {
            #expect(try await ctid.verify(app: app, envelope: sealed, deviceId: device, clientAddress: "198.51.100.\(device.count)") == .answered(sealed))
        }
        // Withheld, not answered: and the try still costs the sender, whose next tries are then throttled too.
        #expect(try await ctid.verify(app: app, envelope: sealed, deviceId: "phone-4", clientAddress: "203.0.113.9") == .withheld(APIError(.rateLimited, "")))
        #expect(try await counters.state(appId: app.id, subject: AttemptGuard.Subject.device("phone-4").key,
                                         rule: .init(throttleAfter: 3, throttleSeconds: 30, lockAfter: 6))?.throttled == false)
        let charged = try await counters.state(appId: app.id, subject: AttemptGuard.Subject.device("phone-4").key,
                                               rule: .init(throttleAfter: 1, throttleSeconds: 30, lockAfter: 6))
        #expect(charged?.throttled == true, "the withheld try was charged to the device")
        // Another identity, from the same places, is not held back; a verified try is not a failure.
        let other = ScriptedVerifier(CTIDJobResult(outcome: .answered, envelope: sealed, attempt: .success, registryEntry: "entry-2"))
        #expect(try await verification(verifier: other).verify(app: app, envelope: sealed, deviceId: "phone-4", clientAddress: "203.0.113.9") == .answered(sealed))
        // A device that keeps failing is throttled whichever identity it names.
        let device = ScriptedVerifier(CTIDJobResult(outcome: .invalidEnvelope, attempt: .failure))
        for _ in 0..<3 { _ = try await verification(verifier: device).verify(app: app, envelope: nil, deviceId: "phone-9", clientAddress: "192.0.2.1") }
        #expect(await errorCode { _ = try await verification(verifier: device).verify(app: app, envelope: nil, deviceId: "phone-9", clientAddress: "192.0.2.2") }
                == .rateLimited)
    }

    @Test func aRegistrationIsTheVerifiersToCheckAndAnswersTheNumberMasked() async throws {
        let entry = CTIDRegistration(number: "11010519491231002x", name: "张三", validDateStart: "20200101", validDateEnd: "长期")
        let verifier = ScriptedVerifier(CTIDJobResult(outcome: .registered))
        #expect(try await verification(verifier: verifier).register(app: app, entry) == "1101**********002X")
        let job = try #require(verifier.jobs.all.first)
        #expect(job.appId == app.id && job.payload == .register(entry))
        for (outcome, code) in [(CTIDJobResult.Outcome.invalidRequest, ErrorCode.invalidRequest), (.notFound, .notFound), (.imageRejected, .lowQuality),
                                (.unavailable, .serviceUnavailable)] {
            #expect(await errorCode { try await verification(verifier: ScriptedVerifier(CTIDJobResult(outcome: outcome))).register(app: app, entry) }
                    == code, "\(outcome)")
        }
    }
}
