package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

var _ engine.State = (*Store)(nil)

// Options configures a Store.
type Options struct {
	// Now is the clock that decides which finished jobs have expired
	// (job.Expired), for GetJob, ListJobs and CountJobs: DynamoDB deletes
	// expired items lazily, so reads filter them. Lane writes take their
	// ttl from it, and a created lane its first version (laneSeed, in
	// lane.go): under a clock that stands still, as a test's may, a lane
	// deleted and created again takes its old versions again. Default
	// time.Now. Every other time comes from the request.
	Now func() time.Time
}

// Store is an engine.State on one DynamoDB table (see the package
// documentation for its layout). It holds no state of its own but what it
// knows of lanes' waiters and of horizons by version (tailCache,
// roomCache), which never goes stale, so any number of Stores, in any
// number of processes, may share a table.
// Safe for concurrent use.
type Store struct {
	api   DynamoDBAPI
	table string
	now   func() time.Time
	tails tailCache
	rooms roomCache
}

// New returns a Store on table, which must exist (see CreateTable).
func New(api DynamoDBAPI, table string, opts Options) *Store {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{api: api, table: table, now: opts.Now}
}

// Table returns the table's name.
func (s *Store) Table() string { return s.table }

func notFound(op, name string) error {
	return fmt.Errorf("%s %s: %w", op, name, engine.ErrQueueNotFound)
}

// CreateQueue writes the queue's state and config items in one
// transaction. ErrQueueExists.
func (s *Store) CreateQueue(ctx context.Context, q engine.Queue) error {
	if err := slot.ValidateName(q.Name); err != nil {
		return fmt.Errorf("create queue: %w", err)
	}
	cfg, err := configItem(q.Name, q.Gen, q.Config, q.CreatedAt)
	if err != nil {
		return fmt.Errorf("create queue %s: %w", q.Name, err)
	}
	x, err := expression.NewBuilder().WithCondition(itemMissing()).Build()
	if err != nil {
		return fmt.Errorf("create queue %s: %w", q.Name, err)
	}
	err = s.transact(ctx, []types.TransactWriteItem{
		{Put: &types.Put{TableName: &s.table, Item: newStateItem(q.Name, q.Config.LimitList(), q.Gen),
			ConditionExpression: x.Condition(), ExpressionAttributeNames: x.Names()}},
		{Put: &types.Put{TableName: &s.table, Item: cfg,
			ConditionExpression: x.Condition(), ExpressionAttributeNames: x.Names()}},
	})
	if reasons, ok := cancelReasons(err); ok {
		for _, r := range reasons {
			if code(r) == reasonConditional {
				return fmt.Errorf("create queue %s: %w", q.Name, engine.ErrQueueExists)
			}
		}
		return fmt.Errorf("create queue %s: %w", q.Name, txError(err, reasons))
	}
	if err != nil {
		return fmt.Errorf("create queue %s: %w", q.Name, err)
	}
	return nil
}

// GetQueue reads both items of a queue with one strongly consistent Query.
// The query keeps to the sort keys from config to state (config, resume,
// state), so nothing else the partition may hold is read and paid for:
// lanes have their own partition key (L#<queue>) now, but a table written
// before they moved keeps lane items (K#<key>) here until their ttl.
// ErrQueueNotFound.
func (s *Store) GetQueue(ctx context.Context, name string) (engine.Queue, error) {
	x, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(attrPK).Equal(expression.Value(queuePK(name))).
			And(expression.Key(attrSK).Between(expression.Value(skConfig), expression.Value(skState)))).Build()
	if err != nil {
		return engine.Queue{}, fmt.Errorf("get queue %s: %w", name, err)
	}
	for try := 0; ; try++ {
		out, err := s.query(ctx, &dynamodb.QueryInput{
			KeyConditionExpression:    x.KeyCondition(),
			ExpressionAttributeNames:  x.Names(),
			ExpressionAttributeValues: x.Values(),
			ConsistentRead:            aws.Bool(true),
		})
		if err != nil {
			return engine.Queue{}, fmt.Errorf("get queue %s: %w", name, err)
		}
		var stateItem, cfgItem map[string]types.AttributeValue
		for _, m := range out.Items {
			it := item{m: m}
			switch it.str(attrSK) {
			case skState:
				stateItem = m
			case skConfig:
				cfgItem = m
			}
		}
		if stateItem == nil || cfgItem == nil {
			return engine.Queue{}, notFound("get queue", name)
		}
		q, err := decodeQueue(cfgItem, stateItem)
		if errors.Is(err, errChangeUnseen) && try < unseenTries {
			continue // the query read the items across a configure's writes
		}
		return q, err
	}
}

