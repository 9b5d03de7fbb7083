package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/server"
	"github.com/gavelhq/gavel/store/sqlite"
)

// brokenStore fails where a database would, with text no client may see.
type brokenStore struct{ server.Store }

const dbSecret = `ERROR: invalid byte sequence for encoding "UTF8": 0x00 (SQLSTATE 22021)`

func (brokenStore) Activations(context.Context, string) ([]deploy.Activation, error) {
	return nil, errors.New(dbSecret)
}

// handlerOn is a server (not listening: its handler is called directly)
// over a fresh store as wrap sees it, with an admin token's secret.
func handlerOn(t *testing.T, wrap func(*sqlite.DB) server.Store, log *slog.Logger) (*server.Server, string) {
	return handlerWith(t, wrap, server.Config{Log: log})
}

// handlerWith is handlerOn with a configuration (its store, client and
// model filled in).
func handlerWith(t *testing.T, wrap func(*sqlite.DB) server.Store, cfg server.Config) (*server.Server, string) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "gavel.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	secret, _, err := deploy.CreateToken(ctx, db, deploy.ScopeAdmin, "test")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Client, cfg.Model = wrap(db), simService(db), "sim"
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv, secret
}

// TestInternalErrorHidden: an error that is not the application's reaches
// the client as "internal error" and an id; the log has the id and the
// cause. Application errors keep their words and get their status.
func TestInternalErrorHidden(t *testing.T) {
	var logs bytes.Buffer
	srv, secret := handlerOn(t, func(db *sqlite.DB) server.Store { return brokenStore{db} }, slog.New(slog.NewJSONHandler(&logs, nil)))
	do := func(method, path, body string) (int, map[string]any) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, rec.Body)
		}
		return rec.Code, out
	}

	code, out := do("POST", "/v1/judge", `{"judge":"passfail","change_id":"c1","inputs":{"task":"t","candidate":"c"}}`)
	msg, _ := out["error"].(string)
	if code != http.StatusInternalServerError || strings.Contains(msg, "SQLSTATE") || strings.Contains(msg, "UTF8") {
		t.Fatalf("internal error answered %d %q", code, msg)
	}
	id := regexp.MustCompile(`internal error \(id ([0-9a-f]{12})`).FindStringSubmatch(msg)
	if id == nil {
		t.Fatalf("no error id in %q", msg)
	}
	if !strings.Contains(logs.String(), `"error_id":"`+id[1]+`"`) || !strings.Contains(logs.String(), "SQLSTATE 22021") {
		t.Fatalf("the log does not carry id %s with the cause:\n%s", id[1], logs.String())
	}

	// An application error: its code's status, its words, its field.
	code, out = do("POST", "/v1/outcomes", `{"change_id":"never-judged","status":"landed"}`)
	if code != http.StatusNotFound || out["field"] != "change_id" || !strings.Contains(out["error"].(string), "never-judged") {
		t.Fatalf("unknown change answered %d %v", code, out)
	}
	// The window is checked before the store is read.
	code, out = do("GET", "/v1/drift?judge=passfail&by=fortnight", "")
	if code != http.StatusBadRequest || out["field"] != "by" || !strings.Contains(out["error"].(string), "fortnight") {
		t.Fatalf("bad window answered %d %v", code, out)
	}
}

// TestErrorCodes: each code's status.
func TestErrorCodes(t *testing.T) {
	for code, want := range map[deploy.Code]int{deploy.Invalid: 400, deploy.NotFound: 404, deploy.Conflict: 409,
		deploy.Forbidden: 403, deploy.Unauthenticated: 401, deploy.Unavailable: 503, deploy.Timeout: 504, deploy.Upstream: 502} {
		if got := server.Status(&deploy.Error{Code: code, Msg: "x"}); got != want {
			t.Errorf("code %s: status %d, want %d", code, got, want)
		}
	}
	if got := server.Status(errors.New("disk on fire")); got != 500 {
		t.Errorf("an internal error: status %d", got)
	}
	wrapped := &deploy.Error{Code: deploy.Conflict, Msg: "refused", Err: deploy.ErrGateRefused}
	if !errors.Is(wrapped, deploy.ErrGateRefused) || deploy.ErrorCode(errors.Join(errors.New("ctx"), wrapped)) != deploy.Conflict {
		t.Error("a coded error does not unwrap to its cause, or its code is lost when wrapped")
	}
}

// TestPromoteUnknownVersion: a version the store does not have is 404, a
// prefix too short to name one is 400, both in words.
func TestPromoteUnknownVersion(t *testing.T) {
	srv, secret := handlerOn(t, func(db *sqlite.DB) server.Store { return db }, slog.New(slog.DiscardHandler))
	for version, want := range map[string]int{"deadbeef": http.StatusNotFound, "de": http.StatusBadRequest} {
		req := httptest.NewRequest("POST", "/v1/judges/passfail/promote", strings.NewReader(`{"version":"`+version+`"}`))
		req.Header.Set("Authorization", "Bearer "+secret)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != want || !strings.Contains(rec.Body.String(), version) {
			t.Errorf("promote %q: %d %s, want %d naming it", version, rec.Code, rec.Body, want)
		}
	}
}

// fullStore is a store whose disk is full: every change it is asked to
// keep is refused as SQLite refuses it.
type fullStore struct{ server.Store }

func (fullStore) SaveChange(context.Context, *deploy.Change) error {
	return errors.New("sqlite: database or disk is full (13)")
}

// A full disk is said as it is: 503 "store unavailable" with Retry-After,
// not a model's failure nor an internal error; and the health check
// reports the service degraded.
func TestStoreFull(t *testing.T) {
	var logs bytes.Buffer
	srv, secret := handlerOn(t, func(db *sqlite.DB) server.Store { return fullStore{db} }, slog.New(slog.NewJSONHandler(&logs, nil)))
	do := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	if rec := do("GET", "/v1/health", ""); rec.Code != 200 {
		t.Fatalf("health before: %d %s", rec.Code, rec.Body)
	}
	rec := do("POST", "/v1/judge", `{"judge":"passfail","change_id":"c1","inputs":{"task":"t","candidate":"c"}}`)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "store unavailable") || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("judge on a full disk: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	rec = do("GET", "/v1/health", "")
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"degraded"`) {
		t.Fatalf("health after: %d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), "database or disk is full") {
		t.Fatalf("the log does not say why:\n%s", logs.String())
	}
}

// StoreFull knows each store's words for a full disk, and nothing else.
func TestStoreFullErrors(t *testing.T) {
	for _, msg := range []string{"sqlite: database or disk is full (13)", "ERROR: could not extend file \"base/16384/2619\": No space left on device (SQLSTATE 53100)",
		"write /var/lib/gavel.db-wal: no space left on device"} {
		if !deploy.StoreFull(errors.New(msg)) {
			t.Errorf("%q is a full disk", msg)
		}
	}
	for _, msg := range []string{"sqlite: database is locked", "connection refused", "model call failed: 500"} {
		if deploy.StoreFull(errors.New(msg)) {
			t.Errorf("%q is not a full disk", msg)
		}
	}
}
