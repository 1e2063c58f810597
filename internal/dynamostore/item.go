package dynamostore

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Attribute names. doc.go and docs/dynamodb.md describe the items.
const (
	attrPK = "pk"
	attrSK = "sk"

	// Queue state item (the hot one).
	attrTicket  = "ticket"
	attrCurrent = "current"
	// The latest slot of a line ticket that started (slot.State.Front).
	attrFront       = "front"
	attrClock       = "clock"
	attrLastStart   = "last_start"
	attrPaused      = "paused"
	attrPausedUntil = "paused_until"
	// When the pause began (slot.State.PausedAt), while paused.
	attrPausedAt  = "paused_at"
	attrInterval  = "interval"
	attrTakeClock = "take_clock"
	attrPurged    = "purged"
	// The last ticket of the last take that booked places in the line
	// (slot.State.Line). A state item written before it was kept has
	// none: its ticket stands in, the bound the stats gave then.
	attrLine = "line_ticket"
	// A queue whose booked starts pass by a read is gated (slot.State.Gated:
	// true, absent otherwise) while starts cut in off its bookings, until
	// gated_until at least; gated_through is the line ticket its gating
	// counted (slot.State.GatedThrough). run_from is the time of the first
	// booking of the line's current run (slot.State.RunFrom).
	attrGated        = "gated"
	attrGatedUntil   = "gated_until"
	attrGatedThrough = "gated_through"
	attrRunFrom      = "run_from"
	// The last batch a queue that starts its jobs in batches booked
	// (slot.State.BatchTicket, BatchAt, BatchFill); absent on other
	// queues.
	attrBatchTicket = "batch_ticket"
	attrBatchAt     = "batch_at"
	attrBatchFill   = "batch_fill"
	// The attempts of a capped queue that run (slot.State.Running): a
	// map of ticket (decimal) → end of the attempt's lease (ms). Absent
	// until the queue's first capped start; empty once they all ended.
	attrRunning = "running"

	// On the state item and job items: the token of the last write, so
	// that a write the SDK retried after it had landed is recognised.
	attrWriteToken = "write_token"

	// Queue config item.
	attrItemKind  = "item_kind"
	attrQueue     = "queue"
	attrConfig    = "config"
	attrCreatedAt = "created_at"

	// On the queue config and state items and job items: the queue's generation
	// (engine.Queue.Gen), only when not 0.
	attrGen = "gen"

	// Job item (also attrQueue and attrTicket).
	attrJobID     = "job_id"
	attrKind      = "kind"
	attrTarget    = "target"
	attrPayload   = "payload"
	attrStatus    = "status"
	attrSlotAt    = "slot_at"
	attrNotBefore = "not_before"
	attrRetryAt   = "retry_at"
	attrScheduled = "scheduled"
	attrAttempt   = "attempt"
	attrRetickets = "retickets"
	attrSentBack  = "sent_back"
	attrReruns    = "reruns"
	attrRerunFrom = "rerun_from"
	attrSlowDowns = "slow_downs"
	attrOrder     = "line_order"
	attrPriority  = "priority"
	// The job's booking in its queue's horizon (job.Job.Booking), only
	// when it has one.
	attrBooking = "booking"
	// The job's result (JSON, at most job.MaxResult bytes), or the size
	// of one too large to keep.
	attrResult        = "result"
	attrResultDropped = "result_dropped"
	attrParkReason    = "park_reason"
	attrDueAt         = "due_at"
	attrEnqueuedAt    = "enqueued_at"
	attrStartedAt     = "started_at"
	attrFinishedAt    = "finished_at"
	attrLastError     = "last_error"
	attrExpiresAt     = "expires_at"
	// The job's key (job.Job.Key), only when it has one, and whether it
	// left the line to wait on a lane (job.Job.Detached), only when true.
	// A lane item names its key lane_key too.
	attrLaneKey  = "lane_key"
	attrDetached = "detached"
	// On job items: the job shares its ticket with the other jobs of its
	// batch (job.Job.Batched), only when true.
	attrBatched = "batched"
	// The job's history, compact (job.EncodeHistory, times after
	// enqueued_at), and how many older events it dropped.
	attrHistory        = "history"
	attrHistoryDropped = "history_dropped"
	// The job's W3C trace context (job.Job.TraceParent, TraceState) and
	// its last attempt's span (job.Job.AttemptSpan), each only when set.
	attrTraceParent = "traceparent"
	attrTraceState  = "tracestate"
	attrAttemptSpan = "attempt_span"
	attrTTL         = "ttl"
	attrQueueStatus = "queue_status"
)

