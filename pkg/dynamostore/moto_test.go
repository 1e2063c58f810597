package dynamostore_test

import (
	"net/http"
	"strings"
	"sync"
)

// motoSerial makes moto_server as atomic as DynamoDB. moto applies a
// TransactWriteItems by deep-copying each table it touches and, when a
// condition fails, putting the copies back — over whatever other requests
// wrote meanwhile — and it checks conditions and writes without a lock.
// Under concurrent requests that loses writes and leaves half-applied
// transactions (seen here: a cancelled Start left its job running). So
// tests send writes one at a time and reads alongside each other, which is
// the isolation DynamoDB gives per item and per transaction. The store's
// code is the same as in production; only moto is held to the contract.
type motoSerial struct {
	mu   *sync.RWMutex
	next httpClient
}

// httpClient is aws.HTTPClient.
type httpClient interface {
	Do(*http.Request) (*http.Response, error)
}

// doFunc is an httpClient made of a function.
type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

func (m *motoSerial) Do(r *http.Request) (*http.Response, error) {
	op := r.Header.Get("X-Amz-Target")
	op = op[strings.LastIndex(op, ".")+1:]
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem":
		m.mu.Lock()
		defer m.mu.Unlock()
	default:
		m.mu.RLock()
		defer m.mu.RUnlock()
	}
	return m.next.Do(r)
}

// serialMu is shared by every client of the package's tests: they all
// talk to the one moto_server.
var serialMu sync.RWMutex
