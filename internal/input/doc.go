// Package input is how slotq reads requests from other services: a strict
// JSON decoder (Decode) that refuses unknown keys in any letter case,
// duplicate keys and wrong types, and names the full path of every bad
// value, and the typed error it and every validation return (Error, made
// by Invalid). docs/guarantees.md §10: bad input gets a clear, typed error whose
// field is the path of the bad value, and nothing is written.
//
// internal/slot (queue configuration) and internal/job (enqueue requests) validate
// with it; the functions turn an *Error into the answer's error object.
package input
