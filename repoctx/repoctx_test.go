package repoctx

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/internal/gittest"
	"github.com/gavelhq/gavel/record"
)

const diff = `diff --git a/calc/sum.go b/calc/sum.go
index 1111111..2222222 100644
--- a/calc/sum.go
+++ b/calc/sum.go
@@ -3,2 +3,2 @@ package calc
 func Sum(xs []int) int {
-	t := 0
+	t := 1
@@ -40 +40,2 @@ func Max(xs []int) int {
 	return m
+	// done
diff --git a/calc/new.go b/calc/new.go
new file mode 100644
--- /dev/null
+++ b/calc/new.go
@@ -0,0 +1 @@
+package calc
--- old.txt	2026-01-01 10:00:00
+++ new.txt	2026-01-02 10:00:00
@@ -0,0 +1 @@
+x
`

// The files a diff changes, with their hunks' old lines: a created file
// is none, diff -u's timestamps are no part of a path, an insertion at
// the top is line 1.
func TestFiles(t *testing.T) {
	got := Files(diff)
	want := []Touched{{"calc/sum.go", []Range{{3, 4}, {40, 40}}}, {"old.txt", []Range{{1, 1}}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Files = %v, want %v", got, want)
	}
}

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %03d\n", i)
	}
	return b.String()
}

// A file that fits is shown whole; one that does not shows the same
// radius of lines around every hunk, cut at line ends, with the lines
// left out named; the text stays within the budget.
func TestRenderCutsAroundTheHunks(t *testing.T) {
	f := File{Touched: Touched{Path: "a.txt", Hunks: []Range{{10, 10}, {80, 81}}}, Content: numbered(100)}
	whole := Render([]File{f}, "0123456789abcdef", 10_000)
	if !strings.Contains(whole, "=== a.txt (before the change, at 0123456789ab; 100 lines) ===\nline 001\n") || strings.Contains(whole, "not shown") || !strings.HasSuffix(whole, "line 100\n") {
		t.Fatalf("a file that fits:\n%s", whole)
	}
	cut := Render([]File{f}, "abc", 400)
	if len(cut) > 400 {
		t.Fatalf("%d characters over a budget of 400", len(cut))
	}
	// Each line is 9 characters, the header 86, the three markers 92: a
	// radius of 5 (lines 5-15 and 75-86) is 386 characters, 6 would be
	// 422.
	for _, want := range []string{"[... lines 1-4 not shown ...]\nline 005\n", "line 015\n[... lines 16-74 not shown ...]\nline 075\n", "line 086\n[... lines 87-100 not shown ...]\n"} {
		if !strings.Contains(cut, want) {
			t.Fatalf("the cut file lacks %q:\n%s", want, cut)
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(cut, "\n"), "\n") {
		if !strings.HasPrefix(line, "line ") && !strings.HasPrefix(line, "[...") && !strings.HasPrefix(line, "===") {
			t.Fatalf("a line cut in the middle: %q", line)
		}
	}
	tiny := Render([]File{f}, "abc", 120)
	if len(tiny) > 120 || !strings.HasSuffix(tiny, "over the context budget ...]\n") {
		t.Fatalf("a budget under the hunks themselves:\n%s", tiny)
	}
}

// A record's files come from its base commit (meta base_commit), not the
// clone's head: the content before the change.
func TestAdderReadsTheBaseCommit(t *testing.T) {
	dir := gittest.Init(t)
	os.MkdirAll(filepath.Join(dir, "calc"), 0o755)
	os.WriteFile(filepath.Join(dir, "calc", "sum.go"), []byte("package calc\n\nfunc Sum(xs []int) int {\n\tt := 0\n\treturn t\n}\n"), 0o644)
	gittest.Git(t, dir, "add", ".")
	gittest.Git(t, dir, "commit", "-q", "-m", "base")
	base := gittest.Git(t, dir, "rev-parse", "HEAD")
	os.WriteFile(filepath.Join(dir, "calc", "sum.go"), []byte("package calc\n\n// moved on\n"), 0o644)
	gittest.Git(t, dir, "commit", "-q", "-am", "later")
	ctx := context.Background()
	g, err := OpenGit(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	a := &Adder{Src: g, Resolve: g.Resolve, MaxChars: 10_000}
	r := &record.Record{ID: "r1", Candidate: diff, Meta: []byte(`{"base_commit":"` + base[:8] + `"}`)}
	if err := a.Add(ctx, r); err != nil {
		t.Fatal(err)
	}
	files := r.Context[ContextKey]
	if !strings.Contains(files, "=== calc/sum.go (before the change, at "+base[:12]+"; 6 lines) ===\npackage calc\n\nfunc Sum(xs []int) int {\n\tt := 0\n") || strings.Contains(files, "moved on") {
		t.Fatalf("context.files:\n%s", files)
	}
	if a.Added != 1 || a.Missing != 1 { // old.txt is not in the repository
		t.Fatalf("added %d, missing %d", a.Added, a.Missing)
	}
	// Without a base in meta, --base (here the head) is read.
	r2 := &record.Record{ID: "r2", Candidate: diff}
	a.Base = "main"
	if err := a.Add(ctx, r2); err != nil || !strings.Contains(r2.Context[ContextKey], "moved on") {
		t.Fatalf("at the head: %v\n%s", err, r2.Context[ContextKey])
	}
	if err := a.Add(ctx, &record.Record{ID: "r3", Candidate: diff, Meta: []byte(`{"base_commit":"deadbeef"}`)}); err == nil || !strings.Contains(err.Error(), `record "r3"`) || !strings.Contains(err.Error(), `"deadbeef" is not in the repository`) {
		t.Fatalf("an unknown base commit: %v", err)
	}
	if _, err := OpenGit(ctx, t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Fatalf("not a repository: %v", err)
	}
}
