package record_test

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/record"
)

// population makes n units of random size 1..maxGroup (size-1 units have no
// group) with random labels, at distinct times.
func population(seed uint64, n, maxGroup int) []record.Member {
	rng := rand.New(rand.NewPCG(seed, 7))
	var ms []record.Member
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for u := range n {
		size := 1 + rng.IntN(maxGroup)
		group := ""
		if size > 1 {
			group = fmt.Sprintf("g%d", u)
		}
		for i := range size {
			l := record.Fail
			if rng.Float64() < 0.35 {
				l = record.Pass
			}
			ms = append(ms, record.Member{
				ID: fmt.Sprintf("u%d-%d", u, i), Group: group, Label: l,
				At: t0.Add(time.Duration(rng.IntN(1_000_000)) * time.Minute),
			})
		}
	}
	return ms
}

func spec(seed uint64) record.SplitSpec {
	return record.SplitSpec{Name: "s", Train: 0.4, Val: 0.3, Test: 0.3, Seed: seed}
}

func TestSplitDeterministic(t *testing.T) {
	ms := population(1, 300, 4)
	a, err := record.MakeSplit(ms, spec(9))
	if err != nil {
		t.Fatal(err)
	}
	// The same members in another order give the same split.
	shuffled := append([]record.Member(nil), ms...)
	rand.New(rand.NewPCG(3, 3)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b, err := record.MakeSplit(shuffled, spec(9))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(a.Assign, b.Assign) {
		t.Fatal("same members and seed, different split")
	}
	c, _ := record.MakeSplit(ms, spec(10))
	if maps.Equal(a.Assign, c.Assign) {
		t.Fatal("a different seed gave the same split")
	}
	if len(a.Assign) != len(ms) {
		t.Fatalf("assigned %d of %d", len(a.Assign), len(ms))
	}
}

// TestSplitProperties checks, over many random populations, that no group
// straddles two parts and that each part's count of each stratum is within
// one unit (one record, or one group) of its share.
func TestSplitProperties(t *testing.T) {
	for trial := range 60 {
		maxGroup := 1 + trial%5
		ms := population(uint64(trial), 5+trial*7, maxGroup)
		sp := spec(uint64(trial))
		if trial%3 == 1 {
			sp.Train, sp.Val, sp.Test = 0.6, 0.2, 0.2
		}
		if trial%7 == 2 {
			sp.Train, sp.Val, sp.Test = 0.5, 0, 0.5
		}
		s, err := record.MakeSplit(ms, sp)
		if err != nil {
			t.Fatal(err)
		}
		// No group straddles parts.
		groupPart := map[string]record.Part{}
		for _, m := range ms {
			if m.Group == "" {
				continue
			}
			if p, ok := groupPart[m.Group]; ok && p != s.Assign[m.ID] {
				t.Fatalf("trial %d: group %s in %s and %s", trial, m.Group, p, s.Assign[m.ID])
			}
			groupPart[m.Group] = s.Assign[m.ID]
		}
		// Strata: a unit's majority label, ties to fail.
		unitPass, unitSize := map[string]int{}, map[string]int{}
		key := func(m record.Member) string {
			if m.Group != "" {
				return "g" + m.Group
			}
			return "r" + m.ID
		}
		for _, m := range ms {
			unitSize[key(m)]++
			if m.Label == record.Pass {
				unitPass[key(m)]++
			}
		}
		total := map[record.Label]int{}
		got := map[record.Label]map[record.Part]int{record.Pass: {}, record.Fail: {}}
		for _, m := range ms {
			st := record.Fail
			if 2*unitPass[key(m)] > unitSize[key(m)] {
				st = record.Pass
			}
			total[st]++
			got[st][s.Assign[m.ID]]++
		}
		for _, st := range []record.Label{record.Pass, record.Fail} {
			for _, p := range record.Parts {
				share := sp.Fraction(p) * float64(total[st])
				if d := math.Abs(float64(got[st][p]) - share); d > float64(maxGroup)+1e-9 {
					t.Errorf("trial %d: stratum %s part %s has %d, share %.2f (max unit %d)",
						trial, st, p, got[st][p], share, maxGroup)
				}
				if sp.Fraction(p) == 0 && got[st][p] != 0 {
					t.Errorf("trial %d: part %s has fraction 0 but %d records", trial, p, got[st][p])
				}
			}
		}
	}
}

func TestSplitByTime(t *testing.T) {
	ms := population(5, 200, 1) // singletons
	sp := spec(0)
	sp.ByTime = true
	s, err := record.MakeSplit(ms, sp)
	if err != nil {
		t.Fatal(err)
	}
	latest := map[record.Part]time.Time{}
	earliest := map[record.Part]time.Time{}
	count := map[record.Part]int{}
	for _, m := range ms {
		p := s.Assign[m.ID]
		count[p]++
		if m.At.After(latest[p]) {
			latest[p] = m.At
		}
		if e, ok := earliest[p]; !ok || m.At.Before(e) {
			earliest[p] = m.At
		}
	}
	if !latest[record.Train].Before(earliest[record.Val]) || !latest[record.Val].Before(earliest[record.Test]) {
		t.Fatalf("parts overlap in time: train ends %v, val %v..%v, test starts %v",
			latest[record.Train], earliest[record.Val], latest[record.Val], earliest[record.Test])
	}
	for _, p := range record.Parts {
		if d := math.Abs(float64(count[p]) - sp.Fraction(p)*float64(len(ms))); d > 1 {
			t.Errorf("part %s has %d of %d", p, count[p], len(ms))
		}
	}

	// Groups stay whole when cut by time, too.
	grouped := population(6, 100, 4)
	s, err = record.MakeSplit(grouped, sp)
	if err != nil {
		t.Fatal(err)
	}
	gp := map[string]record.Part{}
	for _, m := range grouped {
		if p, ok := gp[m.Group]; ok && m.Group != "" && p != s.Assign[m.ID] {
			t.Fatalf("group %s straddles", m.Group)
		}
		gp[m.Group] = s.Assign[m.ID]
	}

	ms[17].At = time.Time{}
	if _, err := record.MakeSplit(ms, sp); err == nil || !strings.Contains(err.Error(), ms[17].ID) {
		t.Fatalf("record without time: error = %v", err)
	}
}

func TestSplitSpecValidate(t *testing.T) {
	bad := []record.SplitSpec{
		{Name: "", Train: 1},
		{Name: "a b", Train: 1},
		{Name: "x", Train: 0.5, Val: 0.3, Test: 0.3},
		{Name: "x", Train: -0.1, Val: 0.6, Test: 0.5},
		{Name: "x", Train: math.NaN(), Val: 0.5, Test: 0.5},
	}
	for _, s := range bad {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if err := (record.SplitSpec{Name: "v1.2_x-y", Train: 0.4, Val: 0.3, Test: 0.3}).Validate(); err != nil {
		t.Errorf("valid spec refused: %v", err)
	}
	if _, err := record.MakeSplit(nil, spec(1)); err == nil {
		t.Error("empty split accepted")
	}
}

// TestSplitHandWorked: ten singletons, five of each label, 0.4/0.3/0.3:
// each stratum of five gives exactly 2 to train and 1 or 2 to val and test.
func TestSplitHandWorked(t *testing.T) {
	var ms []record.Member
	for i := range 10 {
		l := record.Pass
		if i%2 == 1 {
			l = record.Fail
		}
		ms = append(ms, record.Member{ID: fmt.Sprint(i), Label: l})
	}
	s, err := record.MakeSplit(ms, spec(42))
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]record.Label{}
	for _, m := range ms {
		labels[m.ID] = m.Label
	}
	c := s.Counts(labels)
	for _, l := range []record.Label{record.Pass, record.Fail} {
		if c[record.Train][l] != 2 || c[record.Val][l]+c[record.Test][l] != 3 ||
			c[record.Val][l] < 1 || c[record.Test][l] < 1 {
			t.Errorf("label %s: train %d, val %d, test %d", l, c[record.Train][l], c[record.Val][l], c[record.Test][l])
		}
	}
}

func TestParseSplitRef(t *testing.T) {
	name, part, err := record.ParseSplitRef("main:test")
	if err != nil || name != "main" || part != record.Test {
		t.Fatalf("got %q %q %v", name, part, err)
	}
	if name, part, err = record.ParseSplitRef("main"); err != nil || name != "main" || part != "" {
		t.Fatalf("got %q %q %v", name, part, err)
	}
	if _, _, err = record.ParseSplitRef("main:dev"); err == nil {
		t.Fatal("unknown part accepted")
	}
}

// A sample keeps each label's share and every group whole, is the same
// for the same seed, and keeps the records' order.
func TestSample(t *testing.T) {
	var rs []*record.Record
	for i := range 200 {
		st := record.StatusPassed
		if i%4 == 0 {
			st = record.StatusFailed // a quarter fail
		}
		r := &record.Record{ID: fmt.Sprintf("r%03d", i), Task: "t", Candidate: "c", Group: fmt.Sprintf("g%02d", i/2), Outcome: record.Outcome{Status: st}}
		r.Normalize()
		rs = append(rs, r)
	}
	s := record.Sample(rs, 40, 1)
	if len(s) < 40 || len(s) > 44 {
		t.Fatalf("%d records for a sample of 40", len(s))
	}
	fails, groups := 0, map[string]int{}
	for i, r := range s {
		if r.Outcome.Label == record.Fail {
			fails++
		}
		groups[r.Group]++
		if i > 0 && s[i-1].ID > r.ID {
			t.Fatal("the sample is not in the records' order")
		}
	}
	for g, n := range groups {
		if n != 2 {
			t.Fatalf("group %s has %d of its 2 records", g, n)
		}
	}
	// Groups of two hold one fail and one pass in half the cases; by
	// majority (ties fail) half the groups are fail groups: 10 of 20.
	if fails < 8 || fails > 12 {
		t.Errorf("%d failures in the sample, want about a quarter of 40", fails)
	}
	if fmt.Sprint(record.Sample(rs, 40, 1)) != fmt.Sprint(s) || fmt.Sprint(record.Sample(rs, 40, 2)) == fmt.Sprint(s) {
		t.Error("the sample is not a function of the seed")
	}
	if len(record.Sample(rs, 0, 1)) != 200 || len(record.Sample(rs, 500, 1)) != 200 {
		t.Error("no limit, or a limit over the records, is not all of them")
	}
}
