// Package repoctx gives a judge the code a change changes: for every file a
// unified diff touches, the file's content before the change (at the
// change's base commit, from a local git clone or a code host's API), cut
// at line ends around the hunks to a character budget. A judge that sees
// only the diff cannot see a caller the change breaks or a contract it
// ignores; the teacher's abstentions on such failures are the sign
// (AutoRefine: no prompt fixes a missing input).
package repoctx

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ContextKey is the record context entry the files go in (a judge shows it
// with the input context.files).
const ContextKey = "files"

// DefaultMaxChars is the budget of the files' text when none is given.
const DefaultMaxChars = 40_000

// Touched is a file a diff changes, with the line ranges of the old file
// its hunks cover.
type Touched struct {
	Path  string
	Hunks []Range
}

// Range is lines From..To of a file (1-based, inclusive).
type Range struct{ From, To int }

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@`)

// Files lists the files a unified diff (git's or diff -u's) changes that
// existed before it, in the order the diff gives them: a file the diff
// creates has no content before the change.
func Files(diff string) []Touched {
	var out []Touched
	var cur *Touched
	lines := strings.Split(diff, "\n")
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			cur = nil
			old := diffPath(strings.TrimPrefix(line, "--- "))
			if old == "" {
				continue // a new file
			}
			out = append(out, Touched{Path: old})
			cur = &out[len(out)-1]
		case strings.HasPrefix(line, "@@ ") && cur != nil:
			m := hunkHeader.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			from, _ := strconv.Atoi(m[1])
			n := 1
			if m[2] != "" {
				n, _ = strconv.Atoi(m[2])
			}
			if n == 0 { // a pure insertion after line from
				cur.Hunks = append(cur.Hunks, Range{max(from, 1), max(from, 1)})
				continue
			}
			cur.Hunks = append(cur.Hunks, Range{from, from + n - 1})
		}
	}
	return dedupe(out)
}

// diffPath is the path of a ---/+++ line: without git's a/ or b/ prefix
// and the timestamp diff -u adds; "" for /dev/null.
func diffPath(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if s == "/dev/null" {
		return ""
	}
	if strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/") {
		s = s[2:]
	}
	return s
}

// dedupe merges the entries of a path a diff names twice.
func dedupe(ts []Touched) []Touched {
	var out []Touched
	at := map[string]int{}
	for _, t := range ts {
		if i, ok := at[t.Path]; ok {
			out[i].Hunks = append(out[i].Hunks, t.Hunks...)
			continue
		}
		at[t.Path] = len(out)
		out = append(out, t)
	}
	return out
}

// Source reads a file's content at a revision.
type Source interface {
	// Read returns path's content at rev; found is false when the file is
	// not there at rev.
	Read(ctx context.Context, rev, path string) (content string, found bool, err error)
}

// File is a touched file with its content before the change.
type File struct {
	Touched
	Content string
}

// Gather reads the content before the change of every file diff touches,
// at rev. Files missing at rev are left out and named in missing.
func Gather(ctx context.Context, src Source, rev, diff string) (files []File, missing []string, err error) {
	for _, t := range Files(diff) {
		content, found, err := src.Read(ctx, rev, t.Path)
		if err != nil {
			return nil, nil, err
		}
		if !found {
			missing = append(missing, t.Path)
			continue
		}
		files = append(files, File{Touched: t, Content: content})
	}
	return files, missing, nil
}

// Render writes the files as one text for context.files, within maxChars:
// each file under a header naming it and the revision; whole when all
// fit, else the same number of lines around every hunk (as many as the
// budget allows, cut at line ends), with the lines left out marked.
func Render(files []File, rev string, maxChars int) string {
	if maxChars <= 0 {
		maxChars = DefaultMaxChars
	}
	split := make([][]string, len(files))
	longest := 0
	for i, f := range files {
		lines := strings.SplitAfter(strings.TrimSuffix(f.Content, "\n")+"\n", "\n")
		split[i] = lines[:len(lines)-1] // the empty string after the last line end
		longest = max(longest, len(split[i]))
	}
	// The widest radius around the hunks that fits: a whole file is a
	// radius of its length.
	render := func(radius int) string { return renderRadius(files, split, rev, radius) }
	if out := render(longest); len(out) <= maxChars {
		return out
	}
	lo, hi := 0, longest
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(render(mid)) <= maxChars {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	out := render(lo)
	if len(out) <= maxChars {
		return out
	}
	// Even the hunks alone are over the budget: cut at the last line end
	// that fits.
	const more = "[... the rest is cut: over the context budget ...]\n"
	cut := strings.LastIndexByte(out[:max(0, maxChars-len(more))], '\n')
	return out[:cut+1] + more
}

func renderRadius(files []File, split [][]string, rev string, radius int) string {
	var b strings.Builder
	short := rev
	if len(short) > 12 {
		short = short[:12]
	}
	for i, f := range files {
		lines := split[i]
		keep := windows(f.Hunks, radius, len(lines))
		if i > 0 {
			b.WriteString("\n")
		}
		if len(keep) == 1 && keep[0] == (Range{1, len(lines)}) {
			fmt.Fprintf(&b, "=== %s (before the change, at %s; %d lines) ===\n", f.Path, short, len(lines))
		} else {
			fmt.Fprintf(&b, "=== %s (before the change, at %s; %d lines, those around the change shown) ===\n", f.Path, short, len(lines))
		}
		next := 1
		for _, r := range keep {
			if r.From > next {
				fmt.Fprintf(&b, "[... lines %d-%d not shown ...]\n", next, r.From-1)
			}
			for _, l := range lines[r.From-1 : r.To] {
				b.WriteString(l)
			}
			next = r.To + 1
		}
		if next <= len(lines) {
			fmt.Fprintf(&b, "[... lines %d-%d not shown ...]\n", next, len(lines))
		}
	}
	return b.String()
}

// windows are the hunks widened by radius lines, merged, within 1..n.
func windows(hunks []Range, radius, n int) []Range {
	if len(hunks) == 0 {
		// A diff with no hunk (a rename, a mode change): the file's head.
		hunks = []Range{{1, 1}}
	}
	rs := make([]Range, 0, len(hunks))
	for _, h := range hunks {
		from := min(max(1, h.From-radius), n)
		rs = append(rs, Range{from, max(from, min(n, h.To+radius))})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].From < rs[j].From })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.From <= last.To+1 {
			last.To = max(last.To, r.To)
			continue
		}
		out = append(out, r)
	}
	return out
}
