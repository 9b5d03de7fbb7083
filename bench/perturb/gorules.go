package perturb

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"strconv"
	"strings"
)

// goProgram is a parsed Go program: the code with a package clause added.
type goProgram struct {
	fset *token.FileSet
	file *ast.File
	fn   *ast.FuncDecl // the function under test
}

const goHeader = "package main\n"

func parseGo(code string) (*goProgram, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "prog.go", goHeader+code, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	p := &goProgram{fset: fset, file: f}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			if p.fn == nil || (ast.IsExported(fd.Name.Name) && !ast.IsExported(p.fn.Name.Name)) {
				p.fn = fd
			}
		}
	}
	if p.fn == nil {
		return nil, fmt.Errorf("%w: no function", ErrNotApplicable)
	}
	return p, nil
}

func (p *goProgram) String() (string, error) {
	var b bytes.Buffer
	if err := format.Node(&b, p.fset, p.file); err != nil {
		return "", err
	}
	return tidyBlanks(strings.TrimPrefix(b.String(), goHeader)), nil
}

// tidyBlanks removes blank lines just inside a block's braces, which a
// rewrite leaves where it removed statements (the printer keeps the old
// positions' gaps): every program, references included, goes through it,
// so no blank line tells a rewritten program from its reference. A
// program with raw strings is left alone (a blank line in one is data).
func tidyBlanks(code string) string {
	if strings.Contains(code, "`") {
		return code
	}
	ls := strings.Split(code, "\n")
	out := ls[:0]
	for i, l := range ls {
		if strings.TrimSpace(l) == "" && i > 0 && i+1 < len(ls) {
			prev, next := strings.TrimSpace(out[len(out)-1]), strings.TrimSpace(ls[i+1])
			if strings.HasSuffix(prev, "{") || strings.HasPrefix(next, "}") {
				continue
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// zeroValues returns the zero value of each result of the function.
func (p *goProgram) zeroValues() []ast.Expr {
	var out []ast.Expr
	if p.fn.Type.Results == nil {
		return nil
	}
	for _, f := range p.fn.Type.Results.List {
		n := max(1, len(f.Names))
		for range n {
			out = append(out, zeroOf(f.Type))
		}
	}
	return out
}

func zeroOf(t ast.Expr) ast.Expr {
	switch x := t.(type) {
	case *ast.Ident:
		switch x.Name {
		case "string":
			return &ast.BasicLit{Kind: token.STRING, Value: `""`}
		case "bool":
			return ast.NewIdent("false")
		case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "rune", "byte", "uintptr":
			return &ast.BasicLit{Kind: token.INT, Value: "0"}
		case "error", "any":
			return ast.NewIdent("nil")
		}
		return &ast.CompositeLit{Type: x}
	case *ast.ArrayType:
		if x.Len != nil {
			return &ast.CompositeLit{Type: x}
		}
		return ast.NewIdent("nil")
	case *ast.StructType:
		return &ast.CompositeLit{Type: x}
	}
	return ast.NewIdent("nil")
}

func returnZero(p *goProgram) ast.Stmt {
	return &ast.ReturnStmt{Results: p.zeroValues()}
}

// goRule wraps a rewrite of the parsed program into an Apply function.
func goRule(rewrite func(p *goProgram, rng *rand.Rand) error) func(string, *rand.Rand) (string, error) {
	return func(code string, rng *rand.Rand) (string, error) {
		p, err := parseGo(code)
		if err != nil {
			return "", err
		}
		if err := rewrite(p, rng); err != nil {
			return "", err
		}
		return p.String()
	}
}

// nodes collects the nodes of a type in the function body, in order.
func nodes[T ast.Node](body ast.Node) []T {
	var out []T
	ast.Inspect(body, func(n ast.Node) bool {
		if t, ok := n.(T); ok {
			out = append(out, t)
		}
		return true
	})
	return out
}

func pick[T any](rng *rand.Rand, xs []T) (T, error) {
	var zero T
	if len(xs) == 0 {
		return zero, ErrNotApplicable
	}
	return xs[rng.IntN(len(xs))], nil
}

// locals lists the function's parameters and the names its body declares.
func locals(fn *ast.FuncDecl) []string {
	seen := map[string]bool{}
	var out []string
	add := func(id *ast.Ident) {
		if id != nil && id.Name != "_" && !seen[id.Name] {
			seen[id.Name] = true
			out = append(out, id.Name)
		}
	}
	for _, f := range fn.Type.Params.List {
		for _, n := range f.Names {
			add(n)
		}
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				for _, l := range s.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.RangeStmt:
			if id, ok := s.Key.(*ast.Ident); ok {
				add(id)
			}
			if id, ok := s.Value.(*ast.Ident); ok {
				add(id)
			}
		case *ast.ValueSpec:
			for _, id := range s.Names {
				add(id)
			}
		}
		return true
	})
	return out
}

var misleading = []string{"total", "flag", "temp", "data", "result", "value", "count", "item", "buffer", "node", "output", "status"}

// renameAll renames identifiers by a map in the function (declarations and
// uses alike), leaving selectors' field names alone.
func renameAll(fn *ast.FuncDecl, names map[string]string) {
	ast.Inspect(fn, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			ast.Inspect(x.X, func(m ast.Node) bool {
				if id, ok := m.(*ast.Ident); ok {
					if nn, ok := names[id.Name]; ok {
						id.Name = nn
					}
				}
				return true
			})
			return false
		case *ast.KeyValueExpr:
			ast.Inspect(x.Value, func(m ast.Node) bool {
				if id, ok := m.(*ast.Ident); ok {
					if nn, ok := names[id.Name]; ok {
						id.Name = nn
					}
				}
				return true
			})
			return false
		case *ast.Ident:
			if nn, ok := names[x.Name]; ok {
				x.Name = nn
			}
		}
		return true
	})
}

