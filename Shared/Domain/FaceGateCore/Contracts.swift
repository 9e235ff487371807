// Every service speaks the wire types through this module; the contracts themselves depend on nothing but
// Foundation, so the client library shares them without the server's cryptography.
@_exported import FaceGateContracts
