internal import CGallery
import Foundation

/// Which scan a gallery runs; for benchmarks and tests that compare kernels.
@_spi(Benchmarking)
public enum GalleryScanKernel: Sendable, CaseIterable {
    /// The fastest measured on this kind of machine (Benchmarks/RESULTS.md).
    case automatic
    /// Hand-vectorised AVX2/FMA/F16C (scalar where the CPU lacks them).
    case vectorized
    /// OpenBLAS sgemv for one query, sgemm for a batch (float32 storage only).
    case blas
    /// Plain C loops.
    case scalar
}

@_spi(Benchmarking)
extension FaceGallery {
    public func setScanKernel(_ kernel: GalleryScanKernel) {
        switch kernel {
        case .automatic: setKernel(CG_KERNEL_AUTO)
        case .vectorized: setKernel(CG_KERNEL_SIMD)
        case .blas: setKernel(CG_KERNEL_BLAS)
        case .scalar: setKernel(CG_KERNEL_SCALAR)
        }
    }

    /// The kernel a search runs now, e.g. "avx2-fma" or "openblas-sgemm".
    public func scanKernelName(batch: Bool) -> String { kernelName(batch: batch) }
}

@_spi(Benchmarking)
public enum GalleryDiagnostics {
    /// OpenBLAS's CPU kernel name ("Zen", "Haswell", ...).
    public static var blasCoreName: String { String(cString: cg_blas_core_name()) }

    /// Memory read bandwidth in bytes per second: `threads` threads each sum
    /// their share of a `bytes`-sized float array (well beyond the caches), best
    /// of `repeats` passes.
    public static func measureReadBandwidth(bytes: Int = 1 << 30, threads: Int = 1, repeats: Int = 3) -> Double {
        let count = bytes / MemoryLayout<Float>.stride
        let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: count)
        defer { buffer.deallocate() }
        buffer.initialize(repeating: 1)
        let share = count / threads
        let base = UInt(bitPattern: buffer.baseAddress!)
        var best = 0.0
        for _ in 0..<repeats {
            let start = DispatchTime.now().uptimeNanoseconds
            DispatchQueue.concurrentPerform(iterations: threads) { t in
                let p = UnsafePointer<Float>(bitPattern: base)! + t * share
                let sum = cg_sum_floats(p, share)
                precondition(sum == Double(share), "bandwidth probe summed \(sum), expected \(share)")
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            best = max(best, Double(share * threads * MemoryLayout<Float>.stride) / seconds)
        }
        return best
    }
}
