package problems

import (
	"errors"
	"fmt"
	"io"
	"os"
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
