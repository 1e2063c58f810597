// Package samlocal reads template.yaml and stands its stack up locally, for
// `make invoke` (internal/local/samrun, `slotq sam invoke`) and the end-to-end tests: it creates the
// table and queues the template declares on whatever DynamoDB and SQS
// endpoints the environment names (moto_server here), builds each
// function's bootstrap with its Makefile target for the host's
// architecture, and works out each function's environment as Lambda would
// give it, with !Ref, !GetAtt and !Sub resolved against the local
// resources. internal/local/lambdahost then runs the bootstraps.
//
// It understands the parts of a SAM template slotq uses, no more.
package samlocal
