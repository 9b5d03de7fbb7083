package exec_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
)

// BenchmarkSandboxOverhead compares a run in gavel's sandbox with the same
// program run bare, for a trivial program and a typical HumanEval
// solution with its tests (HumanEval/0 in Python, HumanEval-X Go/0):
// Python through bexec.Python against 'python3 prog.py'; Go, the test
// binary run in the sandbox against the same binary run bare (compiling,
// the same for both, is left out):
//
//	go test ./bench/exec -run XXX -bench SandboxOverhead -benchtime 50x
func BenchmarkSandboxOverhead(b *testing.B) {
	if _, err := exec.LookPath("python3"); err != nil {
		b.Skip("python3 is needed")
	}
	ctx := context.Background()
	lim := bexec.Limits{Wall: 10 * time.Second}
	py := loadOne(b, "python")
	typical := py.Code() + "\n\n" + py.Test + "\n\ncheck(" + py.EntryPoint + ")\n"
	for _, c := range []struct{ name, src string }{{"trivial", "pass\n"}, {"humaneval", typical}} {
		dir := b.TempDir()
		file := filepath.Join(dir, "prog.py")
		if err := os.WriteFile(file, []byte(c.src), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run("python/"+c.name+"/bare", func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(bexec.PythonInterpreter(), "-I", "prog.py")
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
		b.Run("python/"+c.name+"/sandbox", func(b *testing.B) {
			for b.Loop() {
				r, err := bexec.Python(ctx, c.src, lim)
				if err != nil || r.Status != bexec.Passed {
					b.Fatalf("%v %+v", err, r)
				}
			}
		})
	}
	mod, err := problems.NewGoModule()
	if err != nil {
		b.Fatal(err)
	}
	defer mod.Close()
	gp := loadOne(b, "go")
	src, err := problems.GoTestFile(gp.Setup + "\n" + gp.Code() + "\n\n" + gp.Test)
	if err != nil {
		b.Fatal(err)
	}
	trivial := "package main\n\nimport \"testing\"\n\nfunc TestNothing(t *testing.T) {}\n"
	for _, c := range []struct{ name, src string }{{"trivial", trivial}, {"humaneval", src}} {
		bin := filepath.Join(b.TempDir(), "prog.test")
		if out, err := mod.Compile(ctx, map[string]string{"prog_test.go": c.src}, bin); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		b.Run("go/"+c.name+"/bare", func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(bin, "-test.count=1")
				cmd.Dir = filepath.Dir(bin)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
		b.Run("go/"+c.name+"/sandbox", func(b *testing.B) {
			for b.Loop() {
				r, err := bexec.RunTestBinary(ctx, bin, nil, lim)
				if err != nil || r.Status != bexec.Passed {
					b.Fatalf("%v %+v", err, r)
				}
			}
		})
	}
}

func loadOne(b *testing.B, lang string) *problems.Problem {
	name, load := "../../examples/humaneval-x-go/humaneval_go.jsonl.gz", problems.LoadHumanEvalXGo
	if lang == "python" {
		name, load = "../../examples/humaneval/HumanEval.jsonl.gz", problems.LoadHumanEval
	}
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ps, err := load(f, name)
	if err != nil {
		b.Fatal(err)
	}
	return ps[0]
}
