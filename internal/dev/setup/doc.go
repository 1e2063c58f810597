// Package setup holds setup.sh, the first step of `make test` (and so of
// CI): it checks that the machine has what the tests need (Java 17 and npm
// for DynamoDB Local, Chromium for the console's browser tests, make, git,
// moto_server, cfn-lint) before any test starts; as root it installs what
// apt-get can, otherwise it prints the one command to run and stops. Then
// it fetches DynamoDB Local into the cache folder once. Its test runs the
// script on a PATH of stand-ins, never apt-get itself.
package setup
