package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchRunOfflinePending: an offline bench run leaves one pending
// request per program for every kind of judge that scores one program at
// a time (the pointwise judge stopped at its first before), so one batch
// round answers them all.
func TestBenchRunOfflinePending(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bench.jsonl")
	var lines []string
	for i := range 3 {
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("p%d", i), "problem": fmt.Sprintf("HumanEval/%d", i), "lang": "go", "score": 5 - 2*i,
			"prompt": "// Add returns a plus b.\nfunc Add(a, b int) int {", "code": fmt.Sprintf("func Add(a, b int) int { return a + b + %d }", i),
			"reference": "func Add(a, b int) int { return a + b }"})
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"pointwise5", "passfail", "rubric5"} {
		t.Run(j, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "gavel.db")
			r := gavel(t, db, "bench", "run", "--bench", file, "--judge", j, "--model", "openai:judge-model", "--offline", "--metrics", "token_similarity")
			if r.code != 3 || !strings.Contains(r.stderr, "3 model call(s) pending") {
				t.Fatalf("offline bench run: exit %d\n%s", r.code, r.stderr)
			}
			var st struct {
				Pending int `json:"pending"`
			}
			decodeJSON(t, mustGavel(t, db, "cache", "stats", "--json"), &st)
			if st.Pending != 3 {
				t.Fatalf("%d requests pending, want one per program (3)", st.Pending)
			}
		})
	}
}
