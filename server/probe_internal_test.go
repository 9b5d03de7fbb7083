package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// The health check's probe: the first check waits for the store; later
// ones answer from the last probe at once, even while the store hangs,
// and say the store does not answer once a probe has gone unanswered too
// long, or failed.
func TestProbeNeverWaits(t *testing.T) {
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	var mu sync.Mutex
	var fail error
	hang := false
	set := func(h bool, f error) { mu.Lock(); hang, fail = h, f; mu.Unlock() }
	p := newProbe(func(ctx context.Context) error {
		select {
		case asked <- struct{}{}:
		default:
		}
		mu.Lock()
		h, f := hang, fail
		mu.Unlock()
		if h {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return f
	})
	p.every, p.stale = 0, 20*time.Millisecond
	if err := p.state(); err != nil {
		t.Fatalf("a store that answers: %v", err)
	}
	<-asked
	// The store hangs: the next check starts a probe and answers from the
	// last one without waiting for it.
	set(true, nil)
	answered := make(chan error, 1)
	go func() { answered <- p.state() }()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the check while a probe runs, before it is overdue: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the health check waited for a store that hangs")
	}
	<-asked
	// Past the stale time the check says so, still without waiting.
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for err = p.state(); err == nil && time.Now().Before(deadline); err = p.state() {
		time.Sleep(5 * time.Millisecond)
	}
	var na *notAnswering
	if !errors.As(err, &na) || !strings.Contains(err.Error(), "has not answered since") {
		t.Fatalf("a probe unanswered past its time: %v", err)
	}
	// The store answers again, then fails: the check follows.
	set(false, errors.New("connection refused"))
	close(release)
	for err = p.state(); (err == nil || errors.As(err, &na)) && time.Now().Before(deadline); err = p.state() {
		time.Sleep(5 * time.Millisecond)
	}
	if err == nil || err.Error() != "connection refused" {
		t.Fatalf("a store that fails: %v", err)
	}
}
