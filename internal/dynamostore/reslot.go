package dynamostore

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// Reconfigure replaces the config item and, in the same transaction,
// moves the state item's limit state to r.Reslot of the state it holds:
// the state item's ticket, current, limits and limit state (last_start,
// clock, marks) are pinned to the values read, so a take or a gate that
// lands between the read and the write makes the transaction fail, and
// it is decided again on a new strong read. Two writes of a transaction
// each (the step is rare: configure). ErrQueueNotFound.
func (s *Store) Reconfigure(ctx context.Context, r engine.ReconfigureRequest) (slot.State, error) {
	b, err := r.Config.MarshalJSON()
	if err != nil {
		return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
	}
	for range reconfigureTries {
		m, err := s.getItem(ctx, stateKey(r.Queue))
		if err != nil {
			return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
		}
		if len(m) == 0 || otherGen(m, r.Gen) {
			return slot.State{}, notFound("reconfigure", r.Queue)
		}
		seen, k, err := decodeState(m)
		if err != nil {
			return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
		}
		next, _, err := r.Reslot(seen)
		if err != nil {
			return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
		}
		err = s.transact(ctx, []types.TransactWriteItem{
			{Update: configUpdate(r.Queue, s.table, string(b))},
			{Update: reslotUpdate(r, s.table, seen, next, k)},
		})
		reasons, cancelled := cancelReasons(err)
		switch {
		case err == nil:
			seen.LastStart, seen.Clock, seen.Marks = next.LastStart, next.Clock, next.Marks
			return seen, nil
		case cancelled && len(reasons) == 2 && code(reasons[0]) == reasonConditional:
			return slot.State{}, notFound("reconfigure", r.Queue)
		case cancelled && len(reasons) == 2 && code(reasons[1]) == reasonConditional:
			continue // the state moved since the read
		case cancelled:
			return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, txError(err, reasons))
		}
		return slot.State{}, fmt.Errorf("reconfigure %s: %w", r.Queue, err)
	}
	return slot.State{}, fmt.Errorf("reconfigure %s: the queue state kept changing under the update", r.Queue)
}

// reconfigureTries bounds the transactions of one Reconfigure: on a busy
// queue a gate lands between the read and the write now and then (each
// try is a strong read and a transaction; the caller, configure, is rare).
const reconfigureTries = 50

// configUpdate sets the config item's configuration to cfg (JSON), if
// the item exists.
func configUpdate(queue, table, cfg string) *types.Update {
	e := newExpr()
	cond := "attribute_exists(" + e.n(attrPK) + ")"
	upd := "SET " + e.n(attrConfig) + " = " + e.v(":cfg", str(cfg))
	return &types.Update{TableName: &table, Key: configKey(queue), UpdateExpression: &upd, ConditionExpression: &cond,
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values}
}

// reslotUpdate moves the state item from seen (under limits k) to next
// under r's limits.
func reslotUpdate(r engine.ReconfigureRequest, table string, seen, next slot.State, k limitsKey) *types.Update {
	e := newExpr()
	pinned, set, remove := pin(e, seen, next)
	conds := []string{
		e.n(attrTicket) + " = " + e.v(":ticket", num(seen.Ticket)),
		e.n(attrCurrent) + " = " + e.v(":current", num(seen.Current)),
		e.n(attrInterval) + " = " + e.v(":was_iv", durNum(k.interval)),
		pinned,
	}
	if k.sig == "" {
		conds = append(conds, "attribute_not_exists("+e.n(attrLimits)+")")
	} else {
		conds = append(conds, e.n(attrLimits)+" = "+e.v(":was_lim", str(k.sig)))
	}
	nk := keyOf(r.Config.LimitList())
	sets := []string{e.n(attrInterval) + " = " + e.v(":iv", durNum(nk.interval)), e.n(attrWriteToken) + " = " + e.v(":tok", str(newToken()))}
	if set != "" {
		sets = append(sets, set)
	}
	if nk.sig != "" {
		sets = append(sets, e.n(attrLimits)+" = "+e.v(":lim", str(nk.sig)))
	} else if k.sig != "" {
		remove = append(remove, e.n(attrLimits))
	}
	upd := "SET " + strings.Join(sets, ", ")
	if len(remove) > 0 {
		upd += " REMOVE " + strings.Join(remove, ", ")
	}
	cond := strings.Join(conds, " AND ") + genCond(e, r.Gen)
	return &types.Update{TableName: &table, Key: stateKey(r.Queue), UpdateExpression: &upd, ConditionExpression: &cond,
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values}
}
