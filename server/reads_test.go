package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/server"
	"github.com/gavelhq/gavel/store/sqlite"
)

// heldStore holds every reader of a judge's statistics at the stamp
// until released, counting how many are inside at once.
type heldStore struct {
	server.Store
	mu            sync.Mutex
	in, most      int
	entered       chan struct{}
	release       chan struct{}
	holdStatsRead bool
}

func (h *heldStore) JudgedStamp(ctx context.Context, f deploy.VerdictFilter) (string, error) {
	h.mu.Lock()
	hold := h.holdStatsRead
	if hold {
		h.in++
		h.most = max(h.most, h.in)
	}
	h.mu.Unlock()
	if hold {
		h.entered <- struct{}{}
		<-h.release
		h.mu.Lock()
		h.in--
		h.mu.Unlock()
	}
	return h.Store.JudgedStamp(ctx, f)
}

// However many clients read a judge's statistics, at most
// ReadConcurrency of the reads run at once (the rest wait, parked), and
// the health check answers while they do.
func TestExpensiveReadsBounded(t *testing.T) {
	var h *heldStore
	srv, secret := handlerWith(t, func(db *sqlite.DB) server.Store {
		h = &heldStore{Store: db, entered: make(chan struct{}, 16), release: make(chan struct{})}
		return h
	}, server.Config{Rate: -1, ReadConcurrency: 2})
	do := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	// Judging a change activates the built-in, whose statistics are read.
	if rec := do("POST", "/v1/judge", `{"judge":"passfail","change_id":"c1","inputs":{"task":"t","candidate":"c"}}`); rec.Code != 200 {
		t.Fatalf("judge: %d %s", rec.Code, rec.Body)
	}
	h.mu.Lock()
	h.holdStatsRead = true
	h.mu.Unlock()
	const readers = 6
	codes := make(chan int, readers)
	for range readers {
		go func() { codes <- do("GET", "/v1/judges/passfail", "").Code }()
	}
	// Two reads get in; give the others every chance to get in too.
	<-h.entered
	<-h.entered
	time.Sleep(100 * time.Millisecond)
	if rec := do("GET", "/v1/health", ""); rec.Code != 200 {
		t.Fatalf("health while the reads run: %d %s", rec.Code, rec.Body)
	}
	for range readers - 2 {
		h.release <- struct{}{}
		<-h.entered
	}
	h.release <- struct{}{}
	h.release <- struct{}{}
	for range readers {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a read: %d", code)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.most != 2 {
		t.Fatalf("%d reads ran at once, want at most (and here exactly) 2", h.most)
	}
}
