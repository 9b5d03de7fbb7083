package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/internal/gerrittest"
)

// gavel import gerrit against a fake Gerrit: merged and abandoned changes
// become records; without the credentials Gerrit's refusal is the error.
func TestImportGerritCommand(t *testing.T) {
	f, srv := gerrittest.New(t)
	f.Add(1756, "MERGED", strings.Repeat("a", 40), "2026-11-20 10:00:00.000000000", "2026-11-20 09:59:00.000000000")
	f.Add(1757, "ABANDONED", strings.Repeat("b", 40), "2026-11-20 11:00:00.000000000", "", "Abandoned\n\nDuplicate of 1756")
	db := filepath.Join(t.TempDir(), "gavel.db")
	if r := gavel(t, db, "import", "gerrit", "--url", srv.URL); r.code != 1 || !strings.Contains(r.stderr, "401") {
		t.Fatalf("without credentials: %+v", r)
	}
	t.Setenv("GERRIT_USER", gerrittest.User)
	t.Setenv("GERRIT_PASSWORD", gerrittest.Password)
	var res struct{ Inserted, Matched int }
	decodeJSON(t, mustGavel(t, db, "import", "gerrit", "--url", srv.URL, "--json"), &res)
	if res.Inserted != 2 || res.Matched != 2 {
		t.Fatalf("import: %+v", res)
	}
	got := mustGavel(t, db, "records", "export", "-o", "-")
	for _, want := range []string{`"id":"demo~1756"`, `"status":"landed"`, `"id":"demo~1757"`, `"reason":"Duplicate of 1756"`} {
		if !strings.Contains(got, want) {
			t.Fatalf("export lacks %s:\n%s", want, got)
		}
	}
	if r := gavel(t, db, "import", "gerrit"); r.code != 2 || !strings.Contains(r.stderr, "--url") {
		t.Fatalf("no --url: %+v", r)
	}
}
