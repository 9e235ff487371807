@testable import AuthGateway
import FaceGateCore
import Foundation
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

    func verification(admission: any ModuleAdmission = AdmitEverything(), serials: InMemoryCTIDSerials = InMemoryCTIDSerials(),
                      verifier: ScriptedVerifier = ScriptedVerifier(CTIDJobResult(outcome: .invalidEnvelope))) -> CTIDVerification {
        CTIDVerification(admission: admission, serials: serials, verifier: verifier, serialTTLSeconds: 600)
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
        let verdict = try await verification(verifier: answering).verify(app: app, envelope: envelope, deviceId: "phone-1", clientIp: "10.0.0.1")
        #expect(verdict == .answered(sealed))
        let job = try #require(answering.jobs.all.first)
        #expect(job.appId == app.id && job.payload == .verify(envelope: envelope, deviceId: "phone-1", clientIp: "10.0.0.1"))

        // A body that is not even an envelope still reaches the verifier, which records the refusal.
        let refusing = ScriptedVerifier(CTIDJobResult(outcome: .invalidEnvelope))
        #expect(try await verification(verifier: refusing).verify(app: app, envelope: nil, deviceId: nil, clientIp: nil) == .invalidEnvelope)
        #expect(refusing.jobs.all.map(\.payload) == [.verify(envelope: nil, deviceId: nil, clientIp: nil)])

        for (result, expected) in [(CTIDJobResult(outcome: .unavailable), ErrorCode.serviceUnavailable),
                                   (CTIDJobResult(outcome: .answered), .internalError), (CTIDJobResult(outcome: .registered), .internalError)] {
            #expect(await errorCode { _ = try await verification(verifier: ScriptedVerifier(result)).verify(app: app, envelope: envelope, deviceId: nil, clientIp: nil) }
                    == expected)
        }
        let untouched = ScriptedVerifier(CTIDJobResult(outcome: .answered, envelope: sealed))
        #expect(await errorCode { _ = try await verification(admission: RefuseCTID(), verifier: untouched).verify(app: app, envelope: envelope, deviceId: nil, clientIp: nil) }
                == .moduleDisabled)
        #expect(untouched.jobs.all.isEmpty)
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
