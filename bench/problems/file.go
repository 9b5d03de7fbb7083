package problems

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	bexec "github.com/gavelhq/gavel/bench/exec"
)

// loaders read a problems file by language.
var loaders = map[string]func(io.Reader, string) ([]*Problem, error){"go": LoadHumanEvalXGo, "python": LoadHumanEval}

// ErrLanguage is a language that is not go or python, or not the file's.
var ErrLanguage = errors.New("wrong language")

// LanguageError says that a problems file holds another language's
// problems than the one asked for.
type LanguageError struct {
	File, Asked, Holds string
}

func (e *LanguageError) Error() string {
	if e.Holds == "" {
		return fmt.Sprintf("language %q: want go or python", e.Asked)
	}
	return fmt.Sprintf("%s holds %s problems, not %s", e.File, e.Holds, e.Asked)
}

// Is makes a LanguageError ErrLanguage.
func (e *LanguageError) Is(target error) bool { return target == ErrLanguage }

// LoadFile reads a problems file (gzipped or not) of a language: go
// (HumanEval-X Go) or python (HumanEval). When the file holds the other
// language's problems, the error is a *LanguageError that says so.
func LoadFile(file, lang string) ([]*Problem, error) {
	load, ok := loaders[lang]
	if !ok {
		return nil, &LanguageError{File: file, Asked: lang}
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ps, err := load(f, file)
	if err != nil {
		// The other language's loader reading it fine means the language
		// is wrong.
		other := map[string]string{"go": "python", "python": "go"}[lang]
		if g, oerr := os.Open(file); oerr == nil {
			defer g.Close()
			if _, oerr := loaders[other](g, file); oerr == nil {
				return nil, &LanguageError{File: file, Asked: lang, Holds: other}
			}
		}
	}
	return ps, err
}

// RunPath runs a program the way the benchmarks do: for lang "python" the
// script at path, for "go" the package (with its tests) in the folder at
// path, compiled offline in the embedded module. A wrong lang is an error
// wrapping ErrLanguage; a folder without Go files, ErrNoGoFiles.
func RunPath(ctx context.Context, lang, path string, lim bexec.Limits) (*bexec.Result, error) {
	switch lang {
	case "python":
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return bexec.Python(ctx, string(b), lim)
	case "go":
		files := map[string]string{}
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".go") {
				b, err := os.ReadFile(filepath.Join(path, e.Name()))
				if err != nil {
					return nil, err
				}
				files[e.Name()] = string(b)
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: %w", path, ErrNoGoFiles)
		}
		mod, err := NewGoModule()
		if err != nil {
			return nil, err
		}
		defer mod.Close()
		return mod.Test(ctx, files, lim)
	}
	return nil, &LanguageError{File: path, Asked: lang}
}

// ErrNoGoFiles is a Go package folder without .go files.
var ErrNoGoFiles = errors.New("the folder holds no .go files")
