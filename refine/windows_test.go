package refine_test

import (
	"testing"
	"time"

	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
)

// TestWindows: weeks start on Monday and months on the 1st, in UTC, worked
// out on a calendar (2026-03-01 is a Sunday).
func TestWindows(t *testing.T) {
	day := func(s string) time.Time {
		d, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, c := range []struct{ at, by, want string }{
		{"2026-03-01T23:00:00Z", "week", "2026-02-23T00:00:00Z"},
		{"2026-03-02T00:00:00Z", "week", "2026-03-02T00:00:00Z"},
		{"2026-03-08T12:00:00Z", "week", "2026-03-02T00:00:00Z"},
		{"2026-03-01T23:00:00-05:00", "week", "2026-03-02T00:00:00Z"}, // Monday 04:00 UTC
		{"2026-03-31T23:59:59Z", "month", "2026-03-01T00:00:00Z"},
		{"2026-03-31T23:00:00-05:00", "month", "2026-04-01T00:00:00Z"},
	} {
		if got := refine.WindowStart(day(c.at), c.by); !got.Equal(day(c.want)) {
			t.Errorf("%s by %s: %s, want %s", c.at, c.by, got, c.want)
		}
	}
	rs := []*record.Record{
		{ID: "c", Outcome: record.Outcome{At: day("2026-03-09T00:00:00Z")}},
		{ID: "a", Outcome: record.Outcome{At: day("2026-03-03T00:00:00Z")}},
		{ID: "b", Outcome: record.Outcome{At: day("2026-03-08T00:00:00Z")}},
	}
	ws := refine.Windows(rs, refine.ByWeek)
	if len(ws) != 2 || len(ws[0].Records) != 2 || ws[0].Records[0].ID != "a" || ws[0].Records[1].ID != "b" || ws[1].Records[0].ID != "c" {
		t.Fatalf("weeks: %+v", ws)
	}
	if ws := refine.Windows(rs, refine.ByMonth); len(ws) != 1 || len(ws[0].Records) != 3 {
		t.Fatalf("months: %+v", ws)
	}
	if refine.CheckWindow("fortnight") == nil || refine.CheckWindow("week") != nil {
		t.Fatal("CheckWindow")
	}
}