// sliceOrStringParam finds a parameter that is a slice or a string.
func sliceOrStringParam(fn *ast.FuncDecl) (string, bool) {
	for _, f := range fn.Type.Params.List {
		isSeq := false
		switch t := f.Type.(type) {
		case *ast.ArrayType:
			isSeq = t.Len == nil
		case *ast.Ident:
			isSeq = t.Name == "string"
		}
		if isSeq && len(f.Names) > 0 {
			return f.Names[0].Name, true
		}
	}
	return "", false
}

func sliceParam(fn *ast.FuncDecl) (string, ast.Expr, bool) {
	for _, f := range fn.Type.Params.List {
		if t, ok := f.Type.(*ast.ArrayType); ok && t.Len == nil && len(f.Names) > 0 {
			return f.Names[0].Name, t, true
		}
	}
	return "", nil, false
}

func parseStmts(src string) []ast.Stmt {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+src+"\n}", 0)
	if err != nil {
		panic("perturb: bad statement template: " + err.Error())
	}
	return f.Decls[0].(*ast.FuncDecl).Body.List
}

func prepend(fn *ast.FuncDecl, stmts ...ast.Stmt) {
	fn.Body.List = append(append([]ast.Stmt(nil), stmts...), fn.Body.List...)
}

// GoRules are the Go rules.
var GoRules = []*Rule{
	{
		Name: "go_misleading_names", Lang: "go", Category: "naming", Ceiling: 4,
		Description: "Renames the function's parameters and locals to misleading, generic names; behaviour is unchanged.",
		Apply: goRule(func(p *goProgram, rng *rand.Rand) error {
			ls := locals(p.fn)
			if len(ls) == 0 {
				return ErrNotApplicable
			}
			taken := map[string]bool{}
			for _, l := range ls {
				taken[l] = true
			}
			names := map[string]string{}
			for i, l := range ls {
				n := misleading[(rng.IntN(len(misleading))+i)%len(misleading)] + strconv.Itoa(i+1)
				if !taken[n] {
					names[l] = n
				}
			}
			renameAll(p.fn, names)
			return nil
		}),
	},
	{
		Name: "go_dead_code", Lang: "go", Category: "dead_code", Ceiling: 4,
		Description: "Adds a computation whose result is never used, and a branch that can never run.",
		Apply: goRule(func(p *goProgram, rng *rand.Rand) error {
			prepend(p.fn, parseStmts(fmt.Sprintf("unusedLimit := %d\nif unusedLimit < 0 {\n\tunusedLimit = -unusedLimit\n}\n_ = unusedLimit", 100+rng.IntN(900)))...)
			return nil
		}),
	},
	{
		Name: "go_redundant_copy", Lang: "go", Category: "redundancy", Ceiling: 4,
		Description: "Copies a slice parameter into a new slice before use, for no reason.",
		Apply: goRule(func(p *goProgram, _ *rand.Rand) error {
			name, typ, ok := sliceParam(p.fn)
			if !ok {
				return ErrNotApplicable
			}
			var tb bytes.Buffer
			format.Node(&tb, token.NewFileSet(), typ)
			prepend(p.fn, parseStmts(fmt.Sprintf("copied := make(%s, len(%s))\ncopy(copied, %s)\n%s = copied", tb.String(), name, name, name))...)
			return nil
		}),
	},
	{
		Name: "go_misleading_comment", Lang: "go", Category: "naming", Ceiling: 4, InComments: true,
		Description: "Replaces the function's doc comment with one that describes something else.",
		Apply: goRule(func(p *goProgram, _ *rand.Rand) error {
			if p.fn.Doc == nil || len(p.fn.Doc.List) == 0 {
				return ErrNotApplicable
			}
			p.fn.Doc.List = []*ast.Comment{{Slash: p.fn.Doc.Pos(), Text: "// " + p.fn.Name.Name + " sorts its input in place and returns the number of swaps."}}
			// Leave only the new doc comment among the file's comments.
			var keep []*ast.CommentGroup
			for _, cg := range p.file.Comments {
				if cg.End() < p.fn.Pos() && cg.Pos() >= p.fn.Doc.Pos() || cg == p.fn.Doc {
					continue
				}
				keep = append(keep, cg)
			}
			p.file.Comments = append(keep, p.fn.Doc)
			return nil
		}),
	},
	{
		Name: "go_quadratic_scan", Lang: "go", Category: "efficiency", Ceiling: 3,
		Description: "Adds a nested pass over an input sequence that does no useful work: quadratic time for a linear task.",
		Apply: goRule(func(p *goProgram, _ *rand.Rand) error {
			name, ok := sliceOrStringParam(p.fn)
			if !ok {
				return ErrNotApplicable
			}
			prepend(p.fn, parseStmts(fmt.Sprintf("checks := 0\nfor outer := 0; outer < len(%s); outer++ {\n\tfor inner := 0; inner < len(%s); inner++ {\n\t\tif outer == inner {\n\t\t\tchecks++\n\t\t}\n\t}\n}\n_ = checks", name, name))...)
			return nil
		}),
	},
	{
		Name: "go_duplicated_function", Lang: "go", Category: "duplication", Ceiling: 3,
		Description: "Duplicates the whole function under another name and routes the original through the copy.",
		Apply: goRule(func(p *goProgram, _ *rand.Rand) error {
			if p.fn.Recv != nil {
				return ErrNotApplicable
			}
			dup := &ast.FuncDecl{Name: ast.NewIdent(p.fn.Name.Name + "Impl"), Type: p.fn.Type, Body: p.fn.Body}
			var args []ast.Expr
			variadic := false
			for _, f := range p.fn.Type.Params.List {
				if len(f.Names) == 0 {
					return ErrNotApplicable
				}
				if _, ok := f.Type.(*ast.Ellipsis); ok {
					variadic = true
				}
				for _, n := range f.Names {
					args = append(args, ast.NewIdent(n.Name))
				}
			}
			call := &ast.CallExpr{Fun: ast.NewIdent(dup.Name.Name), Args: args}
			if variadic {
				call.Ellipsis = 1
			}
			var stmt ast.Stmt = &ast.ReturnStmt{Results: []ast.Expr{call}}
			if p.fn.Type.Results == nil {
				stmt = &ast.ExprStmt{X: call}
			}
			// The original keeps a copy of the logic too: the body runs in
			// the copy, and the original's own body is the duplicate.
			orig := &ast.FuncDecl{Doc: p.fn.Doc, Name: p.fn.Name, Type: p.fn.Type, Body: &ast.BlockStmt{List: []ast.Stmt{stmt}}}
			for i, d := range p.file.Decls {
				if d == p.fn {
					p.file.Decls[i] = orig
					p.file.Decls = append(p.file.Decls, dup)
					break
				}
			}
			return nil
		}),
	},
	{
		Name: "go_recompute", Lang: "go", Category: "structure", Ceiling: 3,
		Description: "Wraps the body in a loop that computes the whole result three times and keeps the last.",
		Apply: goRule(func(p *goProgram, _ *rand.Rand) error {
			if p.fn.Type.Results == nil || len(p.zeroValues()) != 1 {
				return ErrNotApplicable
			}
			lit := &ast.FuncLit{Type: &ast.FuncType{Params: &ast.FieldList{}, Results: p.fn.Type.Results}, Body: p.fn.Body}
			stmts := parseStmts("var last = compute()\nfor round := 1; round < 3; round++ {\n\tlast = compute()\n}\nreturn last")
			def := &ast.AssignStmt{Lhs: []ast.Expr{ast.NewIdent("compute")}, Tok: token.DEFINE, Rhs: []ast.Expr{lit}}
			p.fn.Body = &ast.BlockStmt{List: append([]ast.Stmt{def}, stmts...)}
			return nil
		}),
	},
	{
		Name: "go_off_by_one", Lang: "go", Category: "boundary", Ceiling: 2,
		Description: "Moves a loop bound by one (< becomes <=, or <= becomes <).",
		Apply: goRule(func(p *goProgram, rng *rand.Rand) error {
			var conds []*ast.BinaryExpr
			for _, f := range nodes[*ast.ForStmt](p.fn.Body) {
				if b, ok := f.Cond.(*ast.BinaryExpr); ok && (b.Op == token.LSS || b.Op == token.LEQ || b.Op == token.GTR || b.Op == token.GEQ) {
					conds = append(conds, b)
				}
			}
			b, err := pick(rng, conds)
			if err != nil {
				return err
			}
			b.Op = map[token.Token]token.Token{token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR}[b.Op]
			return nil
		}),
	},
	{
		Name: "go_inverted_condition", Lang: "go", Category: "condition", Ceiling: 2,
		Description: "Negates the condition of one if statement.",
		Apply: goRule(func(p *goProgram, rng *rand.Rand) error {
			s, err := pick(rng, nodes[*ast.IfStmt](p.fn.Body))
			if err != nil {
				return err
			}
			s.Cond = &ast.UnaryExpr{Op: token.NOT, X: &ast.ParenExpr{X: s.Cond}}
			return nil
		}),
	},
	{
		Name: "go_missing_guard", Lang: "go", Category: "edge_case", Ceiling: 2,
		Description: "Removes an early-return guard (an if statement that only returns), dropping an edge case.",
		Apply: goRule(func(p *goProgram, rng *rand.Rand) error {
			var guards []int
			for i, s := range p.fn.Body.List {
				if ifs, ok := s.(*ast.IfStmt); ok && ifs.Else == nil && len(ifs.Body.List) == 1 {
					if _, ok := ifs.Body.List[0].(*ast.ReturnStmt); ok && i < len(p.fn.Body.List)-1 {
						guards = append(guards, i)
					}
				}
			}
			i, err := pick(rng, guards)
			if err != nil {
				return err
			}
			p.fn.Body.List = append(p.fn.Body.List[:i], p.fn.Body.List[i+1:]...)
			return nil
		}),
	},
	{
		Name: "go_wrong_operator", Lang: "go", Category: "condition", Ceiling: 2,
		Description: "Swaps one arithmetic or comparison operator for its near neighbour (+ and -, == and !=, < and >).",
		Apply: goRule(func(p *goProgram, rng *rand.Rand) error {
			swap := map[token.Token]token.Token{token.ADD: token.SUB, token.SUB: token.ADD, token.EQL: token.NEQ, token.NEQ: token.EQL,
				token.LSS: token.GTR, token.GTR: token.LSS, token.MUL: token.ADD}
			var cands []*ast.BinaryExpr
			for _, b := range nodes[*ast.BinaryExpr](p.fn.Body) {
				if _, ok := swap[b.Op]; ok {
					if lit, ok := b.X.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						continue // string concatenation has no minus
					}
					cands = append(cands, b)
				}
			}
			b, err := pick(rng, cands)
			if err != nil {
				return err
			}
			b.Op = swap[b.Op]
			return nil
		}),
	},
	{
		Name: "go_constant_shift", Lang: "go", Category: "boundary", Ceiling: 2,
		Description: "Changes one integer constant by one.",
		Apply: goRule(func(p *goProgram, rng *rand.Rand) error {
			var lits []*ast.BasicLit
			for _, l := range nodes[*ast.BasicLit](p.fn.Body) {
				if l.Kind == token.INT {
					lits = append(lits, l)
				}
			}
			l, err := pick(rng, lits)
			if err != nil {
				return err
			}
			v, err := strconv.ParseInt(l.Value, 0, 64)
			if err != nil {
				return ErrNotApplicable
			}
			l.Value = strconv.FormatInt(v+1, 10)
			return nil
		}),
	},
	{
		Name: "go_drop_loop", Lang: "go", Category: "algorithm", Ceiling: 1,
		Description: "Deletes a whole loop from the function body.",
		Apply: goRule(func(p *goProgram, rng *rand.Rand) error {
			var idx []int
			for i, s := range p.fn.Body.List {
				switch s.(type) {
				case *ast.ForStmt, *ast.RangeStmt:
					idx = append(idx, i)
				}
			}
			i, err := pick(rng, idx)
			if err != nil {
				return err
			}
			p.fn.Body.List = append(p.fn.Body.List[:i], p.fn.Body.List[i+1:]...)
			return nil
		}),
	},
	{
		Name: "go_wrong_branch", Lang: "go", Category: "algorithm", Ceiling: 1,
		Description: "Replaces what one branch of two or more statements computes with the zero result: that branch's algorithm is lost (a branch of one statement would be a small fix, so none is chosen).",
		Apply: goRule(func(p *goProgram, rng *rand.Rand) error {
			if p.fn.Type.Results == nil {
				return ErrNotApplicable
			}
			var big []*ast.IfStmt
			for _, s := range nodes[*ast.IfStmt](p.fn.Body) {
				if len(s.Body.List) >= 2 {
					big = append(big, s)
				}
			}
			s, err := pick(rng, big)
			if err != nil {
				return err
			}
			s.Body.List = []ast.Stmt{returnZero(p)}
			return nil
		}),
	},
	{
		Name: "go_multi_element_bail", Lang: "go", Category: "input_class", Ceiling: 2,
		Description: "Returns the zero result for every input sequence longer than one element: a whole input class is dropped, yet deleting the guard fixes it (a small local fix).",
		Apply: goRule(func(p *goProgram, _ *rand.Rand) error {
			name, ok := sliceOrStringParam(p.fn)
			if !ok || p.fn.Type.Results == nil {
				return ErrNotApplicable
			}
			guard := &ast.IfStmt{
				Cond: &ast.BinaryExpr{X: &ast.CallExpr{Fun: ast.NewIdent("len"), Args: []ast.Expr{ast.NewIdent(name)}}, Op: token.GTR, Y: &ast.BasicLit{Kind: token.INT, Value: "1"}},
				Body: &ast.BlockStmt{List: []ast.Stmt{returnZero(p)}},
			}
			prepend(p.fn, guard)
			return nil
		}),
	},
	{
		Name: "go_empty_body", Lang: "go", Category: "empty", Ceiling: 0,
		Description: "Replaces the body with a bare return of zero values.",
		Apply: goRule(func(p *goProgram, _ *rand.Rand) error {
			p.fn.Body.List = []ast.Stmt{returnZero(p)}
			return nil
		}),
	},
	{
		Name: "go_unrelated_body", Lang: "go", Category: "unrelated", Ceiling: 0,
		Description: "Replaces the body with an unrelated computation (a checksum of a fixed string) and returns zero values.",
		Apply: goRule(func(p *goProgram, _ *rand.Rand) error {
			stmts := parseStmts("checksum := 0\nfor _, r := range \"unrelated\" {\n\tchecksum = checksum*31 + int(r)\n}\n_ = checksum")
			p.fn.Body.List = append(stmts, returnZero(p))
			return nil
		}),
	},
}

