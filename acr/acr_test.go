package acr_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/acr"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
)

func pointwise5(t *testing.T) *judge.Spec {
	t.Helper()
	s, err := judge.Load("pointwise5")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJudgedNormalisesAndWeights(t *testing.T) {
	s := pointwise5(t) // scale 1..10, criteria correctness, efficiency, readability, robustness, adherence
	scores := map[string]int{"correctness": 10, "efficiency": 1, "readability": 4, "robustness": 7, "adherence": 10}
	// Equal weights: (1 + 0 + 3/9 + 6/9 + 1) / 5 = 3/5.
	w, err := acr.ParseWeights("", s)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := acr.Judged(s, w, scores)
	if !ok || math.Abs(got-0.6) > 1e-12 {
		t.Fatalf("equal weights: got %v %v, want 0.6", got, ok)
	}
	// correctness=3, efficiency=0: (3*1 + 0 + 3/9 + 6/9 + 1) / (3+0+1+1+1) = 5/6.
	w, err = acr.ParseWeights("correctness=3, efficiency=0", s)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := acr.Judged(s, w, scores); !ok || math.Abs(got-5.0/6) > 1e-12 {
		t.Fatalf("weighted: got %v, want 5/6", got)
	}
	if w.String() != "adherence=1,correctness=3,efficiency=0,readability=1,robustness=1" {
		t.Fatalf("weights written back as %q", w.String())
	}
	delete(scores, "robustness")
	if _, ok := acr.Judged(s, w, scores); ok {
		t.Fatal("a missing criterion must make the judged part unknown")
	}
}

func TestParseWeightsErrors(t *testing.T) {
	s := pointwise5(t)
	for in, want := range map[string]string{
		"speed=2":        `"speed" is not a criterion`,
		"correctness":    "is not NAME=WEIGHT",
		"correctness=-1": "of at least 0",
		"correctness=x":  "of at least 0",
		"correctness=0,efficiency=0,readability=0,robustness=0,adherence=0": "every weight is 0",
	} {
		if _, err := acr.ParseWeights(in, s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error with %q", in, err, want)
		}
	}
}

func TestCompositeFormula(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		e        float64
		works    *bool
		judged   float64
		judgedOK bool
		want     float64
	}{
		{0.5, &yes, 0.6, true, 0.8},  // 0.5*1 + 0.5*0.6
		{0.5, &no, 0.6, true, 0.3},   // 0.5*0 + 0.5*0.6
		{0.5, &no, 1, true, 0.5},     // the best broken answer ...
		{0.5, &yes, 0, true, 0.5},    // ... ties the worst working one, never beats it
		{0.25, &yes, 0.2, true, 0.4}, // 0.25 + 0.75*0.2
		{0.5, &yes, 0.9, false, 0.5}, // an invalid judge answer counts 0
		{0.5, nil, 0.7, true, 0.7},   // nothing ran: the judged part alone
		{1, &no, 1, true, 0},         // executor only
	}
	for i, c := range cases {
		if got := acr.Composite(c.e, c.works, c.judged, c.judgedOK); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("case %d: composite %v, want %v", i, got, c.want)
		}
	}
	// With e = 0.5 a working answer never ranks below a broken one.
	for j := 0; j <= 10; j++ {
		for k := 0; k <= 10; k++ {
			if acr.Composite(0.5, &yes, float64(j)/10, true) < acr.Composite(0.5, &no, float64(k)/10, true) {
				t.Fatalf("working answer judged %d/10 ranks below a broken one judged %d/10", j, k)
			}
		}
	}
}

func TestBestPrefersEarlierOnTies(t *testing.T) {
	if got := acr.Best([]float64{0.2, 0.9, 0.5, 0.9}); got != 1 {
		t.Fatalf("best %d, want 1 (the earlier of the two 0.9s)", got)
	}
	if got := acr.Best(nil); got != -1 {
		t.Fatalf("best of nothing %d, want -1", got)
	}
}