// Sort keys and index names.
const (
	skState  = "state"
	skConfig = "config"
	skJob    = "job"

	// IndexByStatus lists the jobs of one queue and status by ticket.
	IndexByStatus = "by_status"
	// IndexQueues lists the queues by name.
	IndexQueues = "queues"

	// itemKindQueue is the item_kind of every queue config item: the one
	// partition of IndexQueues.
	itemKindQueue = "queue"
)

func queuePK(name string) string { return "Q#" + name }

// lanePK is the partition key of a queue's lanes: not the queue's own
// (Q#), whose hot state item may take writes near the 1,000 a second one
// partition sustains, so lane writes never compete with it.
func lanePK(queue string) string { return "L#" + queue }

// jobPK spreads jobs over partitions: one partition key per job. Queue
// names cannot contain '#', so the key is unambiguous.
func jobPK(queue, id string) string { return "J#" + queue + "#" + id }

// queueStatus is the by_status key of a listed job: the queue, the status
// and, when not 0, the queue's generation, so that a queue created again
// under a deleted one's name lists none of the old jobs.
func queueStatus(queue string, gen int64, st job.Status) string {
	k := queue + "#" + string(st)
	if gen != 0 {
		k += "#" + strconv.FormatInt(gen, 10)
	}
	return k
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(pk), attrSK: str(sk)}
}

func stateKey(name string) map[string]types.AttributeValue  { return key(queuePK(name), skState) }
func configKey(name string) map[string]types.AttributeValue { return key(queuePK(name), skConfig) }
func jobKey(k job.Ref) map[string]types.AttributeValue      { return key(jobPK(k.Queue, k.ID), skJob) }

// newToken returns a random write token.
func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hasToken reports whether an item carries the write token tok.
func hasToken(m map[string]types.AttributeValue, tok string) bool {
	v, ok := m[attrWriteToken].(*types.AttributeValueMemberS)
	return ok && v.Value == tok
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func boolean(b bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: b} }

// msNum encodes nanoseconds as a number of milliseconds, with a decimal
// fraction only when there is a sub-millisecond part. DynamoDB numbers are
// exact decimals, so arithmetic on them (clock + span) stays exact.
func msNum(ns int64) types.AttributeValue {
	neg := ns < 0
	u := uint64(ns)
	if neg {
		u = uint64(-ns)
	}
	s := strconv.FormatUint(u/1e6, 10)
	if frac := u % 1e6; frac != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
	}
	if neg {
		s = "-" + s
	}
	return &types.AttributeValueMemberN{Value: s}
}

func timeNum(t time.Time) types.AttributeValue    { return msNum(t.UnixNano()) }
func durNum(d time.Duration) types.AttributeValue { return msNum(int64(d)) }

var million = big.NewRat(1e6, 1)

// parseMs reads a number of milliseconds (in any notation DynamoDB may
// answer with) as nanoseconds.
func parseMs(s string) (int64, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, fmt.Errorf("bad number %q", s)
	}
	r.Mul(r, million)
	if !r.IsInt() {
		// Below a nanosecond: round toward zero.
		q := new(big.Int).Quo(r.Num(), r.Denom())
		return q.Int64(), nil
	}
	if !r.Num().IsInt64() {
		return 0, fmt.Errorf("number %q out of range", s)
	}
	return r.Num().Int64(), nil
}

// item is a DynamoDB item being read; the first decoding error sticks.
type item struct {
	m   map[string]types.AttributeValue
	err error
}

