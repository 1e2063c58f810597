package dynamostore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/slot"
)

// encodeWaiting writes waiters as one string, "ticket:id,ticket:id": job
// ids hold no comma, and the ticket ends at the first colon. About half
// the bytes of a list of maps, whose every write pays its size.
func encodeWaiting(ws []slot.Waiter) (string, error) {
	return encodeList("waiter", ws, func(w slot.Waiter) (string, string) {
		return w.JobID, strconv.FormatInt(w.Ticket, 10) + ":" + w.JobID
	})
}

// encodeMore writes holders as one string, "ticket:until:id,…" (until in
// Unix nanoseconds; the id last, as it may hold colons but no comma).
func encodeMore(hs []slot.Hold) (string, error) {
	return encodeList("holder", hs, func(h slot.Hold) (string, string) {
		return h.JobID, fmt.Sprintf("%d:%d:%s", h.Ticket, h.Until.UnixNano(), h.JobID)
	})
}

// encodeList joins the entries of xs with commas; entry answers each
// one's job id, which must be neither empty nor hold a comma (the
// separator), and its text. what names an entry in the error.
func encodeList[T any](what string, xs []T, entry func(T) (id, text string)) (string, error) {
	texts := make([]string, len(xs))
	for i, x := range xs {
		id, text := entry(x)
		if id == "" || strings.ContainsRune(id, ',') {
			return "", fmt.Errorf("%s %d: job id %q cannot be stored", what, i, id)
		}
		texts[i] = text
	}
	return strings.Join(texts, ","), nil
}

func decodeMore(s string) ([]slot.Hold, error) {
	return decodeList("holder", s, func(e string) (slot.Hold, bool) {
		f := strings.SplitN(e, ":", 3)
		if len(f) != 3 || f[2] == "" {
			return slot.Hold{}, false
		}
		ticket, err1 := strconv.ParseInt(f[0], 10, 64)
		until, err2 := strconv.ParseInt(f[1], 10, 64)
		return slot.Hold{Waiter: slot.Waiter{Ticket: ticket, JobID: f[2]}, Until: time.Unix(0, until).UTC()}, err1 == nil && err2 == nil
	})
}

func decodeWaiting(s string) ([]slot.Waiter, error) {
	return decodeList("waiter", s, func(e string) (slot.Waiter, bool) {
		t, id, ok := strings.Cut(e, ":")
		ticket, err := strconv.ParseInt(t, 10, 64)
		return slot.Waiter{Ticket: ticket, JobID: id}, ok && err == nil && id != ""
	})
}

// decodeList splits what encodeList wrote (nil for ""); entry reads one
// entry, and answers false for one it cannot read (a bad what).
func decodeList[T any](what, s string, entry func(string) (T, bool)) ([]T, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]T, len(parts))
	for i, p := range parts {
		x, ok := entry(p)
		if !ok {
			return nil, fmt.Errorf("bad %s %q", what, p)
		}
		out[i] = x
	}
	return out, nil
}

// laneItem encodes l at version v, written at now with AddPending's write
// token tok (only AddPending puts a whole item: a lane started afresh).
// Zero fields are left out, but for gen, pending and v.
func laneItem(l slot.Lane, v int64, tok string, now time.Time) (map[string]types.AttributeValue, error) {
	m := laneKey(l.Queue, l.Key)
	m[attrQueue] = str(l.Queue)
	if l.Key != "" {
		m[attrLaneKey] = str(l.Key)
	}
	m[attrGen] = num(l.Gen)
	m[attrVersion] = num(v)
	if l.Holder != (slot.Waiter{}) {
		if strings.ContainsRune(l.Holder.JobID, ',') {
			return nil, fmt.Errorf("holder: job id %q cannot be stored", l.Holder.JobID)
		}
		m[attrHolderTicket] = num(l.Holder.Ticket)
		m[attrHolderID] = str(l.Holder.JobID)
	}
	if !l.Until.IsZero() {
		m[attrUntil] = timeNum(l.Until)
	}
	if l.Last != 0 {
		m[attrLast] = num(l.Last)
	}
	if len(l.Waiting) > 0 {
		w, err := encodeWaiting(l.Waiting)
		if err != nil {
			return nil, err
		}
		m[attrWaiting] = str(w)
	}
	if len(l.More) > 0 {
		more, err := encodeMore(l.More)
		if err != nil {
			return nil, err
		}
		m[attrMore] = str(more)
	}
	m[attrPending] = num(l.Pending)
	m[attrTTL] = laneTTL(now, l)
	m[attrAddToken] = str(tok)
	return m, nil
}

// decodeLane reads a lane item; its key comes from the sort key.
func decodeLane(m map[string]types.AttributeValue) (slot.Lane, error) {
	it := item{m: m}
	sk := it.str(attrSK)
	l := slot.Lane{
		Queue:   it.str(attrQueue),
		Key:     strings.TrimPrefix(sk, skLanePrefix),
		Gen:     it.int(attrGen),
		Version: it.int(attrVersion),
		Holder:  slot.Waiter{Ticket: it.int(attrHolderTicket), JobID: it.str(attrHolderID)},
		Until:   it.time(attrUntil),
		Last:    it.int(attrLast),
		Pending: it.int(attrPending),
	}
	waiting, more := it.str(attrWaiting), it.str(attrMore)
	if it.err == nil && !strings.HasPrefix(sk, skLanePrefix) {
		it.fail(attrSK, fmt.Errorf("%q is not a lane's", sk))
	}
	if it.err != nil {
		return slot.Lane{}, fmt.Errorf("decode lane: %w", it.err)
	}
	w, err := decodeWaiting(strings.TrimPrefix(waiting, tailMark))
	if err != nil {
		return slot.Lane{}, fmt.Errorf("decode lane %s/%s: %w", l.Queue, l.Key, err)
	}
	l.Waiting = w
	if l.More, err = decodeMore(more); err != nil {
		return slot.Lane{}, fmt.Errorf("decode lane %s/%s: %w", l.Queue, l.Key, err)
	}
	return l, nil
}
