package server

import (
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, secret, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
		return "", false
	}
	return strings.TrimSpace(secret), true
}

// limiters holds one rate limiter per token, and counts each token's
// requests in flight.
type limiters struct {
	mu    sync.Mutex
	rate  rate.Limit
	burst int
	m     map[string]*rate.Limiter
	// inFlight counts each token's requests being served; at most
	// maxInFlight (0: no bound).
	inFlight    map[string]int
	maxInFlight int
}

// enter counts a request of a token in, unless the token already has
// maxInFlight; leave counts it out.
func (l *limiters) enter(id string) bool {
	if l.maxInFlight <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight == nil {
		l.inFlight = map[string]int{}
	}
	if l.inFlight[id] >= l.maxInFlight {
		return false
	}
	l.inFlight[id]++
	return true
}

func (l *limiters) leave(id string) {
	if l.maxInFlight <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight[id]--; l.inFlight[id] <= 0 {
		delete(l.inFlight, id)
	}
}

// wait is 0 when the token may go on, else how long until it may.
func (l *limiters) wait(id string) time.Duration {
	if l.rate <= 0 {
		return 0
	}
	l.mu.Lock()
	lim, ok := l.m[id]
	if !ok {
		lim = rate.NewLimiter(l.rate, l.burst)
		l.m[id] = lim
	}
	l.mu.Unlock()
	r := lim.Reserve()
	d := r.Delay()
	if d == 0 {
		return 0
	}
	r.Cancel()
	return d
}

func retryAfter(d time.Duration) int { return int(math.Ceil(d.Seconds())) }
