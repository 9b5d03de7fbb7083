package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/internal/golden"
)

// TestJSONGolden pins each command's --json output on the simulated world
// (one model call at a time, so the calls' counts are the same on every
// run): a field renamed or dropped shows here. The files are under
// testdata/json; -update rewrites them.
func TestJSONGolden(t *testing.T) {
	dir := t.TempDir()
	db := simStore(t, dir, 120)
	bench := filepath.Join(dir, "bench.jsonl")
	var lines []string
	for i, code := range []string{"func Add(a, b int) int { return a + b }", "func Add(a, b int) int { return a - b }", "func Add(a, b int) int {\n\tx := a\n\treturn x + b\n}"} {
		b, _ := json.Marshal(map[string]any{"id": "p" + itoa(i), "problem": "Add", "lang": "go", "score": []int{5, 1, 4}[i],
			"prompt": "// Add returns a plus b.\nfunc Add(a, b int) int {", "code": code, "reference": "func Add(a, b int) int { return a + b }"})
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(bench, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ratings := filepath.Join(dir, "ratings.csv")
	if err := os.WriteFile(ratings, []byte("item,a,b,c,team\n1,pass,pass,pass,x\n2,fail,pass,fail,x\n3,fail,fail,fail,y\n4,pass,pass,,y\n5,pass,fail,pass,z\n6,fail,fail,pass,z\n7,pass,pass,pass,z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	one := []string{"--model", "sim", "--concurrency", "1", "--json"}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"judge", []string{"judge", "--judge", "passfail", "--split", "main:test"}},
		{"eval", []string{"eval", "--judge", "passfail", "--split", "main:test", "--resamples", "200"}},
		{"eval-tuned", []string{"eval", "--judge", "rubric5", "--split", "main:test", "--tune-threshold-on", "main:train", "--resamples", "200"}},
		{"eval-compare", []string{"eval", "--judge", "passfail", "--split", "main:test", "--compare", "rubric5", "--resamples", "200"}},
		{"teach", []string{"teach", "--judge", "passfail", "--split", "main:train"}},
		{"calibrate", []string{"calibrate", "--judge", "passfail", "--split", "main", "--max-iter", "1", "--resamples", "200"}},
		{"bench-run", []string{"bench", "run", "--bench", bench, "--judge", "passfail", "--sim-on-real", "--resamples", "200"}},
		{"bench-run-metrics", []string{"bench", "run", "--bench", bench, "--resamples", "200"}},
		{"agreement-pair", []string{"agreement", ratings, "--a", "a", "--b", "b", "--group", "team", "--resamples", "200", "--json"}},
		{"agreement-coders", []string{"agreement", ratings, "--coders", "a,b,c", "--resamples", "200", "--json"}},
		{"noise", []string{"noise", "--judge", "passfail", "--split", "main:train", "--flip", "0.25"}},
		{"dry-run-calibrate", []string{"calibrate", "--judge", "rubric5", "--split", "main", "--max-iter", "1", "--dry-run"}},
		{"split-show", []string{"split", "show", "main", "--json"}},
		{"records-stats", []string{"records", "stats", "--exclude-status", "draft", "--json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if !slices.Contains(args, "--json") {
				args = append(args, one...)
			}
			out := strings.ReplaceAll(mustGavel(t, db, args...), dir, "$TMP")
			var v any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			enc.Encode(v)
			golden.Check(t, filepath.Join("json", c.name+".json"), buf.String())
		})
	}
}
