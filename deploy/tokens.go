package deploy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/record"
)

// tokenPrefix starts every token, so that secret scanners can spot one.
const tokenPrefix = "gvl_"

// CreateToken makes a token with a scope and stores it hashed. The secret
// (the whole token) is returned once and never stored.
func CreateToken(ctx context.Context, st Store, scope, name string) (secret string, t *Token, err error) {
	if !slices.Contains(Scopes, scope) {
		return "", nil, &Error{Code: Invalid, Field: "scope", Msg: "scope " + strconv.Quote(scope) + ": want one of " + strings.Join(Scopes, ", ")}
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

// Authenticate returns the live token a secret is, comparing hashes in
// constant time; else an Unauthenticated error.
func Authenticate(ctx context.Context, st Store, secret string) (*Token, error) {
	rest, ok := strings.CutPrefix(secret, tokenPrefix)
	id, _, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 || len(id) != 12 {
		return nil, Errorf(Unauthenticated, "not a gavel token (create one with 'gavel token create')")
	}
	t, err := st.Token(ctx, id)
	if errors.Is(err, record.ErrNotFound) {
		return nil, Errorf(Unauthenticated, "unknown token")
	}
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(hashToken(secret)), []byte(t.Hash)) != 1 {
		return nil, Errorf(Unauthenticated, "unknown token")
	}
	if !t.RevokedAt.IsZero() {
		return nil, Errorf(Unauthenticated, "token %s was revoked", t.ID)
	}
	return t, nil
}

// Allows reports whether a token's scope covers a need: its own scope, or
// admin for everything.
func (t *Token) Allows(need string) bool {
	return need == "" || t.Scope == need || t.Scope == ScopeAdmin
}
