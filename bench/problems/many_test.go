package problems_test

import (
	"context"
	"strings"
	"testing"
	"time"

	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
)

// RenameApart on a hand-made file: every package-level name is renamed at
// its declaration and its uses; methods, fields, selectors, imports and
// locals that are not package-level names are left alone.
func TestRenameApart(t *testing.T) {
	src := `package main

import (
	"strings"
	"testing"
)

type T struct{ N int }

const C = 2

var V = 3

func (t T) Twice() int { return t.N * C }

func F(s string) int { x := T{N: V}; return len(strings.TrimSpace(s)) + x.Twice() }

func TestF(t *testing.T) {
	if F(" a ") != 13 {
		t.Fatal("F")
	}
}
`
	want := `package main

import (
	"strings"
	"testing"
)

type T_gv1 struct{ N int }

const C_gv1 = 2

var V_gv1 = 3

func (t T_gv1) Twice() int { return t.N * C_gv1 }

func F_gv1(s string) int { x := T_gv1{N: V_gv1}; return len(strings.TrimSpace(s)) + x.Twice() }

func TestF_gv1(t *testing.T) {
	if F_gv1(" a ") != 13 {
		t.Fatal("F")
	}
}
`
	got, tests, ok := problems.RenameApart(src, "_gv1")
	if !ok || got != want || len(tests) != 1 || tests[0] != "TestF_gv1" {
		t.Fatalf("ok %v, tests %v:\n%s", ok, tests, got)
	}
	// What would run in every other program's process keeps a file apart.
	for _, extra := range []string{"func init() { println(1) }", "func main() {}", "var W = strings.Repeat(\"x\", 3)",
		"var W = func() int { return 1 }()"} {
		if _, _, ok := problems.RenameApart(src+"\n"+extra+"\n", "_gv1"); ok {
			t.Errorf("%q: shared a binary", extra)
		}
	}
}

// Programs compiled into one test binary get the results each gets alone:
// the canonical solution passes, a wrong one fails, one that does not
// compile is a build error, and hostile ones (one that wrecks its working
// folder and the binary in it, one that would run code in every process
// through init, one that exits early reporting success) change nothing
// for the programs beside them.
func TestRunManyMatchesRunAlone(t *testing.T) {
	p := load(t, "go")[0]
	code := p.Code()
	body := "    for i := 0; i < len(numbers); i++ {"
	if !strings.Contains(code, body) {
		t.Fatalf("HumanEval/0 changed:\n%s", code)
	}
	codes := []string{
		code, // passes
		strings.Replace(code, "distance < threshold", "distance > threshold", 1),                                       // fails
		strings.Replace(code, "return false", "return 0", 1),                                                           // does not compile
		strings.Replace(code, body, "    os.Remove(\"prog.test\"); os.WriteFile(\"prog.test\", nil, 0o777)\n"+body, 1), // wrecks its folder, then passes
		code + "\nfunc init() { os.Exit(0) }\n",                                                                        // would end every process at once
		strings.Replace(code, body, "    os.Exit(0)\n"+body, 1),                                                        // exits 0 before the tests end
		code, // passes, after all of them
	}
	mod, err := problems.NewGoModule()
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	ctx := context.Background()
	lim := bexec.Limits{Wall: 20 * time.Second}
	got, err := p.RunMany(ctx, mod, codes, lim)
	if err != nil {
		t.Fatal(err)
	}
	// Five share a binary; the one that does not compile and the one with
	// an init function run alone.
	together := []int{5, 5, 0, 5, 0, 5, 5}
	for i, r := range got {
		if r.Together != together[i] {
			t.Errorf("program %d ran from a binary of %d programs, want %d", i, r.Together, together[i])
		}
	}
	want := []bexec.Status{bexec.Passed, bexec.Failed, bexec.BuildError, bexec.Passed, "", "", bexec.Passed}
	for i, c := range codes {
		alone, err := p.Run(ctx, mod, c, lim)
		if err != nil {
			t.Fatal(err)
		}
		if got[i].Status != alone.Status || got[i].Reason != alone.Reason || (want[i] != "" && alone.Status != want[i]) {
			t.Errorf("program %d: together %s (%s), alone %s (%s), want %s", i, got[i].Status, got[i].Reason, alone.Status, alone.Reason, want[i])
		}
	}
}
