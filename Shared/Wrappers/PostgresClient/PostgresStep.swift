/// One store's statement, prepared to be sent with other stores' statements (`together`): in one transaction, in one
/// round trip. It holds the statement and how its rows become the store's answer.
///
/// A store kept in memory (a test's twin) answers with `computed` instead. Steps that are not all statements of one
/// pool run one after another, in order.
public struct PostgresStep<Answer: Sendable>: Sendable {
    enum Form: Sendable {
        case statement(PostgresPool, PostgresQuery, @Sendable (PostgresRows) throws -> Answer)
        case computed(@Sendable () async throws -> Answer)
    }

    let form: Form

    public init(_ database: PostgresPool, _ query: PostgresQuery, answer: @escaping @Sendable (PostgresRows) throws -> Answer) {
        form = .statement(database, query, answer)
    }

    public static func computed(_ body: @escaping @Sendable () async throws -> Answer) -> Self {
        Self(form: .computed(body))
    }

    private init(form: Form) {
        self.form = form
    }

    /// The step on its own.
    public func run() async throws -> Answer {
        switch form {
        case .statement(let database, let query, let answer): try answer(try await database.query(query))
        case .computed(let body): try await body()
        }
    }

    /// Three steps in one transaction and one round trip when they are statements of one pool (under the scope's
    /// settings); when any fails, none is kept. Their answers, in order.
    public static func together<B, C>(_ a: Self, _ b: PostgresStep<B>, _ c: PostgresStep<C>) async throws -> (Answer, B, C) {
        if case .statement(let database, let first, let answerA) = a.form, case .statement(let poolB, let second, let answerB) = b.form,
           case .statement(let poolC, let third, let answerC) = c.form, database === poolB, database === poolC {
            let rows = try await database.query([first, second, third])
            return (try answerA(rows[0]), try answerB(rows[1]), try answerC(rows[2]))
        }
        return (try await a.run(), try await b.run(), try await c.run())
    }
}
