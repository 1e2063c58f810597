// Package dispatch runs what a job names: a Go handler by kind (a
// target.Mux, users' package pkg/target), an HTTP endpoint (HTTP) or
// another Lambda function (Lambda). Dispatcher routes a job to the right
// one and is the engine.Runner the worker uses.
package dispatch
