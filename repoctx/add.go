package repoctx

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gavelhq/gavel/record"
)

// BaseKeys are the meta fields that name a record's base commit, in the
// order they are looked for (SWE-bench's base_commit first).
var BaseKeys = []string{"base_commit", "base_sha", "base"}

// Adder puts context.files into records: the files each record's
// candidate (a diff) touches, as they were at its base commit.
type Adder struct {
	Src Source
	// Resolve names a revision by its commit hash (nil: revisions are
	// used as given).
	Resolve func(ctx context.Context, rev string) (string, error)
	// Base is the revision of records whose meta names none.
	Base     string
	MaxChars int

	resolved map[string]string
	// Added counts records given files; Without records whose diff
	// touches no file that existed before it; Missing files a diff names
	// that the base commit does not hold.
	Added, Without, Missing int
}

// Add gives r its context.files, unless it has them already. An error names
// the record and the commit.
func (a *Adder) Add(ctx context.Context, r *record.Record) error {
	if _, has := r.Context[ContextKey]; has {
		return nil
	}
	rev := BaseOf(r)
	if rev == "" {
		rev = a.Base
	}
	if rev == "" {
		rev = "HEAD"
	}
	if a.Resolve != nil {
		if a.resolved == nil {
			a.resolved = map[string]string{}
		}
		sha, ok := a.resolved[rev]
		if !ok {
			var err error
			if sha, err = a.Resolve(ctx, rev); err != nil {
				return fmt.Errorf("context.files of record %q: %w", r.ID, err)
			}
			a.resolved[rev] = sha
		}
		rev = sha
	}
	files, missing, err := Gather(ctx, a.Src, rev, r.Candidate)
	if err != nil {
		return fmt.Errorf("context.files of record %q: %w", r.ID, err)
	}
	a.Missing += len(missing)
	if len(files) == 0 {
		a.Without++
		return nil
	}
	if r.Context == nil {
		r.Context = map[string]string{}
	}
	r.Context[ContextKey] = Render(files, rev, a.MaxChars)
	a.Added++
	return nil
}

// BaseOf is the base commit a record's meta names, or "".
func BaseOf(r *record.Record) string {
	if len(r.Meta) == 0 {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(r.Meta, &m) != nil {
		return ""
	}
	for _, k := range BaseKeys {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}
