package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/gavelhq/gavel/record"
)

// tokenPrefix starts every token, so that secret scanners can spot one.
const tokenPrefix = "gvl_"

// CreateToken makes a token with a scope and stores it hashed. The secret
// (the whole token) is returned once and never stored.
func CreateToken(ctx context.Context, st Store, scope, name string) (secret string, t *Token, err error) {
	if !slices.Contains(Scopes, scope) {
		return "", nil, fmt.Errorf("scope %q: want one of %s", scope, strings.Join(Scopes, ", "))
	}
	id := make([]byte, 6)
	key := make([]byte, 32)
	rand.Read(id)
	rand.Read(key)
	t = &Token{ID: hex.EncodeToString(id), Name: name, Scope: scope}
	secret = tokenPrefix + t.ID + "_" + base64.RawURLEncoding.EncodeToString(key)
	t.Hash = hashToken(secret)
	if err := st.SaveToken(ctx, t); err != nil {
		return "", nil, err
	}
	return secret, t, nil
}

func hashToken(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// authenticate returns the live token a secret is, comparing hashes in
// constant time.
func authenticate(ctx context.Context, st Store, secret string) (*Token, error) {
	rest, ok := strings.CutPrefix(secret, tokenPrefix)
	id, _, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 || len(id) != 12 {
		return nil, errorf(http.StatusUnauthorized, "not a gavel token (create one with 'gavel token create')")
	}
	t, err := st.Token(ctx, id)
	if errors.Is(err, record.ErrNotFound) {
		return nil, errorf(http.StatusUnauthorized, "unknown token")
	}
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(hashToken(secret)), []byte(t.Hash)) != 1 {
		return nil, errorf(http.StatusUnauthorized, "unknown token")
	}
	if !t.RevokedAt.IsZero() {
		return nil, errorf(http.StatusUnauthorized, "token %s was revoked", t.ID)
	}
	return t, nil
}

// allows reports whether a token's scope covers a need: its own scope, or
// admin for everything.
func (t *Token) allows(need string) bool {
	return need == "" || t.Scope == need || t.Scope == ScopeAdmin
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, secret, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
		return "", false
	}
	return strings.TrimSpace(secret), true
}

// limiters holds one rate limiter per token.
type limiters struct {
	mu    sync.Mutex
	rate  rate.Limit
	burst int
	m     map[string]*rate.Limiter
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
