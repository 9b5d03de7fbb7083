package record

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Store keeps records and splits. Package store/sqldb implements it, on SQLite
// and on PostgreSQL.
type Store interface {
	// Import runs fn inside one transaction: if fn returns an error, nothing
	// it wrote is kept.
	Import(ctx context.Context, fn func(Writer) error) error
	// Records calls fn for each record matching the filter, in import order.
	Records(ctx context.Context, f Filter, fn func(*Record) error) error
	// SaveSplit stores a split. An existing split of the same name is an
	// error unless replace is set.
	SaveSplit(ctx context.Context, s *Split, replace bool) error
	// Split returns a stored split, or an error wrapping ErrNotFound.
	Split(ctx context.Context, name string) (*Split, error)
	// Splits lists the stored splits' specs by name.
	Splits(ctx context.Context) ([]SplitSpec, error)
}

// Filter selects records. The zero value selects all.
type Filter struct {
	// Split and Part restrict to one part of a stored split; Part empty
	// means every part of the split.
	Split string
	Part  Part
	// Labels and Statuses, when not empty, keep only records with one of
	// them; ExcludeStatus leaves records with one of those statuses out
	// (e.g. drafts, which are not a reviewer's rejection).
	Labels        []Label
	Statuses      []Status
	ExcludeStatus []Status
	// Group keeps only one group's records.
	Group string
	// IDs, when not empty, keeps only the records with these ids.
	IDs []string
	// Limit stops after this many records (0: no limit).
	Limit int
}

// MemberLister is a Store that lists the members of the records a filter
// keeps (id, group, latest label) without reading the records, so that a
// sample reads only the records it keeps.
type MemberLister interface {
	Members(ctx context.Context, f Filter) ([]Member, error)
}

// Match reports whether a record passes the filter's label, status and group
// conditions (not the split, which only a store can answer).
func (f *Filter) Match(r *Record) bool {
	if len(f.Labels) > 0 && !slices.Contains(f.Labels, r.Outcome.Label) {
		return false
	}
	if len(f.Statuses) > 0 && !slices.Contains(f.Statuses, r.Outcome.Status) {
		return false
	}
	if slices.Contains(f.ExcludeStatus, r.Outcome.Status) {
		return false
	}
	if len(f.IDs) > 0 && !slices.Contains(f.IDs, r.ID) {
		return false
	}
	return f.Group == "" || f.Group == r.Group
}

// ParseSplitRef reads "NAME:PART" (or "NAME" for the whole split).
func ParseSplitRef(s string) (name string, part Part, err error) {
	name, p, hasPart := strings.Cut(s, ":")
	if err := ValidateName(name); err != nil {
		return "", "", err
	}
	if !hasPart {
		return name, "", nil
	}
	part, err = ParsePart(p)
	if err != nil {
		return "", "", fmt.Errorf("split %q: %w", s, err)
	}
	return name, part, nil
}

// ParseStatuses reads a comma-separated list of statuses.
func ParseStatuses(list []string) ([]Status, error) {
	var out []Status
	for _, item := range list {
		for _, s := range strings.Split(item, ",") {
			if strings.TrimSpace(s) == "" {
				continue
			}
			st, err := ParseStatus(s)
			if err != nil {
				return nil, err
			}
			out = append(out, st)
		}
	}
	return out, nil
}
