package run_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/store/sqlite"
)

// --limit on a store that lists members (issue 29) reads only the sampled
// records, and samples exactly what sampling all the records read would:
// the same ids in the same order, labels as their latest outcome says.
func TestLimitReadsOnlyTheSample(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := sim.Records(sim.WorldOptions{N: 400, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Import(ctx, func(w record.Writer) error {
		for i := range rs {
			if _, err := w.Put(ctx, &rs[i]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	members := make([]record.Member, len(rs))
	for i := range rs {
		members[i] = record.MemberOf(&rs[i])
	}
	sp, err := record.MakeSplit(members, record.SplitSpec{Name: "s", Train: 0.5, Val: 0.25, Test: 0.25, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveSplit(ctx, sp, false); err != nil {
		t.Fatal(err)
	}
	// A later outcome turns a passing train record's label to fail.
	var flipped string
	for i := range rs {
		if sp.Assign[rs[i].ID] == record.Train && rs[i].Outcome.Label == record.Pass {
			flipped = rs[i].ID
			break
		}
	}
	if _, _, err := db.AddOutcome(ctx, flipped, record.Outcome{Status: record.StatusFailed, Source: record.SourceTests}, "test"); err != nil {
		t.Fatal(err)
	}
	all, err := run.Records(ctx, db, "split", "s:train", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 17, 60, len(all) - 1, len(all), len(all) + 5} {
		got, err := run.Records(ctx, db, "split", "s:train", nil, limit)
		if err != nil {
			t.Fatal(err)
		}
		want := record.Sample(all, limit, 1)
		ids := func(rs []*record.Record) (out []string) {
			for _, r := range rs {
				out = append(out, r.ID)
			}
			return out
		}
		if !slices.Equal(ids(got), ids(want)) {
			t.Fatalf("limit %d: the members' sample %v, the records' sample %v", limit, ids(got), ids(want))
		}
		for _, r := range got {
			if r.ID == flipped && r.Outcome.Label != record.Fail {
				t.Fatalf("limit %d: %s read with label %s, not its latest outcome's", limit, r.ID, r.Outcome.Label)
			}
		}
	}
}
