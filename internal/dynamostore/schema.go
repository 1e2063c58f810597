package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/slotq/slotq/internal/engine"
)

// The schema mark: one item, pk M#schema, sk schema, with the layout
// version of the table's records and how far a rebuild got
// (engine.Schema). A table without it is from before marks were kept.
const (
	pkSchema = "M#schema"
	skSchema = "schema"

	attrSchemaVersion = "schema_version"
	attrAfter         = "after"
	// A rebuild's cursor and counts (engine.Schema).
	attrRebuild    = "rebuild"
	attrInQueue    = "in_queue"
	attrInTicket   = "in_ticket"
	attrInLanes    = "in_lanes"
	attrInKey      = "in_key"
	attrDoneQueues = "done_queues"
	attrDoneJobs   = "done_jobs"
	attrDoneLanes  = "done_lanes"
	attrSchemaSeq  = "seq"
)

// Schema reads the schema mark (strongly); a zero Schema if there is none.
func (s *Store) Schema(ctx context.Context) (engine.Schema, error) {
	m, err := s.getItem(ctx, key(pkSchema, skSchema))
	if err != nil {
		return engine.Schema{}, fmt.Errorf("schema: %w", err)
	}
	it := &item{m: m}
	sc := engine.Schema{
		Version: int(it.int(attrSchemaVersion)), Rebuild: it.int(attrRebuild) == 1, After: it.str(attrAfter),
		Queue: it.str(attrInQueue), Ticket: it.int(attrInTicket), Lanes: it.int(attrInLanes) == 1, Key: it.str(attrInKey),
		Queues: int(it.int(attrDoneQueues)), Jobs: it.int(attrDoneJobs), LanesDone: it.int(attrDoneLanes),
		Seq: it.int(attrSchemaSeq),
	}
	if it.err != nil {
		return engine.Schema{}, fmt.Errorf("schema: %w", it.err)
	}
	return sc, nil
}

// PutSchema writes the mark if it is still from, with one conditional
// PutItem: on its version and its count of writes (seq), or, for a mark
// written before seq was kept, its after. ErrConflict.
func (s *Store) PutSchema(ctx context.Context, sc, from engine.Schema) error {
	v, seq, after := expression.Name(attrSchemaVersion), expression.Name(attrSchemaSeq), expression.Name(attrAfter)
	// A zero from is no mark at all, or one at version 0.
	cond := v.Equal(expression.Value(num(int64(from.Version))))
	if from.Version == 0 {
		cond = missingOr(v, cond)
	}
	switch {
	case from.Seq != 0:
		cond = cond.And(seq.Equal(expression.Value(num(from.Seq))))
	case from.After == "":
		cond = all(cond, seq.AttributeNotExists(), after.AttributeNotExists())
	default:
		cond = all(cond, seq.AttributeNotExists(), after.Equal(expression.Value(str(from.After))))
	}
	m := key(pkSchema, skSchema)
	m[attrSchemaVersion] = num(int64(sc.Version))
	for name, v := range map[string]string{attrAfter: sc.After, attrInQueue: sc.Queue, attrInKey: sc.Key} {
		if v != "" {
			m[name] = str(v)
		}
	}
	for name, v := range map[string]int64{attrInTicket: sc.Ticket, attrDoneQueues: int64(sc.Queues), attrDoneJobs: sc.Jobs,
		attrDoneLanes: sc.LanesDone, attrSchemaSeq: sc.Seq, attrRebuild: flag(sc.Rebuild), attrInLanes: flag(sc.Lanes)} {
		if v != 0 {
			m[name] = num(v)
		}
	}
	_, ok, err := s.putIf(ctx, m, when(cond))
	if err != nil {
		return fmt.Errorf("put schema: %w", err)
	}
	if !ok {
		return fmt.Errorf("put schema: %w", engine.ErrConflict)
	}
	return nil
}

// flag is a bool as a number attribute (0 is left out).
func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