// synonyms are names as good as the ones they replace: a rename to one of
// them keeps a program's quality (a ceiling-5 rewrite).
var synonyms = map[string]string{
	"i": "idx", "idx": "i", "j": "k", "k": "j", "n": "size", "size": "n", "result": "res", "res": "result",
	"ans": "answer", "answer": "ans", "count": "cnt", "cnt": "count", "sum": "total", "total": "sum",
	"s": "str", "str": "s", "x": "val", "val": "x", "v": "elem", "elem": "v", "num": "number", "number": "num",
	"numbers": "nums", "nums": "numbers", "arr": "items", "items": "arr", "out": "output", "output": "out",
	"tmp": "temp", "temp": "tmp", "c": "ch", "ch": "c", "word": "w", "w": "word", "l": "lst", "lst": "l",
	"a": "first", "b": "second", "m": "mid", "mid": "m", "start": "begin", "begin": "start", "end": "stop",
	"max": "largest", "min": "smallest", "flag": "found", "found": "flag", "ok": "valid", "valid": "ok",
}

// identifiers are every name a file uses.
func identifiers(f *ast.File) map[string]bool {
	out := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			out[id.Name] = true
		}
		return true
	})
	return out
}

// simpleOperand is an operand whose evaluation has no side effect a swap
// could reorder: a name, a literal, an index or field of one, len(x).
func simpleOperand(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident, *ast.BasicLit:
		return true
	case *ast.SelectorExpr:
		return simpleOperand(x.X)
	case *ast.IndexExpr:
		return simpleOperand(x.X) && simpleOperand(x.Index)
	case *ast.BinaryExpr:
		return (x.Op == token.ADD || x.Op == token.SUB) && simpleOperand(x.X) && simpleOperand(x.Y)
	case *ast.CallExpr:
		id, ok := x.Fun.(*ast.Ident)
		return ok && id.Name == "len" && len(x.Args) == 1 && simpleOperand(x.Args[0])
	}
	return false
}

