package dynamostore

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/slotq/slotq/internal/slot"
)

// Where a horizon's bookings lie. While they are few (up to inlineMax
// bytes of JSON) the head holds them, in attrHorizon with the rest of
// the horizon, and a horizon is the one item it always was. Beyond, they
// lie in page items of the horizon's partition, W#<queue> / room#<n>,
// each the bookings numbered n·pageSpan to n·pageSpan+pageSpan−1 as JSON
// (attrBookings), and the head holds the rest of the horizon in
// attrRoomHead and the number of its pages in attrRoomPages. A page is
// at most pageSpan bookings of the longest id and key (about 7 KB), and
// the head, without its bookings, at most the room's counts by key
// (slot.MaxCountBytes) and a few fields: no item of a horizon outgrows
// DynamoDB's 400 KB, whatever book_ahead and however many keys.
//
// Every write is a compare-and-set of the head's version, and a write
// that changes pages puts or deletes them in the same transaction as the
// head (at most maxPageWrites of them). A change of more pages than
// that is written in several, each a compare-and-set of the version the
// one before set (chain): first the bookings freed or started (what the
// old and the new horizon share, as the new has them), then those added,
// so that every version a reader meets in between holds bookings that
// either the old horizon or the new one holds — never more than the
// bounds let either hold. The pages changed are found by comparing the
// horizon written with the one read at its version (roomCache).
const (
	skPagePrefix  = skRoom + "#"
	attrBookings  = "bookings"
	attrRoomHead  = "room_head"
	attrRoomPages = "room_pages"

	// pageSpan is how many booking numbers a page holds.
	pageSpan = 16
	// inlineMax is the most bytes of bookings the head holds; a horizon
	// whose bookings lie in pages takes them back at half of it, so
	// that one at the threshold does not move them to and fro.
	inlineMax = 16 << 10
	// maxPageWrites is how many pages one transaction writes: DynamoDB's
	// 100 items, the head's among them.
	maxPageWrites = 99
	// maxTornReads bounds the reads of a horizon whose pages a write
	// changed while they were read.
	maxTornReads = 10
	// maxCachedRooms bounds the horizons roomCache keeps; when full, it
	// starts over.
	maxCachedRooms = 256
)

// bookings are a horizon's bookings by number (slot.Horizon.Booked).
type bookings = map[int64]slot.Booking

// roomView is a horizon as stored at one version: its head's fields (h,
// whose Booked holds every booking), the bookings the head holds, and
// each page's.
type roomView struct {
	h      slot.Horizon
	inline bookings
	pages  map[int64]bookings
}

func pageOf(seq int64) int64 { return seq / pageSpan }

func pageSK(n int64) string { return skPagePrefix + strconv.FormatInt(n, 10) }

// bookingBytes is about what b adds to an item as JSON: the id, the key,
// the number, the time and the JSON around them.
func bookingBytes(b bookings) int {
	n := 0
	for _, x := range b {
		n += len(x.Key) + len(x.ID) + 72
	}
	return n
}

// viewOf is h as stored after a write from a horizon whose bookings lay
// in pages (paged) or not: inline while they are few, else in pages.
// The view owns its maps.
func viewOf(h slot.Horizon, paged bool) roomView {
	v := roomView{h: h.Clone()}
	if size := bookingBytes(h.Booked); size <= inlineMax/2 || size <= inlineMax && !paged {
		v.inline = maps.Clone(h.Booked)
		return v
	}
	v.pages = group(h.Booked)
	return v
}

// group puts bookings b on their pages.
func group(b bookings) map[int64]bookings {
	pages := map[int64]bookings{}
	for seq, x := range b {
		n := pageOf(seq)
		if pages[n] == nil {
			pages[n] = bookings{}
		}
		pages[n][seq] = x
	}
	return pages
}

func sameBooking(a, b slot.Booking) bool {
	return a.Key == b.Key && a.ID == b.ID && a.Running == b.Running && a.At.Equal(b.At)
}

