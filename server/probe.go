package server

import (
	"context"
	"sync"
	"time"
)

// probe watches whether the store answers, for the health check, which
// must never wait behind the requests it is there to watch: the store is
// asked in the background at most once per interval, and the health check
// answers from the last probe. Only the very first check waits for one.
type probe struct {
	ask func(context.Context) error
	// every is how often the store is asked; stale how long a probe may
	// go unanswered before the store counts as not answering.
	every, stale time.Duration

	mu      sync.Mutex
	running bool
	asked   time.Time // when the last probe started
	okAt    time.Time // when a probe last succeeded
	err     error     // the last finished probe's error
}

func newProbe(ask func(context.Context) error) *probe {
	return &probe{ask: ask, every: time.Second, stale: 5 * time.Second}
}

// state is the store's health as last seen: nil when it answers, else why
// not. It starts a probe when the last one is older than the interval.
func (p *probe) state() error {
	p.mu.Lock()
	first := p.asked.IsZero()
	if first || (!p.running && time.Since(p.asked) >= p.every) {
		p.running, p.asked = true, time.Now()
		if first {
			p.mu.Unlock()
			p.run()
			p.mu.Lock()
		} else {
			go p.run()
		}
	}
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if p.running && time.Since(p.okAt) > p.stale {
		return &notAnswering{since: p.okAt}
	}
	return nil
}

func (p *probe) run() {
	// A probe that hangs is bounded, so the next one can start.
	ctx, cancel := context.WithTimeout(context.Background(), 2*p.stale)
	defer cancel()
	err := p.ask(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running, p.err = false, err
	if err == nil {
		p.okAt = time.Now()
	}
}

// notAnswering is a store whose probe has gone unanswered too long.
type notAnswering struct{ since time.Time }

func (e *notAnswering) Error() string {
	if e.since.IsZero() {
		return "it has not answered yet"
	}
	return "it has not answered since " + e.since.UTC().Format(time.RFC3339)
}
