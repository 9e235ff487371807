import FaceGateCore
import FaceGateTestSupport
import Foundation

/// `facegate-bench frames --photo P --actions BLINK,TURN_LEFT --out DIR [--seed N] [--still COUNT]`: writes a
/// synthetic liveness burst (or, with `--still`, a replayed still) as DIR/frame0.jpg, frame1.jpg, … and prints
/// each frame's yaw and eye aspect ratio as the face engine measures them. Non-Swift tests (a browser's fake
/// camera) use the same frames as the Swift tests.
func runLivenessFramesCommand(arguments: [String]) async throws {
    var photo: String?
    var actions: [LivenessAction] = []
    var output: String?
    var seed: UInt64 = 1
    var still: Int?
    var iterator = arguments.makeIterator()
    while let argument = iterator.next() {
        switch argument {
        case "--photo": photo = iterator.next()
        case "--out": output = iterator.next()
        case "--seed": seed = UInt64(iterator.next() ?? "") ?? 1
        case "--still": still = Int(iterator.next() ?? "")
        case "--actions":
            for name in (iterator.next() ?? "").split(separator: ",") {
                guard let action = LivenessAction(rawValue: name.trimmingCharacters(in: .whitespaces).uppercased()) else {
                    throw SyntheticFrames.Failure("unknown action \(name); use BLINK, TURN_LEFT, TURN_RIGHT")
                }
                actions.append(action)
            }
        default: throw SyntheticFrames.Failure("unknown option \(argument)")
        }
    }
    guard let photo, let output else {
        throw SyntheticFrames.Failure("usage: facegate-bench frames --photo P --actions BLINK,TURN_LEFT --out DIR [--seed N] [--still COUNT]")
    }
    let engine = try SyntheticFrames.defaultEngine()
    let url = URL(fileURLWithPath: photo)
    let frames = if let still {
        try SyntheticFrames.replayedStill(photo: url, count: still, engine: engine)
    } else {
        try SyntheticFrames.burst(photo: url, actions: actions, engine: engine, seed: seed)
    }
    let files = try SyntheticFrames.write(frames, to: URL(fileURLWithPath: output))
    for (file, measurement) in zip(files, try SyntheticFrames.measure(frames, engine: engine)) {
        print("\(file.path): \(measurement)")
    }
}
