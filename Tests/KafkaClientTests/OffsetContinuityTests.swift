import Foundation
@testable import KafkaClient
import Testing

/// A consumer that reads gaps again holds back a message past an offset it has not delivered, has the partition read
/// again from that offset, and reads on only once the gap outlasts its patience (the local broker has been seen to
/// answer a fetch with a record while an earlier one, written at the same moment, was not yet readable).
@Suite struct OffsetContinuityTests {
    let replies = KafkaTopicPartition(topic: "replies", partition: 3)
    let start = ContinuousClock.now

    @Test func aSkippedOffsetIsReadAgainAndTheHeldMessageFollowsIt() {
        var continuity = OffsetContinuity()
        let patience = Duration.milliseconds(500)
        #expect(continuity.admit(10, of: replies, assignmentChanges: 1, patience: patience, now: start) == .deliver)
        #expect(continuity.admit(11, of: replies, assignmentChanges: 1, patience: patience, now: start) == .deliver)
        // 12 is not there yet: 13 waits, and the partition is read from 12 again.
        #expect(continuity.admit(13, of: replies, assignmentChanges: 1, patience: patience, now: start) == .readAgain(from: 12, first: true))
        #expect(continuity.heldBack(replies) == 12)
        #expect(continuity.admit(13, of: replies, assignmentChanges: 1, patience: patience, now: start + .milliseconds(2)) == .readAgain(from: 12, first: false))
        #expect(continuity.admit(12, of: replies, assignmentChanges: 1, patience: patience, now: start + .milliseconds(3)) == .deliver)
        #expect(continuity.heldBack(replies) == nil)
        #expect(continuity.admit(13, of: replies, assignmentChanges: 1, patience: patience, now: start + .milliseconds(3)) == .deliver)
        // Each partition on its own.
        let other = KafkaTopicPartition(topic: "replies", partition: 4)
        #expect(continuity.admit(500, of: other, assignmentChanges: 1, patience: patience, now: start) == .deliver)
    }

    @Test func aGapThatOutlastsThePatienceIsReportedAndReadOn() {
        var continuity = OffsetContinuity()
        let patience = Duration.milliseconds(500)
        _ = continuity.admit(10, of: replies, assignmentChanges: 1, patience: patience, now: start)
        #expect(continuity.admit(14, of: replies, assignmentChanges: 1, patience: patience, now: start + .milliseconds(1)) == .readAgain(from: 11, first: true))
        #expect(continuity.admit(14, of: replies, assignmentChanges: 1, patience: patience, now: start + .milliseconds(400)) == .readAgain(from: 11, first: false))
        #expect(continuity.admit(14, of: replies, assignmentChanges: 1, patience: patience, now: start + .milliseconds(501)) == .readOn(missing: 11..<14))
        #expect(continuity.admit(15, of: replies, assignmentChanges: 1, patience: patience, now: start + .milliseconds(502)) == .deliver)
    }

    @Test func earlierOffsetsAndANewAssignmentAreFollowedWithoutWaiting() {
        var continuity = OffsetContinuity()
        let patience = Duration.milliseconds(500)
        _ = continuity.admit(40, of: replies, assignmentChanges: 1, patience: patience, now: start)
        // A redelivery after a rebalance, or a broker that numbers its log from 0 again.
        #expect(continuity.admit(7, of: replies, assignmentChanges: 1, patience: patience, now: start) == .deliver)
        #expect(continuity.admit(0, of: replies, assignmentChanges: 1, patience: patience, now: start) == .deliver)
        // A new assignment may start anywhere (another member read on meanwhile).
        #expect(continuity.admit(90, of: replies, assignmentChanges: 2, patience: patience, now: start) == .deliver)
        #expect(continuity.admit(91, of: replies, assignmentChanges: 2, patience: patience, now: start) == .deliver)
    }
}