func TestCombineOrders(t *testing.T) {
	cases := []struct {
		sampleFirst, referenceFirst string
		want                        acr.Side
		how                         string
	}{
		{"A", "B", acr.Sample, "both_orders"},     // sample shown first wins, and shown second wins
		{"B", "A", acr.Reference, "both_orders"},  // the reference wins in both positions
		{"A", "A", acr.Tie, "order_disagreement"}, // always "A": position bias
		{"B", "B", acr.Tie, "order_disagreement"}, // always "B": position bias
		{"tie", "tie", acr.Tie, "both_orders"},    // a real tie
		{"A", "tie", acr.Sample, "one_order_and_tie"},
		{"tie", "A", acr.Reference, "one_order_and_tie"},
		{"", "B", acr.Sample, "one_order_valid"},    // the sample-first answer was invalid
		{"B", "", acr.Reference, "one_order_valid"}, // the reference-first answer was invalid
		{"", "", acr.Tie, "no_valid_answer"},
	}
	for _, c := range cases {
		j := acr.Combine(c.sampleFirst, c.referenceFirst)
		if j.Winner != c.want || j.How != c.how {
			t.Errorf("(%q, %q): %s by %s, want %s by %s", c.sampleFirst, c.referenceFirst, j.Winner, j.How, c.want, c.how)
		}
	}
}

func TestDecideExecutorFirstThenJudgeThenTies(t *testing.T) {
	yes, no := true, false
	judgeSample := acr.Combine("A", "B")
	disagree := acr.Combine("A", "A")
	cases := []struct {
		name       string
		sw, rw     *bool
		j          acr.Judgement
		ties       acr.Side
		want       acr.Side
		by         string
		testWinner acr.Side
	}{
		{"sample fails, reference passes: executor overrules the judge", &no, &yes, judgeSample, acr.Sample, acr.Reference, "executor", acr.Reference},
		{"sample passes, reference fails", &yes, &no, acr.Combine("B", "A"), acr.Reference, acr.Sample, "executor", acr.Sample},
		{"both pass: the judge decides", &yes, &yes, judgeSample, acr.Reference, acr.Sample, "judge", ""},
		{"both fail: the judge decides", &no, &no, acr.Combine("B", "A"), acr.Sample, acr.Reference, "judge", ""},
		{"no executor: the judge decides", nil, nil, judgeSample, acr.Reference, acr.Sample, "judge", ""},
		{"order disagreement, ties to reference", &yes, &yes, disagree, acr.Reference, acr.Reference, "tie", ""},
		{"order disagreement, ties to sample", &yes, &yes, disagree, acr.Sample, acr.Sample, "tie", ""},
	}
	for _, c := range cases {
		d := acr.Decide(c.sw, c.rw, c.j, c.ties)
		if d.Winner != c.want || d.DecidedBy != c.by || d.TestWinner != c.testWinner {
			t.Errorf("%s: got %+v, want %s by %s (test winner %q)", c.name, d, c.want, c.by, c.testWinner)
		}
	}
}

