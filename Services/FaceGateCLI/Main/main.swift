import FaceGateCLI
import Foundation

exit(await FaceGateCLI.run(Array(CommandLine.arguments.dropFirst())))
