/// One store's statements, prepared to be sent with other stores' statements (`then`, `together`): in one transaction, in
/// one round trip. It holds the statements, how their rows become the store's answer, and what a server error of theirs
/// means to the caller (`refusing`).
///
/// A store kept in memory (a test's twin) answers with `computed` instead. Steps that are not all statements of one
/// pool run one after another, in order.
public struct PostgresStep<Answer: Sendable>: Sendable {
    enum Form: Sendable {
        /// Statements of one pool, sent in order, and how their rows (one result each) become the answer.
        case statements(PostgresPool, [PostgresQuery], @Sendable ([PostgresRows]) throws -> Answer)
        case computed(@Sendable () async throws -> Answer)
    }

    let form: Form
    /// What a server error of one of the step's statements means to its caller (a spent token id refused by a key), or
    /// nil to let it through as it is.
    let refusal: @Sendable (PostgresError) -> (any Error)?

    public init(_ database: PostgresPool, _ query: PostgresQuery, answer: @escaping @Sendable (PostgresRows) throws -> Answer) {
        self.init(form: .statements(database, [query], { rows in try answer(rows[0]) }))
    }

    public static func computed(_ body: @escaping @Sendable () async throws -> Answer) -> Self {
        Self(form: .computed(body))
    }

    private init(form: Form, refusal: @escaping @Sendable (PostgresError) -> (any Error)? = { _ in nil }) {
        self.form = form
        self.refusal = refusal
    }

    /// The same step, a server error of its statements read by `refusal` too (nil: the error as it is).
    public func refusing(_ refusal: @escaping @Sendable (PostgresError) -> (any Error)?) -> Self {
        let earlier = self.refusal
        return Self(form: form, refusal: { error in Self.recognised(error, by: [earlier, refusal]) })
    }

    /// What the first refusal that recognises `error` makes of it, or nil.
    static func recognised(_ error: PostgresError, by refusals: [@Sendable (PostgresError) -> (any Error)?]) -> (any Error)? {
        for refusal in refusals {
            if let meaning = refusal(error) { return meaning }
        }
        return nil
    }

    /// What the first refusal that recognises `error` makes of it, or `error` itself.
    static func meaning(of error: PostgresError, by refusals: [@Sendable (PostgresError) -> (any Error)?]) -> any Error {
        recognised(error, by: refusals) ?? error
    }

    /// The same step, the errors it fails with passed through `transform`: a computed step's, and the server errors its
    /// `refusal` reads (the others stay as they are, so that a step sent with it can read its own).
    public func mappingError(_ transform: @escaping @Sendable (any Error) -> any Error) -> Self {
        let earlier = refusal
        switch form {
        case .statements: return Self(form: form, refusal: { error in earlier(error).map(transform) })
        case .computed(let body):
            return Self(form: .computed {
                do { return try await body() } catch { throw transform(error) }
            }, refusal: earlier)
        }
    }

    /// This step's statements, then `next`'s, as one step answered by `next`: when this one fails, `next` never runs, and
    /// in a transaction nothing of either is kept.
    public func then<Next>(_ next: PostgresStep<Next>) -> PostgresStep<Next> {
        let (first, second) = (self.refusal, next.refusal)
        let refusal: @Sendable (PostgresError) -> (any Error)? = { error in Self.recognised(error, by: [first, second]) }
        if case .statements(let database, let queries, _) = form, case .statements(let pool, let following, let answer) = next.form,
           database === pool {
            let skipped = queries.count
            return PostgresStep<Next>(form: .statements(pool, queries + following, { rows in try answer(Array(rows.dropFirst(skipped))) }),
                                      refusal: refusal)
        }
        return PostgresStep<Next>(form: .computed { _ = try await self.run(); return try await next.run() }, refusal: refusal)
    }

    /// The step on its own.
    public func run() async throws -> Answer {
        switch form {
        case .statements(let database, let queries, let answer):
            let rows: [PostgresRows]
            do {
                rows = queries.count == 1 ? [try await database.query(queries[0])] : try await database.query(queries)
            } catch {
                throw Self.meaning(of: error, by: [refusal])
            }
            return try answer(rows)
        case .computed(let body): return try await body()
        }
    }

    /// Three steps in one transaction and one round trip when they are statements of one pool (under the scope's
    /// settings); when any fails, none is kept. Their answers, in order.
    public static func together<B, C>(_ a: Self, _ b: PostgresStep<B>, _ c: PostgresStep<C>) async throws -> (Answer, B, C) {
        if case .statements(let database, let first, let answerA) = a.form, case .statements(let poolB, let second, let answerB) = b.form,
           case .statements(let poolC, let third, let answerC) = c.form, database === poolB, database === poolC {
            let rows: [PostgresRows]
            do {
                rows = try await database.query(first + second + third)
            } catch {
                throw Self.meaning(of: error, by: [a.refusal, b.refusal, c.refusal])
            }
            let (end, middle) = (first.count, first.count + second.count)
            return (try answerA(Array(rows[..<end])), try answerB(Array(rows[end..<middle])), try answerC(Array(rows[middle...])))
        }
        return (try await a.run(), try await b.run(), try await c.run())
    }
}
