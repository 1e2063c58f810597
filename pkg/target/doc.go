// Package target runs what a job names: a Go handler registered by kind
// (Mux, shaped like net/http's ServeMux), an HTTP endpoint (HTTP) or another
// Lambda function (Lambda). Dispatcher routes a job to the right one and is
// the engine.Runner the worker uses.
package target