// unseenTries bounds the reads again of a queue whose two items were read
// across a configure's writes (errChangeUnseen): the config item's write
// lands before the state item's, so a read after the state item's sees
// both.
const unseenTries = 5

// decodeQueue reads a queue from its config and state items, with the
// configuration the state item's last change names (configAttrs).
func decodeQueue(cfgItem, stateItem map[string]types.AttributeValue) (engine.Queue, error) {
	cfgAttr, rebookedAttr, err := configAttrs(cfgItem, stateItem)
	if err != nil {
		return engine.Queue{}, fmt.Errorf("queue %s: %w", (&item{m: cfgItem}).str(attrQueue), err)
	}
	name, cfg, created, err := decodeConfig(cfgItem, cfgAttr)
	if err != nil {
		return engine.Queue{}, err
	}
	st, _, err := decodeState(stateItem)
	if err != nil {
		return engine.Queue{}, fmt.Errorf("queue %s: %w", name, err)
	}
	it := item{m: cfgItem}
	gen := it.int(attrGen)
	if it.err != nil {
		return engine.Queue{}, fmt.Errorf("queue %s: %w", name, it.err)
	}
	rec, err := decodeRebooked(cfgItem, rebookedAttr)
	if err != nil {
		return engine.Queue{}, fmt.Errorf("queue %s: %w", name, err)
	}
	return engine.Queue{Name: name, Gen: gen, Config: cfg, State: st, CreatedAt: created, Rebooked: rec}, nil
}

