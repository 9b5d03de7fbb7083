package archtest_test

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const module = "github.com/gavelhq/gavel"

// graph loads every package of the module (tests left out: the rules are
// about what ships) with its direct and transitive imports.
func graph(t *testing.T) map[string]*packages.Package {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps, Dir: "../.."}, module+"/...")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*packages.Package{}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			t.Fatalf("%s: %v", p.PkgPath, p.Errors)
		}
		out[p.PkgPath] = p
	}
	if len(out) < 20 {
		t.Fatalf("loaded %d packages: not the module", len(out))
	}
	return out
}

// deps is every package p imports, directly or not.
func deps(p *packages.Package) []string {
	seen := map[string]bool{}
	var walk func(*packages.Package)
	walk = func(p *packages.Package) {
		for path, q := range p.Imports {
			if !seen[path] {
				seen[path] = true
				walk(q)
			}
		}
	}
	walk(p)
	out := make([]string, 0, len(seen))
	for path := range seen {
		out = append(out, path)
	}
	slices.Sort(out)
	return out
}

func under(path, dir string) bool {
	full := module + "/" + dir
	return path == full || strings.HasPrefix(path, full+"/")
}

// TestImports holds the arrows of the package map: storage below the
// domain, the lifecycle without HTTP, the server without a store
// implementation, cobra in the CLI only.
func TestImports(t *testing.T) {
	g := graph(t)
	for path, p := range g {
		all := deps(p)
		t.Run(strings.TrimPrefix(path, module+"/"), func(t *testing.T) {
			if under(path, "store") {
				for _, d := range all {
					if under(d, "server") || under(d, "cmd") {
						t.Errorf("%s depends on %s: storage implements the domain's interfaces and never depends on delivery", path, d)
					}
				}
			}
			if path == module+"/deploy" {
				if _, ok := p.Imports["net/http"]; ok {
					t.Errorf("%s imports net/http: the judge lifecycle knows nothing of HTTP", path)
				}
			}
			if under(path, "server") {
				for _, d := range all {
					if under(d, "store") || under(d, "queue") {
						t.Errorf("%s depends on %s: the server is given interfaces, never a store implementation", path, d)
					}
				}
			}
			if path != module+"/cmd/gavel" {
				for imp := range p.Imports {
					if strings.HasPrefix(imp, "github.com/spf13/cobra") || strings.HasPrefix(imp, "github.com/spf13/pflag") {
						t.Errorf("%s imports %s: flags belong to cmd/gavel", path, imp)
					}
				}
			}
		})
	}
	// The rules above must have something to hold over.
	for _, need := range []string{"deploy", "server", "store", "store/sqldb", "cmd/gavel"} {
		if g[module+"/"+need] == nil {
			t.Errorf("package %s is missing from the module", need)
		}
	}
}
