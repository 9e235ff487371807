/// Request headers in arrival order; lookups ignore ASCII case as HTTP requires.
public struct HTTPHeaders: Sendable, Sequence {
    public typealias Element = (name: String, value: String)

    private var fields: [Element]

    public init(_ fields: [(String, String)] = []) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    /// The first value sent under `name`.
    public subscript(name: String) -> String? {
        fields.first { asciiCaseInsensitiveEquals($0.name, name) }?.value
    }

    /// Every value sent under `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { asciiCaseInsensitiveEquals($0.name, name) }.map(\.value)
    }

    public mutating func add(name: String, value: String) {
        fields.append((name: name, value: value))
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[Element]> {
        fields.makeIterator()
    }
}

func asciiCaseInsensitiveEquals(_ a: String, _ b: String) -> Bool {
    var a = a, b = b
    return a.withUTF8 { x in
        b.withUTF8 { y in
            guard x.count == y.count else { return false }
            for i in 0..<x.count where asciiLower(x[i]) != asciiLower(y[i]) {
                return false
            }
            return true
        }
    }
}

@inline(__always)
func asciiLower(_ c: UInt8) -> UInt8 {
    (c >= 0x41 && c <= 0x5A) ? c | 0x20 : c
}
