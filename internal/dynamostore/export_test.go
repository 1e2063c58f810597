package dynamostore

// MaxTxRetries exposes maxTxRetries to the package's external tests.
const MaxTxRetries = maxTxRetries
