// Package apischema writes the JSON Schemas (draft 2020-12) of the enqueue
// and admin functions' requests and answers from pkg/api's wire types:
// docs/schema/, which producers in other languages validate against and
// generate types from. `make schema` runs it (cmd/apischema); its tests
// hold docs/schema/ to what it writes and the schemas to what the
// functions accept and refuse.
//
// The structure and descriptions come from pkg/api by reflection
// (github.com/invopop/jsonschema); the bounds the functions enforce
// (names' patterns, ranges, list lengths, each admin op's fields) are
// added here, from the constants the validation itself uses.
package apischema
