package teacher

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
)

func TestParseModels(t *testing.T) {
	for in, want := range map[string][]string{
		"openai:gpt-4o": {"openai:gpt-4o"},
		"openai:gpt-4o,anthropic:claude-sonnet-4":          {"openai:gpt-4o", "anthropic:claude-sonnet-4"},
		"sim:teacher-error=0.2,sycophant=0.8,sim:family=b": {"sim:teacher-error=0.2,sycophant=0.8", "sim:family=b"},
		" sim , openai:x ": {"sim", "openai:x"},
		"sim:random-rules,teacher-error=0.5,anthropic:claude-3": {"sim:random-rules,teacher-error=0.5", "anthropic:claude-3"},
	} {
		if got := ParseModels(in); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestQuorum(t *testing.T) {
	for in, want := range map[string][3]int{"all": {1, 3, 5}, "majority": {1, 2, 3}, "2": {1, 2, 2}} {
		q, err := ParseQuorum(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := [3]int{q.Need(1), q.Need(3), q.Need(5)}; got != want {
			t.Errorf("%s: needs %v, want %v", in, got, want)
		}
	}
	for _, bad := range []string{"0", "-1", "most", "1.5"} {
		if _, err := ParseQuorum(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFamily(t *testing.T) {
	for model, want := range map[string]string{
		"openai:gpt-4o": "openai", "openai:o3-mini": "openai", "anthropic:claude-sonnet-4-5": "anthropic",
		"openai:meta-llama/Llama-3.3-70B-Instruct": "meta", "openai:Qwen/Qwen2.5-Coder-32B": "qwen",
		"sim": "sim", "sim:teacher-error=0.2": "sim", "sim:family=other,sycophant=0.5": "other", "vllm:unknown-model": "vllm",
	} {
		if got := Family(model); got != want {
			t.Errorf("%s: %s, want %s", model, got, want)
		}
	}
}

func recs(labels ...record.Label) []*record.Record {
	var out []*record.Record
	for i, l := range labels {
		out = append(out, &record.Record{ID: string(rune('a' + i)), Outcome: record.Outcome{Label: l}})
	}
	return out
}

func member(model string, rs []*record.Record, actions string, labels ...record.Label) Member {
	m := Member{Model: model}
	for i, a := range actions {
		d := Decision{RecordID: rs[i].ID, Label: rs[i].Outcome.Label, Justification: model + " on " + rs[i].ID}
		switch a {
		case 'k':
			d.Action = Keep
		case 'a':
			d.Action = Abstain
		case 'c':
			d.Action, d.Label = Correct, labels[0]
			labels = labels[1:]
		case 'i':
			d.Action, d.Invalid = Abstain, true
		case '-':
			continue
		}
		m.Decisions = append(m.Decisions, d)
	}
	return m
}

// Hand-worked panels of three: what each quorum keeps, corrects and
// leaves out.
func TestCombine(t *testing.T) {
	rs := recs(record.Fail, record.Fail, record.Pass, record.Pass, record.Fail)
	ms := []Member{
		member("A", rs, "kkcck", record.Fail, record.Fail),
		member("B", rs, "kacak", record.Fail),
		member("C", rs, "kaaci", record.Fail),
	}
	actions := func(ds []Decision) string {
		var b strings.Builder
		for _, d := range ds {
			b.WriteString(string(d.Action[0]))
		}
		return b.String()
	}
	for q, want := range map[string]string{"all": "kaaaa", "majority": "kacck", "1": "kkcck"} {
		quorum, _ := ParseQuorum(q)
		ds := Combine(rs, ms, quorum)
		if got := actions(ds); got != want {
			t.Errorf("quorum %s: %s, want %s", q, got, want)
		}
	}
	maj, _ := ParseQuorum("majority")
	ds := Combine(rs, ms, maj)
	if ds[0].Justification != "A on a\nB on a\nC on a" || ds[2].Label != record.Fail || ds[2].Justification != "A on c\nB on c" {
		t.Fatalf("justifications %q / %q", ds[0].Justification, ds[2].Justification)
	}
	if !strings.Contains(ds[1].Justification, "did not reach its quorum") {
		t.Fatalf("abstention %q", ds[1].Justification)
	}
	// The same justification from two teachers is given on once.
	same := []Member{member("A", rs[:1], "k"), member("B", rs[:1], "k")}
	same[1].Decisions[0].Justification = same[0].Decisions[0].Justification
	if d := Combine(rs[:1], same, Quorum{Rule: "all"}); d[0].Justification != "A on a" {
		t.Fatalf("dedup %q", d[0].Justification)
	}
}

// Pairwise Scott's pi, worked by hand: A keeps, keeps, abstains,
// abstains; B keeps, abstains, abstains, abstains. Observed 3/4; pooled
// keep 3/8, abstain 5/8, expected 34/64; pi = (48-34)/(64-34) = 7/15.
func TestSummarisePanel(t *testing.T) {
	rs := recs(record.Fail, record.Fail, record.Pass, record.Pass)
	ms := []Member{member("openai:gpt-4o", rs, "kkaa"), member("anthropic:claude-x", rs, "kaaa")}
	ps := SummarisePanel(rs, ms, Quorum{Rule: "all"}, "openai:gpt-4o", metrics.BootstrapOptions{Resamples: 200, Seed: 1})
	if len(ps.Pairwise) != 1 || math.Abs(ps.Pairwise[0].ScottPi.Value.V-7.0/15) > 1e-12 || math.Abs(ps.Pairwise[0].Observed.V-0.75) > 1e-12 {
		t.Fatalf("pairwise %+v", ps.Pairwise)
	}
	if ps.Teachers[0].Kept != 2 || ps.Teachers[1].Abstained != 3 || ps.SameFamily {
		t.Fatalf("teachers %+v, same family %v", ps.Teachers, ps.SameFamily)
	}
	// Fleiss' kappa over the same two raters: counts per record.
	want := metrics.FleissKappa([][]int{{2, 0, 0}, {1, 1, 0}, {0, 2, 0}, {0, 2, 0}})
	if ps.FleissKappa.Value != want || ps.FleissKappa.CI == nil {
		t.Fatalf("fleiss %+v, want %+v", ps.FleissKappa, want)
	}
	same := SummarisePanel(rs, []Member{member("openai:gpt-4o", rs, "kkaa"), member("openai:gpt-4o-mini", rs, "kaaa")}, Quorum{Rule: "all"},
		"openai:gpt-4.1", metrics.BootstrapOptions{Resamples: 50})
	if !same.SameFamily || same.Warning != SameFamilyWarning {
		t.Fatalf("same family: %+v", same)
	}
}