// dirty lists, in order, the pages whose items differ between x and y.
func dirty(x, y map[int64]bookings) []int64 {
	var out []int64
	for n, b := range x {
		if c, ok := y[n]; !ok || !maps.EqualFunc(b, c, sameBooking) {
			out = append(out, n)
		}
	}
	for n := range y {
		if _, ok := x[n]; !ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// chain is the writes that move a horizon stored as x to y, each a view
// as stored after it, y last: one, unless y changes more than
// maxPageWrites pages. Then it goes first to what x and y share, as y
// has it (frees, started bookings), then on to y (additions), each in
// writes of maxPageWrites pages; the versions between keep x's fields
// (counts, turns, times) with y's last booking number, so that no number
// is handed out twice.
func chain(x, y roomView) []roomView {
	if len(dirty(x.pages, y.pages)) <= maxPageWrites {
		return []roomView{y}
	}
	head := x.h
	head.Seq = max(x.h.Seq, y.h.Seq)
	shared := bookings{}
	for seq, b := range y.h.Booked {
		if _, ok := x.h.Booked[seq]; ok {
			shared[seq] = b
		}
	}
	mid := roomView{h: head, inline: shared}
	if y.pages != nil {
		mid = roomView{h: head, pages: group(shared)}
	}
	mid.h.Booked = shared
	var out []roomView
	if len(dirty(x.pages, mid.pages)) > 0 {
		out = steps(x, mid, head)
	} else {
		mid = x
	}
	return append(out, steps(mid, y, head)...)
}

// steps moves x to y maxPageWrites pages a write, the pages in order:
// the views between hold y's pages and y's inline bookings on the pages
// done, and x's on the pages still to do, under head's fields.
func steps(x, y roomView, head slot.Horizon) []roomView {
	d := dirty(x.pages, y.pages)
	var out []roomView
	for i := maxPageWrites; i < len(d); i += maxPageWrites {
		pending := map[int64]bool{}
		for _, n := range d[i:] {
			pending[n] = true
		}
		z := roomView{h: head, inline: bookings{}, pages: maps.Clone(x.pages)}
		for _, n := range d[:i] {
			if len(y.pages[n]) == 0 {
				delete(z.pages, n)
			} else {
				z.pages[n] = y.pages[n]
			}
		}
		for seq, b := range y.inline {
			if !pending[pageOf(seq)] {
				z.inline[seq] = b
			}
		}
		for seq, b := range x.inline {
			if pending[pageOf(seq)] {
				z.inline[seq] = b
			}
		}
		z.h.Booked = maps.Clone(z.inline)
		for _, p := range z.pages {
			maps.Copy(z.h.Booked, p)
		}
		out = append(out, z)
	}
	return append(out, y)
}

// pageWrites are the puts and deletes that turn pages x into y.
func (s *Store) pageWrites(queue string, x, y map[int64]bookings) ([]types.TransactWriteItem, error) {
	var out []types.TransactWriteItem
	for _, n := range dirty(x, y) {
		if len(y[n]) == 0 {
			out = append(out, types.TransactWriteItem{Delete: &types.Delete{TableName: &s.table, Key: key(horizonPK(queue), pageSK(n))}})
			continue
		}
		text, err := json.Marshal(y[n])
		if err != nil {
			return nil, err
		}
		out = append(out, types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: map[string]types.AttributeValue{
			attrPK: str(horizonPK(queue)), attrSK: str(pageSK(n)), attrBookings: str(string(text)),
		}}})
	}
	return out, nil
}

// decodePage reads a page item: its number and bookings.
func decodePage(m map[string]types.AttributeValue) (int64, bookings, error) {
	it := &item{m: m}
	sk, text := it.str(attrSK), it.str(attrBookings)
	if it.err != nil {
		return 0, nil, it.err
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(sk, skPagePrefix), 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("page %q: %w", sk, err)
	}
	var b bookings
	if err := json.Unmarshal([]byte(text), &b); err != nil {
		return 0, nil, fmt.Errorf("page %q: %w", sk, err)
	}
	return n, b, nil
}

// roomCache keeps the last horizon each queue was read or written at, by
// version: a horizon's versions never repeat, so a view of the version
// the head is at is the horizon as stored, and a read finds its pages
// there instead of reading them again; a write compares with it what
// changed. It holds views, never changed after they are kept.
type roomCache struct {
	mu sync.Mutex
	m  map[string]roomView
}

func (c *roomCache) get(queue string, version int64) (roomView, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[queue]
	return v, ok && version != 0 && v.h.Version == version
}

func (c *roomCache) put(queue string, v roomView) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedRooms {
		c.m = map[string]roomView{}
	}
	c.m[queue] = v
}
