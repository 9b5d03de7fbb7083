package main_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type estimate struct {
	Value     *float64 `json:"value"`
	Undefined string   `json:"undefined"`
	CI        *struct {
		Lo, Hi    float64
		Resamples int
		Dropped   int
	} `json:"ci"`
	Level string `json:"level"`
}

func TestAgreementCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gavel.db")
	// The Artstein & Poesio (2008) example as CSV.
	var b strings.Builder
	b.WriteString("item,a,b\n")
	add := func(n int, x, y string) {
		for range n {
			fmt.Fprintf(&b, "i%d,%s,%s\n", strings.Count(b.String(), "\n"), x, y)
		}
	}
	add(46, "stat", "stat")
	add(6, "ireq", "stat")
	add(32, "ireq", "ireq")
	add(6, "ireq", "chck")
	add(10, "chck", "chck")
	b.WriteString("i101,stat,\n") // missing: left out and counted
	csvFile := filepath.Join(dir, "ap.csv")
	os.WriteFile(csvFile, []byte(b.String()), 0o644)
	var out struct {
		Items             int      `json:"items"`
		Skipped           int      `json:"skipped_missing"`
		ScottPi           estimate `json:"scott_pi"`
		CohenKappa        estimate `json:"cohen_kappa"`
		ObservedAgreement estimate `json:"observed_agreement"`
		Alpha             estimate `json:"krippendorff_alpha"`
	}
	decodeJSON(t, mustGavel(t, db, "agreement", csvFile, "--a", "a", "--b", "b", "--json", "--resamples", "1000"), &out)
	for name, c := range map[string]struct {
		e    estimate
		want float64
	}{
		"scott_pi": {out.ScottPi, 0.7995322418977615}, "cohen_kappa": {out.CohenKappa, 0.8013245033112583},
		"observed_agreement": {out.ObservedAgreement, 0.88}, "krippendorff_alpha": {out.Alpha, 0.8005345806882727},
	} {
		if c.e.Value == nil || math.Abs(*c.e.Value-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, c.e.Value, c.want)
		}
		if c.e.CI == nil || c.e.CI.Resamples != 1000 || c.e.CI.Lo > c.want || c.e.CI.Hi < c.want {
			t.Errorf("%s interval %+v", name, c.e.CI)
		}
	}
	if out.Items != 100 || out.Skipped != 1 {
		t.Fatalf("items %d, skipped %d", out.Items, out.Skipped)
	}

	// Several coders with missing values, as JSONL, at the interval level
	// (Krippendorff 2011's example).
	data := [][]any{
		{1, 2, 3, 3, 2, 1, 4, 1, 2, nil, nil, nil},
		{1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nil, 3},
		{nil, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nil},
		{1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nil},
	}
	var j strings.Builder
	for u := range 12 {
		j.WriteString("{")
		for c := range 4 {
			if c > 0 {
				j.WriteString(",")
			}
			if data[c][u] == nil {
				fmt.Fprintf(&j, `"c%d":null`, c+1)
			} else {
				fmt.Fprintf(&j, `"c%d":%v`, c+1, data[c][u])
			}
		}
		j.WriteString("}\n")
	}
	jsonl := filepath.Join(dir, "k.jsonl")
	os.WriteFile(jsonl, []byte(j.String()), 0o644)
	var k struct {
		Alpha estimate `json:"krippendorff_alpha"`
	}
	decodeJSON(t, mustGavel(t, db, "agreement", jsonl, "--coders", "c1,c2,c3,c4", "--level", "interval", "--json", "--resamples", "0"), &k)
	if k.Alpha.Value == nil || math.Abs(*k.Alpha.Value-0.849107) > 1e-6 || k.Alpha.Level != "interval" || k.Alpha.CI != nil {
		t.Fatalf("alpha %+v", k.Alpha)
	}

	// Errors name the file, line and field.
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("x,y\n1,2\n3,oops\n"), 0o644)
	if r := gavel(t, db, "agreement", bad, "--coders", "x,y", "--level", "ratio"); r.code != 1 || !strings.Contains(r.stderr, bad+":3: field y") {
		t.Fatalf("bad number: %+v", r)
	}
	if r := gavel(t, db, "agreement", bad, "--a", "x", "--b", "z"); r.code != 1 || !strings.Contains(r.stderr, `no column "z"`) {
		t.Fatalf("missing column: %+v", r)
	}
	if r := gavel(t, db, "agreement", bad, "--a", "x"); r.code != 2 {
		t.Fatalf("--a without --b: %+v", r)
	}
}
