// Package emulator is what the helpers of the local AWS emulators share
// (internal/dev/dynamolocal, internal/dev/motoserver): a free loopback
// port, the environment that points the AWS SDK at an emulator, and one
// server shared by the tests of a test binary.
//
// It is tooling: tests and local tools import it, nothing that ships does
// (layers_test.go).
package emulator