var mirrored = map[token.Token]token.Token{token.LSS: token.GTR, token.GTR: token.LSS, token.LEQ: token.GEQ, token.GEQ: token.LEQ}

// NeutralGoRules rewrite a program without changing its behaviour or its
// quality (ceiling 5): score-5 candidates are made by them, so that none
// equals its reference.
var NeutralGoRules = []*Rule{
	{
		Name: "go_rename_locals", Lang: "go", Category: "neutral", Ceiling: 5,
		Description: "Renames locals to names as clear as theirs (i to idx, result to res); behaviour and quality are unchanged.",
		Apply: goRule(func(p *goProgram, rng *rand.Rand) error {
			taken := identifiers(p.file)
			var can []string
			for _, l := range locals(p.fn) {
				if nn, ok := synonyms[l]; ok && !taken[nn] {
					can = append(can, l)
				}
			}
			if len(can) == 0 {
				return ErrNotApplicable
			}
			// A random nonempty set of them.
			names := map[string]string{}
			for _, k := range rng.Perm(len(can))[:1+rng.IntN(len(can))] {
				if nn := synonyms[can[k]]; !taken[nn] {
					names[can[k]], taken[nn] = nn, true
				}
			}
			renameAll(p.fn, names)
			return nil
		}),
	},
	{
		Name: "go_increment_form", Lang: "go", Category: "neutral", Ceiling: 5,
		Description: "Writes one increment or decrement the other equivalent way (x++ as x += 1, or back).",
		Apply: goRule(func(p *goProgram, rng *rand.Rand) error {
			// Each site is a statement and how to put its rewrite in place.
			type site struct {
				s   ast.Stmt
				set func(ast.Stmt)
			}
			var sites []site
			consider := func(s ast.Stmt, set func(ast.Stmt)) {
				switch x := s.(type) {
				case *ast.IncDecStmt:
					sites = append(sites, site{s, set})
				case *ast.AssignStmt:
					if l, ok := x.Rhs[0].(*ast.BasicLit); ok && len(x.Lhs) == 1 && l.Value == "1" && (x.Tok == token.ADD_ASSIGN || x.Tok == token.SUB_ASSIGN) {
						sites = append(sites, site{s, set})
					}
				}
			}
			ast.Inspect(p.fn.Body, func(n ast.Node) bool {
				switch b := n.(type) {
				case *ast.BlockStmt:
					for i := range b.List {
						consider(b.List[i], func(s ast.Stmt) { b.List[i] = s })
					}
				case *ast.CaseClause:
					for i := range b.Body {
						consider(b.Body[i], func(s ast.Stmt) { b.Body[i] = s })
					}
				case *ast.ForStmt:
					if b.Post != nil {
						consider(b.Post, func(s ast.Stmt) { b.Post = s })
					}
				}
				return true
			})
			st, err := pick(rng, sites)
			if err != nil {
				return err
			}
			switch x := st.s.(type) {
			case *ast.IncDecStmt:
				op := token.ADD_ASSIGN
				if x.Tok == token.DEC {
					op = token.SUB_ASSIGN
				}
				st.set(&ast.AssignStmt{Lhs: []ast.Expr{x.X}, Tok: op, Rhs: []ast.Expr{&ast.BasicLit{Kind: token.INT, Value: "1"}}})
			case *ast.AssignStmt:
				tok := token.INC
				if x.Tok == token.SUB_ASSIGN {
					tok = token.DEC
				}
				st.set(&ast.IncDecStmt{X: x.Lhs[0], Tok: tok})
			}
			return nil
		}),
	},
	{
		Name: "go_mirror_comparison", Lang: "go", Category: "neutral", Ceiling: 5,
		Description: "Writes one comparison of side-effect-free operands the other way round (a < b as b > a).",
		Apply: goRule(func(p *goProgram, rng *rand.Rand) error {
			var cmps []*ast.BinaryExpr
			for _, b := range nodes[*ast.BinaryExpr](p.fn.Body) {
				if _, ok := mirrored[b.Op]; ok && simpleOperand(b.X) && simpleOperand(b.Y) {
					cmps = append(cmps, b)
				}
			}
			b, err := pick(rng, cmps)
			if err != nil {
				return err
			}
			b.X, b.Y, b.Op = b.Y, b.X, mirrored[b.Op]
			return nil
		}),
	},
}
