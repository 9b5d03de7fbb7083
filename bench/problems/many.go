package problems

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"strings"

	bexec "github.com/gavelhq/gavel/bench/exec"
)

// RunMany runs programs (perturbed versions of Code) against the problem's
// tests, with the results Run gives each alone; see RunPrograms.
func (p *Problem) RunMany(ctx context.Context, mod *bexec.GoModule, codes []string, lim bexec.Limits) ([]*bexec.Result, error) {
	progs := make([]Program, len(codes))
	for i, c := range codes {
		progs[i] = Program{Problem: p, Code: c}
	}
	return RunPrograms(ctx, mod, progs, lim, nil)
}

// Program is a program to run against a problem's tests.
type Program struct {
	Problem *Problem
	Code    string
}

// RunPrograms runs programs against their problems' tests, with the
// results Run gives each alone. Go programs are compiled together, into
// one test binary (each program's package-level names renamed apart, each
// run in a process of its own with only its own tests): one compile and
// one link instead of one per program. A program that could reach the
// others' runs (an init function, a main, a package-level variable set by
// a call) or that does not compile beside them runs alone. done, when
// given, is told each result as soon as it is known.
func RunPrograms(ctx context.Context, mod *bexec.GoModule, progs []Program, lim bexec.Limits, done func(i int, r *bexec.Result) error) ([]*bexec.Result, error) {
	results := make([]*bexec.Result, len(progs))
	var cands []bexec.Candidate
	var idx []int
	for i, pr := range progs {
		p := pr.Problem
		if p.Lang != "go" || mod == nil || len(progs) < 2 {
			continue
		}
		src, err := GoTestFile(p.Setup + "\n" + pr.Code + "\n\n" + p.Test)
		if err != nil {
			continue // alone: the compiler will say why
		}
		out, tests, ok := RenameApart(src, fmt.Sprintf("_gv%d", i))
		if !ok || len(tests) == 0 {
			continue
		}
		cands = append(cands, bexec.Candidate{Files: map[string]string{fmt.Sprintf("c%d_test.go", i): out}, Tests: tests})
		idx = append(idx, i)
	}
	if len(cands) > 1 {
		var each func(j int, r *bexec.Result) error
		if done != nil {
			each = func(j int, r *bexec.Result) error { return done(idx[j], r) }
		}
		rs, err := mod.TestMany(ctx, cands, lim, each)
		if err != nil {
			return nil, err
		}
		for j, r := range rs {
			results[idx[j]] = r
		}
	}
	for i, pr := range progs {
		if results[i] != nil {
			continue
		}
		r, err := pr.Problem.Run(ctx, mod, pr.Code, lim)
		if err != nil {
			return nil, err
		}
		results[i] = r
		if done != nil {
			if err := done(i, r); err != nil {
				return nil, err
			}
		}
	}
	return results, nil
}

// RenameApart renames every package-level name a Go file declares (its
// functions, types, variables and constants; not methods, fields or
// imports) by adding suffix, at its declaration and at every use, so that
// several such files compile into one package. It returns the file, its
// test functions' new names, and false when the file must not share a
// binary: it does not parse, or it has an init or main function or a
// package-level variable set by a call, which would run in every other
// program's process.
func RenameApart(src, suffix string) (string, []string, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "prog_test.go", src, parser.SkipObjectResolution|parser.ParseComments)
	if err != nil {
		return "", nil, false
	}
	names := map[string]bool{}
	var tests []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil {
				continue
			}
			if d.Name.Name == "init" || d.Name.Name == "main" || d.Name.Name == "TestMain" {
				return "", nil, false
			}
			names[d.Name.Name] = true
			if isTest(d) {
				tests = append(tests, d.Name.Name+suffix)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names[s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names[n.Name] = true
					}
					for _, v := range s.Values {
						if hasCall(v) {
							return "", nil, false
						}
					}
				}
			}
		}
	}
	delete(names, "_")
	var walk func(n ast.Node) bool
	walk = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.SelectorExpr:
			ast.Inspect(n.X, walk) // a field or method name is not renamed
			return false
		case *ast.StructType:
			for _, fl := range n.Fields.List {
				ast.Inspect(fl.Type, walk)
			}
			return false
		case *ast.InterfaceType:
			for _, fl := range n.Methods.List {
				ast.Inspect(fl.Type, walk)
			}
			return false
		case *ast.FuncDecl:
			if n.Recv != nil {
				ast.Inspect(n.Recv, walk)
				ast.Inspect(n.Type, walk)
				if n.Body != nil {
					ast.Inspect(n.Body, walk)
				}
				return false
			}
		case *ast.Ident:
			if names[n.Name] {
				n.Name += suffix
			}
		}
		return true
	}
	for _, d := range f.Decls {
		ast.Inspect(d, walk)
	}
	var b bytes.Buffer
	if err := format.Node(&b, fset, f); err != nil {
		return "", nil, false
	}
	return b.String(), tests, true
}

// isTest reports whether a function is a test the testing package runs.
func isTest(d *ast.FuncDecl) bool {
	if !strings.HasPrefix(d.Name.Name, "Test") || d.Type.Params == nil || len(d.Type.Params.List) != 1 {
		return false
	}
	star, ok := d.Type.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "T"
}

// hasCall reports whether an expression calls anything (a conversion
// counts: it cannot be told apart without types).
func hasCall(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if _, ok := n.(*ast.CallExpr); ok {
			found = true
		}
		if _, ok := n.(*ast.FuncLit); ok {
			found = true
		}
		return !found
	})
	return found
}
