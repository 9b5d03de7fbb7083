package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// gavel serve on each store refuses text no store keeps as given (a NUL
// byte: PostgreSQL refused it with a 500 and its own error text, SQLite
// stored it) and outcome times before 2000, with 400 naming the field, and
// stores nothing.
func TestServeRefusesUnstorableText(t *testing.T) {
	stores := map[string]func(*testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "gavel.db") },
		"postgres": pgStore,
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			db := store(t)
			judgeTok := strings.TrimSpace(mustGavel(t, db, "token", "create", "--scope", "judge"))
			feedbackTok := strings.TrimSpace(mustGavel(t, db, "token", "create", "--scope", "feedback"))
			url := serveProcess(t, db, "--model", "sim", "--sim-on-real")
			post := func(path, tok, body string) (int, map[string]any) {
				req, _ := http.NewRequest("POST", url+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				var out map[string]any
				json.Unmarshal(b, &out)
				return resp.StatusCode, out
			}
			if code, out := post("/v1/judge", judgeTok, `{"judge":"passfail","change_id":"ok-1","inputs":{"task":"t","candidate":"c"}}`); code != 200 {
				t.Fatalf("a good change: %d %v", code, out)
			}
			stats := func() string { return mustGavel(t, db, "records", "stats", "--json") }
			before := stats()
			for _, c := range []struct{ path, tok, body, field string }{
				{"/v1/judge", judgeTok, `{"judge":"passfail","change_id":"c\u0000","inputs":{"task":"t","candidate":"c"}}`, "change_id"},
				{"/v1/judge", judgeTok, `{"judge":"passfail","change_id":"c2","group":"g\u0000","inputs":{"task":"t","candidate":"c"}}`, "group"},
				{"/v1/outcomes", feedbackTok, `{"change_id":"ok-1","status":"abandoned","reason":"r\u0000"}`, "reason"},
				{"/v1/outcomes", feedbackTok, `{"change_id":"ok-1","status":"landed","at":"0001-01-01T00:00:00Z"}`, "at"},
			} {
				code, out := post(c.path, c.tok, c.body)
				if code != 400 || out["field"] != c.field {
					t.Errorf("%s %s: %d %v, want 400 naming %s", c.path, c.body, code, out, c.field)
				}
				if msg, _ := out["error"].(string); strings.Contains(msg, "SQLSTATE") {
					t.Errorf("the database's words reached the client: %s", msg)
				}
			}
			if after := stats(); after != before {
				t.Fatalf("refused requests stored records:\n%s\n%s", before, after)
			}
		})
	}
}