func (it *item) fail(name string, err error) {
	if it.err == nil {
		it.err = fmt.Errorf("attribute %s: %w", name, err)
	}
}

func (it *item) str(name string) string {
	switch v := it.m[name].(type) {
	case nil:
		return ""
	case *types.AttributeValueMemberS:
		return v.Value
	default:
		it.fail(name, fmt.Errorf("want a string, got %T", v))
		return ""
	}
}

func (it *item) numStr(name string) (string, bool) {
	switch v := it.m[name].(type) {
	case nil:
		return "", false
	case *types.AttributeValueMemberN:
		return v.Value, true
	default:
		it.fail(name, fmt.Errorf("want a number, got %T", v))
		return "", false
	}
}

func (it *item) int(name string) int64 {
	s, ok := it.numStr(name)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		it.fail(name, err)
	}
	return n
}

func (it *item) ns(name string) (int64, bool) {
	s, ok := it.numStr(name)
	if !ok {
		return 0, false
	}
	n, err := parseMs(s)
	if err != nil {
		it.fail(name, err)
	}
	return n, true
}

// time reads a time; an absent attribute is the zero time.
func (it *item) time(name string) time.Time {
	n, ok := it.ns(name)
	if !ok {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func (it *item) dur(name string) time.Duration {
	n, _ := it.ns(name)
	return time.Duration(n)
}

// running reads a map of ticket → time (the state item's running map).
// An absent map is nil, a present but empty one empty: Gate's hint tells
// the two apart (a nested SET needs the map to exist).
func (it *item) running(name string) map[int64]time.Time {
	switch v := it.m[name].(type) {
	case nil:
		return nil
	case *types.AttributeValueMemberM:
		out := make(map[int64]time.Time, len(v.Value))
		for k, x := range v.Value {
			ticket, err := strconv.ParseInt(k, 10, 64)
			if err != nil {
				it.fail(name, err)
				return nil
			}
			n, ok := x.(*types.AttributeValueMemberN)
			if !ok {
				it.fail(name, fmt.Errorf("ticket %s: want a number, got %T", k, x))
				return nil
			}
			ns, err := parseMs(n.Value)
			if err != nil {
				it.fail(name, fmt.Errorf("ticket %s: %w", k, err))
				return nil
			}
			out[ticket] = time.Unix(0, ns).UTC()
		}
		return out
	default:
		it.fail(name, fmt.Errorf("want a map, got %T", v))
		return nil
	}
}

func (it *item) bool(name string) bool {
	switch v := it.m[name].(type) {
	case nil:
		return false
	case *types.AttributeValueMemberBOOL:
		return v.Value
	default:
		it.fail(name, fmt.Errorf("want a boolean, got %T", v))
		return false
	}
}

func (it *item) bytes(name string) []byte {
	switch v := it.m[name].(type) {
	case nil:
		return nil
	case *types.AttributeValueMemberS:
		return []byte(v.Value)
	case *types.AttributeValueMemberB:
		return v.Value
	default:
		it.fail(name, fmt.Errorf("want a string or binary, got %T", v))
		return nil
	}
}

// decodeState reads the queue state item and what it says of its
// queue's limits.
func decodeState(m map[string]types.AttributeValue) (slot.State, limitsKey, error) {
	it := item{m: m}
	s := slot.State{
		Ticket:      it.int(attrTicket),
		Current:     it.int(attrCurrent),
		Front:       it.time(attrFront),
		Clock:       it.time(attrClock),
		LastStart:   it.time(attrLastStart),
		Paused:      it.bool(attrPaused),
		PausedUntil: it.time(attrPausedUntil),
		PausedAt:    it.time(attrPausedAt),
		Purged:      it.int(attrPurged),
		Running:     it.running(attrRunning),
		RunFrom:     it.time(attrRunFrom),
		Gated:       it.bool(attrGated),
		GatedUntil:  it.time(attrGatedUntil),
	}
	if _, ok := m[attrGatedThrough]; ok {
		s.GatedThrough = it.int(attrGatedThrough)
	}
	if _, ok := m[attrBatchTicket]; ok {
		s.BatchTicket, s.BatchAt, s.BatchFill = it.int(attrBatchTicket), it.time(attrBatchAt), int(it.int(attrBatchFill))
	}
	s.Line = s.Ticket
	if _, ok := m[attrLine]; ok {
		s.Line = it.int(attrLine)
	}
	decodeSlow(&it, &s)
	k := limitsKey{interval: it.dur(attrInterval), sig: it.str(attrLimits)}
	marks := it.str(attrMarks)
	if it.err != nil {
		return slot.State{}, limitsKey{}, fmt.Errorf("decode queue state: %w", it.err)
	}
	var err error
	if s.Marks, err = decodeMarks(marks); err != nil {
		return slot.State{}, limitsKey{}, fmt.Errorf("decode queue state: %w", err)
	}
	return s, k, nil
}

// newStateItem is the state item of a new queue. It carries the queue's
// generation (when not 0), which Take and Gate check.
func newStateItem(name string, ls slot.Limits, gen int64) map[string]types.AttributeValue {
	m := stateKey(name)
	m[attrTicket] = num(0)
	m[attrCurrent] = num(0)
	m[attrLine] = num(0)
	m[attrPaused] = boolean(false)
	k := keyOf(ls)
	m[attrInterval] = durNum(k.interval)
	if k.sig != "" {
		m[attrLimits] = str(k.sig)
	}
	if gen != 0 {
		m[attrGen] = num(gen)
	}
	return m
}

// genIs is the condition that the item's generation is gen: an item
// without one (a queue created before generations were kept on its
// state item) passes. Unset for gen 0.
func genIs(gen int64) expression.ConditionBuilder {
	if gen == 0 {
		return expression.ConditionBuilder{}
	}
	g := expression.Name(attrGen)
	return missingOr(g, g.Equal(expression.Value(num(gen))))
}

// genCond is genIs for the text forms (" AND …"; empty for gen 0).
func genCond(e *expr, gen int64) string {
	if gen == 0 {
		return ""
	}
	c, _ := e.inline(genIs(gen), expression.UpdateBuilder{})
	return " AND " + c
}

// otherGen reports whether item m carries a generation other than gen
// (gen 0 matches any).
func otherGen(m map[string]types.AttributeValue, gen int64) bool {
	if gen == 0 {
		return false
	}
	_, ok := m[attrGen]
	return ok && (&item{m: m}).int(attrGen) != gen
}

// configItem is the config item of a queue; it carries the keys of
// IndexQueues.
func configItem(name string, gen int64, cfg slot.Config, created time.Time) (map[string]types.AttributeValue, error) {
	b, err := cfg.Stored()
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	m := configKey(name)
	m[attrItemKind] = str(itemKindQueue)
	m[attrQueue] = str(name)
	m[attrConfig] = str(string(b))
	if gen != 0 {
		m[attrGen] = num(gen)
	}
	if !created.IsZero() {
		m[attrCreatedAt] = timeNum(created)
	}
	return m, nil
}

// decodeConfig reads a config item: name, configuration (from attribute
// attr: see configAttrs; slot.ReadStored fills the defaults its stored
// form leaves out), creation time.
func decodeConfig(m map[string]types.AttributeValue, attr string) (string, slot.Config, time.Time, error) {
	it := item{m: m}
	name := it.str(attrQueue)
	raw := it.str(attr)
	created := it.time(attrCreatedAt)
	if it.err != nil {
		return "", slot.Config{}, time.Time{}, fmt.Errorf("decode queue config: %w", it.err)
	}
	cfg, err := slot.ReadStored([]byte(raw))
	if err != nil {
		return "", slot.Config{}, time.Time{}, fmt.Errorf("decode queue config %s: %w", name, err)
	}
	return name, cfg, created, nil
}

// itemExists and itemMissing are the conditions of a write to an item that
// must, or must not, exist already.
func itemExists() expression.ConditionBuilder {
	return expression.AttributeExists(expression.Name(attrPK))
}

func itemMissing() expression.ConditionBuilder {
	return expression.AttributeNotExists(expression.Name(attrPK))
}
