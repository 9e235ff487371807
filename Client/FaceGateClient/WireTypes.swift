import FaceGateContracts

// The wire types the client's API hands out are FaceGateContracts' (the gateway encodes the same ones); these names make
// them part of FaceGateClient, so an app that imports only FaceGateClient can name them.
public typealias FaceGateIdentity = FaceGateContracts.FaceGateIdentity
public typealias FaceLoginConfirmation = FaceGateContracts.FaceLoginConfirmation
public typealias FaceLoginOutcome = FaceGateContracts.FaceLoginOutcome
public typealias LivenessChallenge = FaceGateContracts.LivenessChallenge
public typealias LivenessAction = FaceGateContracts.LivenessAction
public typealias CTIDSerialNumber = FaceGateContracts.CTIDSerialNumber
