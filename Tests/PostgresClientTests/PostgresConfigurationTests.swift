import PostgresClient
import Testing

@Suite struct PostgresConfigurationTests {
    @Test func parsesEveryPartOfAURL() throws {
        let configuration = try PostgresConfiguration(
            url: "postgresql://gate%20user:p%40ss%3Aword@db.internal:6543/face%20gate?sslmode=require&application_name=matcher&connect_timeout=3&statement_timeout=250&pool_size=16")
        #expect(configuration.host == "db.internal")
        #expect(configuration.port == 6543)
        #expect(configuration.user == "gate user")
        #expect(configuration.password == "p@ss:word")
        #expect(configuration.database == "face gate")
        #expect(configuration.tlsMode == .require)
        #expect(configuration.applicationName == "matcher")
        #expect(configuration.connectTimeoutSeconds == 3)
        #expect(configuration.statementTimeoutMilliseconds == 250)
        #expect(configuration.poolSize == 16)
        let probing = try PostgresConfiguration(url: "postgres://u@h/db?keepalives_idle=45&tcp_user_timeout=5000")
        #expect(probing.keepaliveIdleSeconds == 45 && probing.tcpUserTimeoutMilliseconds == 5000)
    }

    @Test func appliesDefaultsAndIPv6Hosts() throws {
        let configuration = try PostgresConfiguration(url: "postgres://postgres@[::1]/postgres")
        #expect(configuration.host == "::1")
        #expect(configuration.port == 5432)
        #expect(configuration.password == nil)
        #expect(configuration.poolSize == 8)
        #expect(configuration.connectTimeoutSeconds == 5)
        #expect(configuration.statementTimeoutMilliseconds == 10_000)
        #expect(configuration.applicationName == "facegate")
        #expect(configuration.tlsMode == .prefer)
        #expect(configuration.keepaliveIdleSeconds == 30 && configuration.tcpUserTimeoutMilliseconds == 30_000)
    }

    @Test func acceptsUnixSocketDirectoryAsHostParameter() throws {
        let configuration = try PostgresConfiguration(url: "postgres://app@/facegate?host=%2Fvar%2Frun%2Fpostgresql")
        #expect(configuration.host == "/var/run/postgresql")
        #expect(configuration.database == "facegate")
    }

    @Test(arguments: [
        ("mysql://u:secret@h/db", "scheme"),
        ("127.0.0.1:5432/db", "scheme"),
        ("postgres://u:secret@h:54x32/db", "port '54x32'"),
        ("postgres://u:secret@h:70000/db", "port '70000'"),
        ("postgres://u:secret@h", "missing database"),
        ("postgres://u:secret@/db", "missing host"),
        ("postgres://:secret@h/db", "missing user"),
        ("postgres://u:secret@h/db?sslmode=sometimes", "sslmode 'sometimes'"),
        ("postgres://u:secret@h/db?colour=blue", "unknown query parameter 'colour'"),
        ("postgres://u:secret@h/db?connect_timeout=soon", "connect_timeout 'soon'"),
        ("postgres://u:secret@h/db?keepalives_idle=-1", "keepalives_idle '-1'"),
        ("postgres://u:secret@[::1/db", "IPv6"),
        ("postgres://u:sec%zzret@h/db", "password has a malformed percent-escape"),
    ])
    func rejectsMalformedURLNamingTheProblem(url: String, expected: String) {
        do {
            _ = try PostgresConfiguration(url: url)
            Issue.record("accepted malformed URL \(url)")
        } catch {
            #expect(error.kind == .configuration)
            #expect(error.description.contains(expected), "\(error.description)")
            #expect(!error.description.contains("secret"), "password leaked: \(error.description)")
        }
    }

    @Test func describesItselfWithoutThePassword() throws {
        let configuration = try PostgresConfiguration(url: "postgres://gate:hunter2@db:5433/facegate")
        #expect(configuration.description == "postgres://gate@db:5433/facegate")
    }
}
