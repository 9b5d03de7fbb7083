package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Candidate is one program of a batch that compiles into one test binary:
// its files, named apart from the other candidates' and with every
// package-level name of its own renamed apart, and the tests that are its
// own.
type Candidate struct {
	Files map[string]string
	Tests []string
}

// compileErrFile finds the files a compiler's output blames.
var compileErrFile = regexp.MustCompile(`(?m)^(?:\./)?(?:p\d{6}/)?([A-Za-z0-9_]+\.go):\d+`)

// TestMany compiles candidates of one problem as one package, into one
// test binary (one compile and one link for all), and runs each
// candidate's own tests in the sandbox in a process of its own, from a
// fresh working folder with its own copy of the binary, under the same
// limits as Test. Candidates the compiler blames are taken out and the
// rest compiled again (at most three times); their results are nil, for
// the caller to run them alone, as Test would, so that a candidate that
// does not compile gets exactly the result it gets alone. All results are
// nil when no binary could be built. done, when given, is told each result
// as soon as it is known (so that a caller can keep it before the others
// have run).
func (m *GoModule) TestMany(ctx context.Context, cands []Candidate, lim Limits, done func(i int, r *Result) error) ([]*Result, error) {
	lim = lim.norm()
	results := make([]*Result, len(cands))
	in := make([]bool, len(cands))
	owner := map[string]int{}
	for i, c := range cands {
		in[i] = len(c.Tests) > 0
		for name := range c.Files {
			if err := checkGoFileName(name); err != nil {
				return nil, err
			}
			if _, dup := owner[name]; dup {
				return nil, fmt.Errorf("file %q given twice", name)
			}
			owner[name] = i
		}
	}
	work, cleanup, err := NewWorkdir()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	bin := filepath.Join(work, "prog.test")
	var buildTime time.Duration
	built := false
	for attempt := 0; attempt < 3 && !built; attempt++ {
		n := 0
		for _, ok := range in {
			if ok {
				n++
			}
		}
		if n == 0 {
			return results, nil
		}
		t0 := time.Now()
		out, err := m.build(ctx, cands, in, bin)
		buildTime += time.Since(t0)
		if err == nil {
			built = true
			break
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		blamed := 0
		for _, mt := range compileErrFile.FindAllStringSubmatch(out, -1) {
			if i, ok := owner[mt[1]]; ok && in[i] {
				in[i] = false
				blamed++
			}
		}
		if blamed == 0 {
			return results, nil // nothing to take out: everyone alone
		}
	}
	if !built {
		return results, nil
	}
	n := 0
	for _, ok := range in {
		if ok {
			n++
		}
	}
	for i, c := range cands {
		if !in[i] {
			continue
		}
		r, err := RunTestBinary(ctx, bin, c.Tests, lim)
		if err != nil {
			return nil, err
		}
		if strings.Contains(r.Run.Stdout+r.Run.Stderr, "no tests to run") {
			continue // its tests were not found in the binary: alone, then
		}
		r.BuildTime, r.Together = buildTime/time.Duration(n), n
		results[i] = r
		if done != nil {
			if err := done(i, r); err != nil {
				return nil, err
			}
		}
	}
	return results, nil
}

// build compiles the candidates still in into one test binary.
func (m *GoModule) build(ctx context.Context, cands []Candidate, in []bool, bin string) (string, error) {
	pkg := fmt.Sprintf("p%06d", m.n.Add(1))
	dir := filepath.Join(m.Root, pkg)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	for i, c := range cands {
		if !in[i] {
			continue
		}
		for name, content := range c.Files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				return "", err
			}
		}
	}
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	build := osexec.CommandContext(bctx, goBin(), "test", "-c", "-o", bin, "./"+pkg)
	build.Dir = m.Root
	build.Env = m.goEnv()
	out, err := build.CombinedOutput()
	if err == nil {
		if _, serr := os.Stat(bin); serr != nil {
			err = errNoTests // go test -c writes nothing for a package without tests
		}
	}
	return string(out), err
}

// errNoTests is a build that made no test binary: the package has no tests.
var errNoTests = errors.New("the package has no tests")

func checkGoFileName(name string) error {
	if strings.ContainsAny(name, `/\`) || !strings.HasSuffix(name, ".go") {
		return fmt.Errorf("file %q: want a plain Go file name", name)
	}
	return nil
}

// Compile builds a package of Go files (its tests included) in the module
// into the test binary bin, returning the compiler's output.
func (m *GoModule) Compile(ctx context.Context, files map[string]string, bin string) (string, error) {
	return m.build(ctx, []Candidate{{Files: files}}, []bool{true}, bin)
}

// RunTestBinary runs a test binary's tests (those named, or all) in the
// sandbox, from a copy in a working folder of the run's own: nothing one
// run does to its folder reaches another's.
func RunTestBinary(ctx context.Context, bin string, tests []string, lim Limits) (*Result, error) {
	lim = lim.norm()
	work, cleanup, err := NewWorkdir()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if err := copyFile(bin, filepath.Join(work, "prog.test")); err != nil {
		return nil, err
	}
	if err := Chown(work); err != nil {
		return nil, err
	}
	argv := []string{"./prog.test", "-test.count=1", "-test.timeout=" + (lim.Wall + time.Second).String()}
	if len(tests) > 0 {
		argv = append(argv, "-test.run=^("+strings.Join(tests, "|")+")$")
	}
	run, err := Exec(ctx, Cmd{Argv: argv,
		Env: []string{"GOMAXPROCS=2", "GOTRACEBACK=single"}, Dir: work, Limits: lim})
	if err != nil {
		return nil, err
	}
	res := &Result{Run: run}
	res.Status, res.Reason = classifyGo(run)
	return res, nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
