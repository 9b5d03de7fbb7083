package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/runlog"
	"github.com/gavelhq/gavel/server"
	"github.com/gavelhq/gavel/store/sqlite"
)

// viewerWith is the viewer of a SQLite store holding one run of n records
// (a third of them false fails) and the run's id.
func viewerWith(tb testing.TB, n int) (*httptest.Server, string) {
	srv, id, _ := viewerStore(tb, n)
	return srv, id
}

func viewerStore(tb testing.TB, n int) (*httptest.Server, string, *sqlite.DB) {
	tb.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "gavel.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	recs := make([]runlog.Record, n)
	for i := range recs {
		verdict := judge.Pass
		if i%3 == 0 {
			verdict = judge.Fail
		}
		recs[i] = runlog.Record{ID: fmt.Sprintf("acme/web#%d", i), Role: "eval", Outcome: record.Pass, Verdict: verdict,
			Reasoning: strings.Repeat("The change handles the error and adds a test. ", 8)}
	}
	id := "20261201-120000-abcdef"
	if err := db.SaveRun(ctx, &runlog.Run{ID: id, Command: "eval", Judge: "passfail", Roles: []string{"eval"}, StartedAt: time.Now(), Text: "figures"}, recs); err != nil {
		tb.Fatal(err)
	}
	v, err := server.NewViewer(db, server.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(v.Handler())
	tb.Cleanup(srv.Close)
	return srv, id, db
}

func get(tb testing.TB, url string) string {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		tb.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// A run page shows one page of records: the first 100 of 10,000, then the
// next, with the selection's count.
func TestRunPageShowsAPage(t *testing.T) {
	srv, id := viewerWith(t, 1000)
	page := get(t, srv.URL+"/ui/runs/"+id+"?which=false_fail")
	if n := strings.Count(page, `class="record"`); n != 100 {
		t.Fatalf("%d records on the page, want 100", n)
	}
	if !strings.Contains(page, "records 1 to 100 of 334") || !strings.Contains(page, "offset=100") {
		t.Fatalf("the page's count or next link is missing")
	}
	last := get(t, srv.URL+"/ui/runs/"+id+"?which=false_fail&offset=300")
	if n := strings.Count(last, `class="record"`); n != 34 || !strings.Contains(last, "records 301 to 334 of 334") {
		t.Fatalf("the last page holds %d records", n)
	}
	// Ids with # and / reach the record page through their links.
	if !strings.Contains(page, `href="/ui/record?id=acme%2Fweb%230&amp;run=`+id+`"`) {
		t.Fatal("the record links do not escape the ids")
	}
}

// BenchmarkRunPage10k: the first page of a 10,000-record run in the
// viewer, over HTTP on the loopback.
// The baseline is what a page would cost reading every record of the
// selection, as an unpaged page would.
func BenchmarkRunPage10k(b *testing.B) {
	srv, id, db := viewerStore(b, 10_000)
	b.Run("first page over HTTP", func(b *testing.B) {
		for b.Loop() {
			get(b, srv.URL+"/ui/runs/"+id+"?which=false_fail")
		}
	})
	b.Run("every false fail read (no paging)", func(b *testing.B) {
		for b.Loop() {
			if recs, _, err := db.RunRecords(context.Background(), id, runlog.Filter{Which: runlog.FalseFail}); err != nil || len(recs) != 3334 {
				b.Fatal(len(recs), err)
			}
		}
	})
}

// In gavel serve the run pages are for admin tokens: a judge token is
// refused, an admin sees the runs.
func TestRunPagesInTheServiceAreForAdmins(t *testing.T) {
	e := start(t, server.Config{Simulated: true, Rate: -1}, simService)
	if err := e.db.SaveRun(context.Background(), &runlog.Run{ID: "20261201-120000-aaaaaa", Command: "eval", Judge: "passfail", StartedAt: time.Now()}, nil); err != nil {
		t.Fatal(err)
	}
	get := func(scope string) (int, string) {
		req, _ := http.NewRequest("GET", e.url+"/ui/runs", nil)
		req.AddCookie(&http.Cookie{Name: "gavel_token", Value: e.tok[scope]})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(deploy.ScopeJudge); code != http.StatusForbidden {
		t.Fatalf("a judge token on the runs: %d", code)
	}
	if code, page := get(deploy.ScopeAdmin); code != 200 || !strings.Contains(page, "20261201-120000-aaaaaa") {
		t.Fatalf("an admin on the runs: %d\n%s", code, page)
	}
}
