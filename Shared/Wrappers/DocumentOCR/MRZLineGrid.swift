/// The MRZ is printed at a fixed pitch, but tesseract drops and doubles glyphs in runs of `<` (a run of ten
/// comes back as eight, or as `<<K<<K<<<<`). Placing every recognised glyph into its cell of the fixed grid
/// restores each line's length and the position of every character, which the field layout depends on.
enum MRZLineGrid {
    /// The lines' characters in `cells` cells each; an empty cell (a glyph tesseract skipped) is nil.
    /// `looksLikeFiller` is asked about every glyph not read as `<` (OCR-B's `<` is often taken for `K`).
    struct Grid {
        var rows: [[Character?]]
        /// Tesseract's confidence (0–100) in each cell's glyph; nil for an empty cell.
        var confidences: [[Float?]]
        var pitch: Double
        /// The centre x of each line's first cell.
        var origins: [Double]
    }

    static func align(_ lines: [RecognizedLine], cells: Int, looksLikeFiller: (Glyph) -> Bool) -> Grid {
        let rows = lines.map { $0.glyphs.sorted { $0.centerX < $1.centerX } }
        // Every MRZ line spans the same width: all start at the left margin and end with a glyph in the last
        // cell, so the lines agree on the pitch even where one lost glyphs at an end.
        let lefts = zip(lines, rows).map { line, glyphs in Double(min(line.left, glyphs.first?.left ?? line.left)) }
        let rights = zip(lines, rows).map { line, glyphs in Double(max(line.right, glyphs.map(\.right).max() ?? line.right)) }
        var pitch = (rights.max()! - lefts.min()!) / Double(cells)
        var origins = lefts.map { $0 + pitch / 2 }
        var assigned: [[Int]] = []
        for _ in 0..<4 {
            assigned = zip(rows, origins).map { glyphs, origin in
                glyphs.map { min(cells - 1, max(0, Int((($0.centerX - origin) / pitch).rounded()))) }
            }
            // One pitch for all lines, one origin per line, least squares over the glyphs that sit near their
            // cell's centre (a glyph read twice or split in two would pull the fit off).
            var numerator = 0.0, denominator = 0.0
            var means: [(Double, Double)] = []
            for (glyphs, (cellsOfLine, origin)) in zip(rows, zip(assigned, origins)) {
                let kept = zip(glyphs, cellsOfLine).filter { abs($0.0.centerX - (origin + Double($0.1) * pitch)) < pitch * 0.35 }
                guard !kept.isEmpty else { means.append((0, origin)); continue }
                let meanCell = kept.map { Double($0.1) }.reduce(0, +) / Double(kept.count)
                let meanX = kept.map { $0.0.centerX }.reduce(0, +) / Double(kept.count)
                for (glyph, cell) in kept {
                    numerator += (Double(cell) - meanCell) * (glyph.centerX - meanX)
                    denominator += (Double(cell) - meanCell) * (Double(cell) - meanCell)
                }
                means.append((meanCell, meanX))
            }
            guard denominator > 0 else { break }
            let fitted = numerator / denominator
            guard fitted > pitch * 0.85, fitted < pitch * 1.15 else { break }
            pitch = fitted
            origins = means.map { $0.1 - pitch * $0.0 }
        }

        let placed: [[Glyph?]] = zip(rows, zip(assigned, origins)).map { glyphs, placement in
            let (cellsOfLine, origin) = placement
            var best: [Glyph?] = Array(repeating: nil, count: cells)
            for (glyph, cell) in zip(glyphs, cellsOfLine) {
                let center = origin + Double(cell) * pitch
                if let current = best[cell] {
                    let currentOffset = abs(current.centerX - center), offset = abs(glyph.centerX - center)
                    // The glyph nearest the cell's centre wins; confidence breaks near-ties.
                    if offset + pitch * 0.1 < currentOffset
                        || (abs(offset - currentOffset) <= pitch * 0.1 && glyph.confidence > current.confidence) {
                        best[cell] = glyph
                    }
                } else {
                    best[cell] = glyph
                }
            }
            return best
        }
        let characters: [[Character?]] = placed.map { row in
            row.map { glyph in
                guard let glyph else { return nil }
                if glyph.character != "<", looksLikeFiller(glyph) { return "<" }
                return glyph.character
            }
        }
        return Grid(rows: characters, confidences: placed.map { $0.map { $0?.confidence } }, pitch: pitch, origins: origins)
    }
}
