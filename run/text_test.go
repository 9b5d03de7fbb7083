package run

import (
	"strings"
	"testing"

	"github.com/gavelhq/gavel/record"
)

func TestTextOfResults(t *testing.T) {
	var b strings.Builder
	j := &JudgeResult{Judge: "passfail", Prompt: "0123456789abcdef", Model: "sim", Simulated: true, Records: 5, Pass: 2, Fail: 2, Invalid: 1}
	if err := j.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := "[simulated] passfail (prompt 0123456789ab) with sim: 5 records: 2 pass, 2 fail, 1 invalid\n"; b.String() != want {
		t.Errorf("judge:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	st := &RecordStatsResult{Stats: record.Stats{Total: 3, ByLabel: map[record.Label]int{record.Pass: 1, record.Fail: 2},
		ByStatus: map[record.Status]int{}, BySource: map[record.Source]int{"tests": 3}, Groups: 2, Ungrouped: 1}}
	if err := st.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "records  3\nlabel    fail 2, pass 1\nstatus   -\nsource   tests 3\ngroups   2 (and 1 records without a group)\n"
	if b.String() != want {
		t.Errorf("records stats:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	sp := &SplitResult{Name: "main", Spec: record.SplitSpec{Train: 0.5, Val: 0.25, Test: 0.25, Seed: 2}, Total: 4,
		Parts: map[record.Part]PartSummary{record.Train: {Records: 2, Pass: 1, Fail: 1, Groups: 2}, record.Val: {Records: 1, Fail: 1, Groups: 1}, record.Test: {Records: 1, Pass: 1, Groups: 1}}}
	if err := sp.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want = "split main: 4 records; train 0.50, val 0.25, test 0.25; seed 2, stratified by label, groups kept whole\n" +
		"   part  records  pass  fail  groups\n  train        2     1     1       2\n    val        1     0     1       1\n   test        1     1     0       1\n"
	if b.String() != want {
		t.Errorf("split:\n%s\nwant\n%s", b.String(), want)
	}
	if got := Counts(map[string]int{}, "nothing"); got != "nothing" {
		t.Errorf("Counts of nothing = %q", got)
	}
	if got := FirstLine("\n  \n  first line here  \nsecond", 8); got != "first l…" {
		t.Errorf("FirstLine = %q", got)
	}
}
