package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/internal/githubtest"
	"github.com/gavelhq/gavel/server"
	"github.com/gavelhq/gavel/store/sqlite"
)

// fuzzServer is one server over a fresh store for a whole fuzz run, with
// an admin token and the webhook secret; its handler is called directly.
func fuzzServer(f *testing.F) (http.Handler, string) {
	f.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "gavel.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	secret, _, err := deploy.CreateToken(ctx, db, deploy.ScopeAdmin, "fuzz")
	if err != nil {
		f.Fatal(err)
	}
	srv, err := server.New(server.Config{Store: db, Client: simService(db), Model: "sim", Simulated: true, Rate: -1,
		GitHubWebhookSecret: []byte(hookSecret), Resamples: 50})
	if err != nil {
		f.Fatal(err)
	}
	return srv.Handler(), secret
}

// serve answers one request; an answer of 500 is a decoder or handler
// the input broke (every input here is the client's, so every refusal
// must be a 4xx that says why).
func serve(t *testing.T, h http.Handler, req *http.Request) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %s answered %d: %s", req.Method, req.URL, rec.Code, rec.Body)
	}
	if rec.Code >= 400 && !strings.Contains(rec.Body.String(), `"error"`) {
		t.Fatalf("%s %s answered %d without an error: %s", req.Method, req.URL, rec.Code, rec.Body)
	}
}

// FuzzJSONEndpoints sends any body to every JSON endpoint: no input may
// panic a handler or make it answer 500.
//
//	go test ./server -run XXX -fuzz FuzzJSONEndpoints -fuzztime 1m
func FuzzJSONEndpoints(f *testing.F) {
	h, secret := fuzzServer(f)
	for _, seed := range []string{
		`{"judge":"passfail","change_id":"acme/web#36@0123abcd","group":"acme/web","inputs":{"task":"t","candidate":"c","context":{"test_output":"x"}}}`,
		`{"change_id":"acme/web#36@0123abcd","status":"landed","at":"2026-11-30T10:00:00Z"}`,
		`{"change_id":"c\u0000","status":"abandoned","reason":"r"}`,
		`{"version":"abcdef","reason":"r","force":true}`,
		`{"judge": 7}`, `[]`, `null`, `"x"`, `{"inputs":{"context":{"a":1}}}`, "{\"judge\":\"t\xff\"}",
	} {
		f.Add(uint8(0), seed)
		f.Add(uint8(1), seed)
		f.Add(uint8(2), seed)
	}
	paths := []string{"/v1/judge", "/v1/outcomes", "/v1/judges/passfail/promote", "/v1/judges/passfail/rollback"}
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		req := httptest.NewRequest("POST", paths[int(which)%len(paths)], strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		serve(t, h, req)
	})
}

// FuzzWebhookEvents sends any signed payload as each event kind gavel
// reads: no payload may panic the handler or make it answer 500.
//
//	go test ./server -run XXX -fuzz FuzzWebhookEvents -fuzztime 1m
func FuzzWebhookEvents(f *testing.F) {
	h, _ := fuzzServer(f)
	gh, _ := githubtest.New(f)
	pr := &githubtest.PR{Number: 2, State: "closed", Author: "a", Head: strings.Repeat("ab", 20), Merged: true,
		MergedAt: githubtest.T0, ClosedAt: githubtest.T0, UpdatedAt: githubtest.T0}
	seeds := map[string][]byte{
		"pull_request": gh.PullRequestEvent("closed", pr),
		"check_suite":  gh.CheckSuiteEvent("failure", pr.Head, 2),
		"check_run":    []byte(`{"action":"completed","check_run":{"conclusion":"failure","head_sha":"ab","pull_requests":[{"number":2}]},"repository":{"full_name":"a/b"}}`),
		"ping":         []byte(`{"zen":"Keep it logically awesome."}`),
	}
	events := []string{"pull_request", "check_suite", "check_run", "ping"}
	for i, e := range events {
		f.Add(uint8(i), string(seeds[e]))
		f.Add(uint8(i), `{"action":"completed","repository":{"full_name":"a/b"}}`)
		f.Add(uint8(i), `{}`)
	}
	n := 0
	f.Fuzz(func(t *testing.T, which uint8, payload string) {
		n++
		req := httptest.NewRequest("POST", "/v1/hooks/github", strings.NewReader(payload))
		req.Header.Set("X-GitHub-Event", events[int(which)%len(events)])
		req.Header.Set("X-GitHub-Delivery", "fuzz-"+itoa(n))
		req.Header.Set("X-Hub-Signature-256", githubtest.Sign(hookSecret, []byte(payload)))
		serve(t, h, req)
	})
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}
