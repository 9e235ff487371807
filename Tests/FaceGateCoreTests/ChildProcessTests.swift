import FaceGateTestSupport
import Foundation
import Testing

/// The tests' own way of running tools and servers (Tests/Support/ChildProcess.swift): every wait ends.
@Suite struct ChildProcessTests {
    @Test func collectsBothStreamsInFullAndTheExitCode() throws {
        // 200 KB on each stream: more than a pipe holds, so reading one stream to its end first would stall.
        let result = try ChildProcess.run("sh", ["-c", "head -c 204800 /dev/zero; head -c 204800 /dev/zero >&2; cat; exit 3"],
                                          input: Data("tail".utf8))
        #expect(result.exitCode == 3)
        #expect(result.output.count == 204_800 + 4)
        #expect(result.output.suffix(4) == Data("tail".utf8))
        #expect(result.errors.count == 204_800)
    }

    @Test func aToolPastItsDeadlineIsKilledAndReported() throws {
        let started = ContinuousClock.now
        #expect(throws: ChildProcessError.self) { try ChildProcess.run("sleep", ["30"], timeout: .milliseconds(300)) }
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func aServerThatIgnoresItsSignalIsKilledAfterTheGracePeriod() throws {
        let child = try ChildProcess("sh", ["-c", "trap '' TERM; exec sleep 30"])
        usleep(200_000)
        #expect(child.stop(signal: SIGTERM, timeout: .milliseconds(300)) == false)
        #expect(child.exitCode == 128 + SIGKILL)
        #expect(!child.isRunning)
    }

    @Test func aCommandThatCannotBeStartedThrows() {
        #expect(throws: ChildProcessError.self) { try ChildProcess.run("/nonexistent/tool", []) }
    }
}
