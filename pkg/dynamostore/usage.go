package dynamostore

import (
	"maps"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Operation kinds, the keys of Usage.
const (
	OpCreateQueue = "create_queue"
	OpGetQueue    = "get_queue"
	OpListQueues  = "list_queues"
	OpSetConfig   = "set_config"
	OpPause       = "pause"
	OpUnpause     = "unpause"
	OpDeleteQueue = "delete_queue"
	OpPurge       = "purge"
	OpTake        = "take"
	OpGate        = "gate"
	OpCreateJobs  = "create_jobs"
	OpGetJob      = "get_job"
	OpUpdateJob   = "update_job"
	OpListJobs    = "list_jobs"
	OpCountJobs   = "count_jobs"
)

// Units is what the calls of one operation kind cost.
type Units struct {
	// Calls counts DynamoDB requests (not SDK retries of one request).
	Calls int64
	// ReadUnits and WriteUnits add up the ConsumedCapacity DynamoDB
	// reported (read and write request units on on-demand tables).
	ReadUnits  float64
	WriteUnits float64
	// CondFailed counts requests that failed a condition (a conditional
	// check or a cancelled transaction). DynamoDB bills them — a failed
	// conditional write costs the write — but reports no capacity for
	// them, so they are not in WriteUnits.
	CondFailed int64
}

// Add returns the sum of u and v.
func (u Units) Add(v Units) Units {
	return Units{
		Calls: u.Calls + v.Calls, ReadUnits: u.ReadUnits + v.ReadUnits,
		WriteUnits: u.WriteUnits + v.WriteUnits, CondFailed: u.CondFailed + v.CondFailed,
	}
}

// Usage maps operation kinds (OpTake, OpStart, …) to their cost.
type Usage map[string]Units

// Total sums every operation kind.
func (u Usage) Total() Units {
	var t Units
	for _, v := range u {
		t = t.Add(v)
	}
	return t
}

// Sub returns u minus an earlier snapshot, for the cost of what happened
// in between.
func (u Usage) Sub(earlier Usage) Usage {
	out := make(Usage, len(u))
	for k, v := range u {
		e := earlier[k]
		out[k] = Units{
			Calls: v.Calls - e.Calls, ReadUnits: v.ReadUnits - e.ReadUnits,
			WriteUnits: v.WriteUnits - e.WriteUnits, CondFailed: v.CondFailed - e.CondFailed,
		}
	}
	return out
}

type meter struct {
	mu    sync.Mutex
	usage Usage
}

func (m *meter) snapshot() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.usage)
}

// record counts one call of op. write says which side CapacityUnits goes
// to when DynamoDB reports only the total.
func (m *meter) record(op string, write bool, ccs ...*types.ConsumedCapacity) {
	var u Units
	u.Calls = 1
	for _, cc := range ccs {
		if cc == nil {
			continue
		}
		r, w := aws.ToFloat64(cc.ReadCapacityUnits), aws.ToFloat64(cc.WriteCapacityUnits)
		if r == 0 && w == 0 {
			if write {
				w = aws.ToFloat64(cc.CapacityUnits)
			} else {
				r = aws.ToFloat64(cc.CapacityUnits)
			}
		}
		u.ReadUnits += r
		u.WriteUnits += w
	}
	m.add(op, u)
}

func (m *meter) condFailed(op string) {
	m.add(op, Units{Calls: 1, CondFailed: 1})
}

// failed counts a call that returned another error.
func (m *meter) failed(op string) {
	m.add(op, Units{Calls: 1})
}

func (m *meter) add(op string, u Units) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.usage == nil {
		m.usage = Usage{}
	}
	m.usage[op] = m.usage[op].Add(u)
}

func ccs(list []types.ConsumedCapacity) []*types.ConsumedCapacity {
	out := make([]*types.ConsumedCapacity, len(list))
	for i := range list {
		out[i] = &list[i]
	}
	return out
}
