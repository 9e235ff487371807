import PostgresClient
import Synchronization
import Testing

/// LISTEN on a connection of its own: what it hears, and that it listens again after the server drops it.
@Suite struct PostgresListenerTests {
    final class Heard: Sendable {
        let events = Mutex<[String]>([])
        func record(_ event: PostgresListener.Event) {
            let text: String
            switch event {
            case .connected: text = "connected"
            case .disconnected: text = "disconnected"
            case .notification(let notification): text = "\(notification.channel):\(notification.payload)"
            }
            events.withLock { $0.append(text) }
        }
        /// Waits up to 10 s for `text` to have been heard `times` times.
        func waitFor(_ text: String, times: Int = 1) async throws -> Bool {
            for _ in 0..<500 {
                if events.withLock({ $0.count { $0 == text } }) >= times { return true }
                try await Task.sleep(for: .milliseconds(20))
            }
            return false
        }
    }

    @Test func aListenerHearsNotificationsAndListensAgainAfterTheServerDropsItsConnection() async throws {
        try await withTestDatabase { database in
            let heard = Heard()
            var configuration = database.configuration
            configuration.applicationName = "listener-under-test"
            let listener = PostgresListener(configuration: configuration, channels: ["test_bell", "other_bell"],
                                            retryInterval: .milliseconds(100)) { heard.record($0) }
            listener.start()
            defer { listener.stop() }
            #expect(try await heard.waitFor("connected"))
            _ = try await database.pool.query("SELECT pg_notify('test_bell', '3:face.jobs.v1'), pg_notify('unheard', 'x')")
            try await database.pool.notify(channel: "other_bell", payload: "second")
            #expect(try await heard.waitFor("other_bell:second"))
            #expect(heard.events.withLock { $0 } == ["connected", "test_bell:3:face.jobs.v1", "other_bell:second"])

            // The server ends the listener's session: it says so, connects again and hears what is sent after.
            _ = try await database.pool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'listener-under-test'")
            #expect(try await heard.waitFor("disconnected"))
            #expect(try await heard.waitFor("connected", times: 2))
            _ = try await database.pool.query("SELECT pg_notify('test_bell', 'again')")
            #expect(try await heard.waitFor("test_bell:again"))
        }
    }
}
