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
// Python through bexec.Python against 'python3 -I prog.py'; Go, the test
// binary run in the sandbox against the same binary run bare (compiling,
// the same for both, is left out).
//
// Every iteration runs the program bare and then sandboxed, so that a
// machine whose speed drifts (a shared one) slows both alike; each reports
// bare-ms/op, sandbox-ms/op, their ratio, and the CPU the sandboxed run
// used (launcher and program). The sandbox is measured with the launcher
// gavel ships (gavel-sandbox, "small") and with a big binary as its own
// launcher ("self": this test binary; gavel's own is bigger still):
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
		bare := func() {
			cmd := exec.Command(bexec.PythonInterpreter(), "-I", "prog.py")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
		compare(b, "python/"+c.name, bare, func() (*bexec.Result, error) { return bexec.Python(ctx, c.src, lim) })
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
		bare := func() {
			cmd := exec.Command(bin, "-test.count=1")
			cmd.Dir = filepath.Dir(bin)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
		compare(b, "go/"+c.name, bare, func() (*bexec.Result, error) { return bexec.RunTestBinary(ctx, bin, nil, lim) })
	}
}

// compare runs bare and sandboxed alternately, with each launcher.
func compare(b *testing.B, name string, bare func(), sandboxed func() (*bexec.Result, error)) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range []struct{ name, path string }{{"small", os.Getenv(bexec.LauncherEnv)}, {"self", self}} {
		b.Run(name+"/"+l.name, func(b *testing.B) {
			b.Setenv(bexec.LauncherEnv, l.path)
			var bareWall, wall, cpu time.Duration
			for b.Loop() {
				t0 := time.Now()
				bare()
				t1 := time.Now()
				r, err := sandboxed()
				if err != nil || r.Status != bexec.Passed {
					b.Fatalf("%v %+v", err, r)
				}
				wall += time.Since(t1)
				bareWall += t1.Sub(t0)
				cpu += r.Run.CPU
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(ms(bareWall), "bare-ms/op")
			b.ReportMetric(ms(wall), "sandbox-ms/op")
			b.ReportMetric(float64(wall)/float64(bareWall), "ratio")
			b.ReportMetric(ms(cpu), "sandbox-cpu-ms/op")
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