func TestExtractCode(t *testing.T) {
	cases := []struct{ name, answer, lang, want string }{
		{"tagged block", "Here:\n\n```python\ndef f():\n    return 1\n```\nDone.", "python", "def f():\n    return 1"},
		{"alias tag", "```py\nx = 1\n```", "python", "x = 1"},
		{"language block over a longer other block", "```bash\npip install a b c d e f g h\n```\n```go\nfunc F() {}\n```", "go", "func F() {}"},
		{"longest of two tagged blocks", "```python\nx = 1\n```\n```python\ndef f(a):\n    return a\n```", "python", "def f(a):\n    return a"},
		{"untagged block", "```\nfunc F() {}\n```", "go", "func F() {}"},
		{"cut off by the answer's end", "```go\nfunc F() {\n", "go", "func F() {"},
		{"no fence: the whole answer", "def f():\n    pass\n", "python", "def f():\n    pass"},
		{"nested fence of a longer marker", "````python\ns = '''\n```\n'''\n````", "python", "s = '''\n```\n'''"},
		{"empty", "", "python", ""},
	}
	for _, c := range cases {
		if got := acr.ExtractCode(c.answer, c.lang); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestReadInstructionsErrorsNameLineAndField(t *testing.T) {
	cases := map[string]string{
		`{"id":"a","instruction":"x","reference":"y"}` + "\n" + `{"id":"b","instruction":"","reference":"y"}`:    "in.jsonl:2: instruction: missing",
		`{"id":"a","instruction":"x","reference":"y","language":"rust"}`:                                         `in.jsonl:1: language: "rust" is not go or python`,
		`{"id":"a","instruction":"x","reference":"y","tests":"assert f()"}`:                                      "in.jsonl:1: language: needed to run the tests",
		`{"id":"a","instruction":"x","reference":"y"}` + "\n\n" + `{"id":"a","instruction":"x","reference":"y"}`: `in.jsonl:3: id: "a" already on line 1`,
		`{"id":"a","instruction":"x","reference":"y","refrence":"z"}`:                                            `in.jsonl:1: json: unknown field "refrence"`,
		`{"id":"a","instruction":"x"}`: "in.jsonl:1: reference: missing",
		`{"id":"a",`:                   "in.jsonl:1:",
		"":                             "in.jsonl: no instructions",
	}
	for in, want := range cases {
		_, err := acr.ReadInstructions(strings.NewReader(in), "in.jsonl")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
	ins, err := acr.ReadInstructions(strings.NewReader("\ufeff"+`{"id":"a","instruction":"x","reference":"y","language":"python","tests":"assert True"}`+"\n"), "in.jsonl")
	if err != nil || len(ins) != 1 || ins[0].Tests != "assert True" {
		t.Fatalf("a valid file with a BOM: %v %+v", err, ins)
	}
	var b bytes.Buffer
	if err := acr.WriteInstructions(&b, ins); err != nil {
		t.Fatal(err)
	}
	back, err := acr.ReadInstructions(&b, "back.jsonl")
	if err != nil || *back[0] != *ins[0] {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}

func TestCheckFlagsAndFigures(t *testing.T) {
	// 10 pairs over 5 instructions; tests say the reference wins in all.
	// The judge agrees on 6; of the 4 disagreements it prefers the sample
	// in 3 and ties once: agreement 0.6, self-preference 0.75.
	winners := []acr.Side{acr.Reference, acr.Reference, acr.Reference, acr.Reference, acr.Reference, acr.Reference,
		acr.Sample, acr.Sample, acr.Sample, acr.Tie}
	var cs []*acr.Comparison
	for i, w := range winners {
		cs = append(cs, &acr.Comparison{ID: string(rune('a' + i/2)), Sample: i%2 + 1, TestWinner: acr.Reference,
			Judge: acr.Judgement{Winner: w}, Agree: w == acr.Reference})
	}
	res := acr.Summarise(cs, 5, acr.CheckOptions{MinAgreement: 0.85, MaxSelfPreference: 0.55, Bootstrap: metrics.BootstrapOptions{Resamples: 500, Seed: 3}})
	if res.Pairs != 10 || res.Agree != 6 || res.Disagree != 4 || res.SelfPreferred != 3 || res.JudgeTies != 1 {
		t.Fatalf("counts: %+v", res)
	}
	if math.Abs(res.Agreement.Value.V-0.6) > 1e-12 || math.Abs(res.SelfPreference.Value.V-0.75) > 1e-12 {
		t.Fatalf("agreement %v, self-preference %v; want 0.6 and 0.75", res.Agreement.Value, res.SelfPreference.Value)
	}
	if ci := res.Agreement.CI; ci == nil || ci.Lo > 0.6 || ci.Hi < 0.6 || ci.Groups != 5 {
		t.Fatalf("agreement interval %+v: want one around 0.6 resampling 5 instructions", ci)
	}
	if len(res.Flags) != 2 {
		t.Fatalf("flags %q: want agreement and self-preference", res.Flags)
	}
	// Looser thresholds: no flag.
	res = acr.Summarise(cs, 5, acr.CheckOptions{MinAgreement: 0.5, MaxSelfPreference: 0.8, Bootstrap: metrics.BootstrapOptions{Resamples: 100}})
	if len(res.Flags) != 0 {
		t.Fatalf("flags %q with thresholds 0.5 and 0.8", res.Flags)
	}
	// Nothing to compare: flagged as unmeasurable, figures undefined.
	res = acr.Summarise(nil, 5, acr.CheckOptions{})
	if res.Agreement.Value.Defined() || len(res.Flags) != 1 {
		t.Fatalf("no pairs: %+v", res)
	}
	b, err := json.Marshal(res)
	if err != nil || !strings.Contains(string(b), `"agreement":{"value":null`) {
		t.Fatalf("undefined figures must be null in JSON: %s %v", b, err)
	}
}
