// Package slotq carries slotq's SAM template, so that the slotq command
// of the version a project requires can write that project's stack:
// slotq's resources around the project's own worker (`slotq template`,
// docs/deploy.md). slotq's Go API is under pkg/.
package slotq

import _ "embed"

// Template is template.yaml, the stack `sam deploy` deploys from this
// repository and the base of every stack `slotq template` writes.
//
//go:embed template.yaml
var Template []byte
