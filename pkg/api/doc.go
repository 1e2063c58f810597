// Package api holds slotq's wire types: the requests and answers of the
// stack's enqueue and admin functions, the job record a handler receives,
// and the error object the functions refuse a request with.
//
// It is a leaf: it imports nothing of slotq and nothing outside the
// standard library, so a service that only enqueues compiles pkg/client,
// this package and the SDK's Lambda client, not the server. The functions
// decode requests strictly (an unknown field is an error) and answer with
// every field these types declare; slotq's own tests hold the two sides
// to the same JSON.
package api
