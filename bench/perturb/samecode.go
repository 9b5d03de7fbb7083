package perturb

import (
	"go/scanner"
	"go/token"
	"strings"
)

// SameCode reports whether two programs differ only in comments and
// white space (outside string literals): a "perturbation" that leaves the
// code as it was.
func SameCode(lang, a, b string) bool {
	if lang == "go" {
		ta, okA := goTokens(a)
		tb, okB := goTokens(b)
		if okA && okB {
			return ta == tb
		}
	}
	return pyCode(a) == pyCode(b)
}

// goTokens is a Go program's tokens without comments, one per line.
func goTokens(src string) (string, bool) {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	bad := false
	s.Init(file, []byte(src), func(token.Position, string) { bad = true }, 0)
	var b strings.Builder
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON && lit == "\n" {
			lit = ";"
		}
		b.WriteString(tok.String())
		b.WriteByte(' ')
		b.WriteString(lit)
		b.WriteByte('\n')
	}
	return b.String(), !bad
}

// pyCode is a Python program (or any program with # comments and
// quoted strings) with its comments and the white space outside strings
// removed.
func pyCode(src string) string {
	var b strings.Builder
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			q := string(c)
			if strings.HasPrefix(src[i:], strings.Repeat(q, 3)) {
				q = strings.Repeat(q, 3)
			}
			j := i + len(q)
			for j < len(src) && !strings.HasPrefix(src[j:], q) {
				if src[j] == '\\' {
					j++
				}
				if len(q) == 1 && j < len(src) && src[j] == '\n' {
					break
				}
				j++
			}
			j = min(len(src), j+len(q))
			b.WriteString(src[i:j])
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}