// ListQueues pages through IndexQueues (config items, in name order) and
// reads the state items with BatchGetItem. The index is eventually
// consistent: a queue created a moment ago may be missing.
func (s *Store) ListQueues(ctx context.Context) ([]engine.Queue, error) {
	in, err := queryOf(expression.NewBuilder().
		WithKeyCondition(expression.Key(attrItemKind).Equal(expression.Value(itemKindQueue))))
	var cfgs []map[string]types.AttributeValue
	if err == nil {
		in.IndexName = aws.String(IndexQueues)
		err = s.queryPages(ctx, in, nil, func(out *dynamodb.QueryOutput) (bool, error) {
			cfgs = append(cfgs, out.Items...)
			return true, nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	states := make(map[string]map[string]types.AttributeValue, len(cfgs))
	var keys []map[string]types.AttributeValue
	for _, m := range cfgs {
		it := item{m: m}
		keys = append(keys, stateKey(it.str(attrQueue)))
	}
	for len(keys) > 0 {
		n := min(len(keys), 100)
		batch := keys[:n]
		keys = keys[n:]
		for len(batch) > 0 {
			out, err := s.batchGet(ctx, &dynamodb.BatchGetItemInput{
				RequestItems: map[string]types.KeysAndAttributes{
					s.table: {Keys: batch, ConsistentRead: aws.Bool(true)},
				},
			})
			if err != nil {
				return nil, fmt.Errorf("list queues: %w", err)
			}
			for _, m := range out.Responses[s.table] {
				states[(&item{m: m}).str(attrPK)] = m
			}
			batch = out.UnprocessedKeys[s.table].Keys
			if len(batch) > 0 {
				// Throttled in part: the SDK does not retry unprocessed keys.
				if err := backoff(ctx, 2); err != nil {
					return nil, fmt.Errorf("list queues: %w", err)
				}
			}
		}
	}
	qs := make([]engine.Queue, 0, len(cfgs))
	for _, m := range cfgs {
		it := item{m: m}
		st, ok := states[queuePK(it.str(attrQueue))]
		if !ok {
			continue // deleted since the index answered
		}
		q, err := decodeQueue(m, st)
		if errors.Is(err, errChangeUnseen) {
			// The index lags a configure: read the queue itself.
			q, err = s.GetQueue(ctx, it.str(attrQueue))
			if errors.Is(err, engine.ErrQueueNotFound) {
				continue
			}
		}
		if err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		qs = append(qs, q)
	}
	return qs, nil
}

// SetConfig replaces the config item and copies what the gate checks of
// its limits (interval, limits) to the state item, in one transaction. ErrQueueNotFound.
func (s *Store) SetConfig(ctx context.Context, name string, cfg slot.Config) error {
	b, err := cfg.Stored()
	if err != nil {
		return fmt.Errorf("set config %s: %w", name, err)
	}
	cx, err := expression.NewBuilder().WithCondition(itemExists()).
		WithUpdate(expression.Set(expression.Name(attrConfig), expression.Value(string(b)))).Build()
	if err != nil {
		return fmt.Errorf("set config %s: %w", name, err)
	}
	k := keyOf(cfg.LimitList())
	limits := expression.Set(expression.Name(attrInterval), expression.Value(durNum(k.interval)))
	if k.sig != "" {
		limits = limits.Set(expression.Name(attrLimits), expression.Value(k.sig))
	} else {
		limits = limits.Remove(expression.Name(attrLimits))
	}
	sx, err := expression.NewBuilder().WithCondition(itemExists()).WithUpdate(limits).Build()
	if err != nil {
		return fmt.Errorf("set config %s: %w", name, err)
	}
	err = s.transact(ctx, []types.TransactWriteItem{
		{Update: &types.Update{TableName: &s.table, Key: configKey(name),
			UpdateExpression:          cx.Update(),
			ConditionExpression:       cx.Condition(),
			ExpressionAttributeNames:  cx.Names(),
			ExpressionAttributeValues: cx.Values()}},
		{Update: &types.Update{TableName: &s.table, Key: stateKey(name),
			UpdateExpression:          sx.Update(),
			ConditionExpression:       sx.Condition(),
			ExpressionAttributeNames:  sx.Names(),
			ExpressionAttributeValues: sx.Values()}},
	})
	if reasons, ok := cancelReasons(err); ok {
		for _, r := range reasons {
			if code(r) == reasonConditional {
				return notFound("set config", name)
			}
		}
		return fmt.Errorf("set config %s: %w", name, txError(err, reasons))
	}
	if err != nil {
		return fmt.Errorf("set config %s: %w", name, err)
	}
	return nil
}

// Pause sets the pause flag on the state item. ErrQueueNotFound.
func (s *Store) Pause(ctx context.Context, name string, until time.Time) (slot.State, error) {
	pa := expression.Name(attrPausedAt)
	upd := expression.Set(expression.Name(attrPaused), expression.Value(true)).
		Set(pa, expression.IfNotExists(pa, expression.Value(timeNum(s.now()))))
	upd = setOrRemove(upd, attrPausedUntil, !until.IsZero(), timeNum(until))
	// The pause's end is an entry of the due index (due.go).
	return s.updateState(ctx, "pause", name, dueUpdate(upd, queuePK(name), skState, until))
}

// Purge sets purged = ticket on the state item, one UpdateItem.
// ErrQueueNotFound.
func (s *Store) Purge(ctx context.Context, name string) (slot.State, error) {
	return s.updateState(ctx, "purge", name, expression.Set(expression.Name(attrPurged), expression.Name(attrTicket)))
}

// updateState applies upd to the state item of queue name, if it exists,
// and returns the state after it. ErrQueueNotFound (for op).
func (s *Store) updateState(ctx context.Context, op, name string, upd expression.UpdateBuilder) (slot.State, error) {
	m, ok, err := s.updateIf(ctx, stateKey(name), updateWhen(upd, itemExists()))
	if err != nil {
		return slot.State{}, fmt.Errorf("%s %s: %w", op, name, err)
	}
	if !ok {
		return slot.State{}, notFound(op, name)
	}
	st, _, err := decodeState(m)
	if err != nil {
		return slot.State{}, fmt.Errorf("%s %s: %w", op, name, err)
	}
	return st, nil
}

// Unpause clears the pause flag if it is set (and, with a non-zero
// ifUntil, if PausedUntil is exactly that). ErrQueueNotFound.
func (s *Store) Unpause(ctx context.Context, name string, ifUntil time.Time) (bool, error) {
	cond := expression.Name(attrPaused).Equal(expression.Value(true))
	if !ifUntil.IsZero() {
		cond = cond.And(expression.Name(attrPausedUntil).Equal(expression.Value(timeNum(ifUntil))))
	}
	upd := expression.Set(expression.Name(attrPaused), expression.Value(false)).Remove(expression.Name(attrPausedUntil)).Remove(expression.Name(attrPausedAt))
	ok, gone, err := s.updateOrGone(ctx, stateKey(name), updateWhen(dueUpdate(upd, queuePK(name), skState, time.Time{}), cond))
	if gone {
		return false, notFound("unpause", name)
	}
	if err != nil {
		return false, fmt.Errorf("unpause %s: %w", name, err)
	}
	return ok, nil
}

// updateOrGone applies x to the item at key, as updateIf; refused, it
// reads the item (orRead) and reports whether it is gone.
func (s *Store) updateOrGone(ctx context.Context, key map[string]types.AttributeValue, x exprs) (ok, gone bool, err error) {
	old, ok, err := s.updateIf(ctx, key, x)
	if err == nil && !ok {
		old, err = s.orRead(ctx, key, old)
	}
	return ok, err == nil && !ok && old == nil, err
}

// DeleteQueue deletes the items of a queue (state, config, resume lease);
// its jobs stay, in a generation no queue has, and so do its lanes (under
// L#<queue>), which a queue created again under the name starts afresh
// and whose ttl deletes the rest (laneKeep). ErrQueueNotFound.
func (s *Store) DeleteQueue(ctx context.Context, name string) error {
	x, err := expression.NewBuilder().WithCondition(itemExists()).Build()
	if err != nil {
		return fmt.Errorf("delete queue %s: %w", name, err)
	}
	err = s.transact(ctx, []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: &s.table, Key: stateKey(name),
			ConditionExpression: x.Condition(), ExpressionAttributeNames: x.Names()}},
		{Delete: &types.Delete{TableName: &s.table, Key: configKey(name)}},
		{Delete: &types.Delete{TableName: &s.table, Key: leaseKey(name)}},
	})
	if reasons, ok := cancelReasons(err); ok {
		if len(reasons) > 0 && code(reasons[0]) == reasonConditional {
			return notFound("delete queue", name)
		}
		return fmt.Errorf("delete queue %s: %w", name, txError(err, reasons))
	}
	if err != nil {
		return fmt.Errorf("delete queue %s: %w", name, err)
	}
	return nil
}

// orRead returns old, the item a conditional failure sent back, or, when
// it sent none, reads the item: DynamoDB sends nothing for a missing item,
// and an endpoint that ignores ReturnValuesOnConditionCheckFailure sends
// nothing either. nil means the item does not exist.
func (s *Store) orRead(ctx context.Context, k, old map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	if len(old) > 0 {
		return old, nil
	}
	m, err := s.getItem(ctx, k)
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

var errGateDisagrees = errors.New("the gate condition failed but the queue state allows the start")
