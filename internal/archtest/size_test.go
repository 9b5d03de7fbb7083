package archtest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cmd/gavel stays wiring: at most 4,000 lines outside its tests, and no
// function over 80 lines (logic grows in the packages below it).
func TestCommandLineStaysWiring(t *testing.T) {
	files, err := filepath.Glob("../../cmd/gavel/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("cmd/gavel: %v, %v", files, err)
	}
	fset := token.NewFileSet()
	lines := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines += strings.Count(string(src), "\n")
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > 80 {
					t.Errorf("%s: %s is %d lines (at most 80)", filepath.Base(name), fd.Name.Name, n)
				}
			}
		}
	}
	if lines > 4000 {
		t.Errorf("cmd/gavel is %d lines outside its tests (at most 4,000): move logic to run or the packages below", lines)
	}
}
