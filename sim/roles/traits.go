package roles

import (
	"regexp"
	"strings"
)

// This file is the teacher's perception: what a reader notices in a
// unified diff, hunk by hunk, and what it believes about each thing it
// notices. It is the teacher's own reading, written apart from the world's
// detectors, and its beliefs are its own, not the world's.

// fileChange is one file's part of a diff.
type fileChange struct {
	path           string
	added, removed []string
}

// parseDiff splits a unified diff into its files' added and removed lines.
func parseDiff(patch string) []fileChange {
	var out []fileChange
	var cur *fileChange
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			f := strings.Fields(l)
			path := f[len(f)-1]
			out = append(out, fileChange{path: strings.TrimPrefix(path, "b/")})
			cur = &out[len(out)-1]
		case strings.HasPrefix(l, "+++ ") || strings.HasPrefix(l, "--- "):
			if cur == nil {
				out = append(out, fileChange{path: strings.TrimPrefix(strings.TrimPrefix(l[4:], "b/"), "a/")})
				cur = &out[len(out)-1]
			}
		case cur == nil || l == "":
		case l[0] == '+':
			cur.added = append(cur.added, l[1:])
		case l[0] == '-':
			cur.removed = append(cur.removed, l[1:])
		}
	}
	return out
}

// trait is something a reader notices in a change.
type trait struct {
	id string
	// suspicion is the teacher's belief: how likely it holds the trait to
	// make a change fail, in any codebase. Its own, fixed, and right about
	// any one world only in part (each world draws its own truth).
	suspicion float64
	// obvious is how likely a plain read (no reference to compare with)
	// notices it; against a reference, a hunk the reference does not touch
	// is read closely and nothing in it is missed.
	obvious float64
	// find returns the lines that show the trait in one file (empty: not
	// there); the teacher quotes the first.
	find func(f fileChange) []string
	// blame words the trait as the cause of a failure; clear as harmless.
	// %s is the quoted line.
	blame, clear []string
}

var (
	tErrCheck  = regexp.MustCompile(`^\s*if\s+err\s*!=\s*nil`)
	tBlank     = regexp.MustCompile(`^\s*_\s*=\s*\S`)
	tLeLen     = regexp.MustCompile(`<=\s*len\(`)
	tTestFunc  = regexp.MustCompile(`^func\s+Test\w*\(`)
	tExported  = regexp.MustCompile(`^func\s+(?:\([^)]*\)\s*)?([A-Z]\w*)\s*\(`)
	tVarMap    = regexp.MustCompile(`^\s*var\s+\w+\s+map\[`)
	tMakeMap   = regexp.MustCompile(`make\(map\[|map\[[^\]]*\][\w.*\[\]]*\{`)
	tLitReturn = regexp.MustCompile(`^\s*return\s+(?:-?\d+|"[^"]*"|true|false)\s*,\s*nil\s*$`)
	tFreshCtx  = regexp.MustCompile(`context\.(Background|TODO)\(\)`)
	tLock      = regexp.MustCompile(`\.(R?Lock)\(\)`)
	tLogCall   = regexp.MustCompile(`\b(log|slog|logger|zap)\.\w+\(|fmt\.Print`)
	tVersion   = regexp.MustCompile(`\sv\d+\.\d+\.\d+`)
	tComment   = regexp.MustCompile(`^\s*//`)
	tTodo      = regexp.MustCompile(`(?i)\b(TODO|FIXME|XXX)\b`)
)

func matching(ls []string, re *regexp.Regexp) []string {
	var out []string
	for _, l := range ls {
		if re.MatchString(l) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// traits is everything the teacher knows how to notice, in the order it
// weighs them: the ones it takes most seriously first.
var traits = []*trait{
	{id: "check_removed", suspicion: 0.9, obvious: 0.75,
		find: func(f fileChange) []string { return matching(f.removed, tErrCheck) },
		blame: []string{
			"The change deletes the check `%s`, so when that call fails the function carries on with bad data; that explains the failure.",
			"It removes `%s` and the early return under it: a failing call now goes unnoticed.",
			"The error handling is gone (`%s` was deleted), so errors from that call are silently dropped.",
		},
		clear: []string{"Removing `%s` is safe here."}},
	{id: "blank_assign", suspicion: 0.8, obvious: 0.7,
		find: func(f fileChange) []string { return matching(f.added, tBlank) },
		blame: []string{
			"`%s` throws the error away instead of returning it, so callers are told the operation succeeded when it did not.",
			"The line `%s` assigns the result to the blank identifier: the failure it reports is never handled.",
			"With `%s` the error is silently discarded; the caller cannot know the call failed.",
		},
		clear: []string{"`%s` only discards a value that is not needed."}},
	{id: "loop_bound", suspicion: 0.85, obvious: 0.6,
		find: func(f fileChange) []string { return matching(f.added, tLeLen) },
		blame: []string{
			"The loop condition `%s` runs one step too far and indexes past the end of the slice.",
			"`%s` makes the loop go one iteration beyond the last element: an index out of range.",
			"The bound in `%s` should be strictly less than the length; as written it reads past the end.",
		},
		clear: []string{"The bound in `%s` is right for this loop."}},
	{id: "test_removed", suspicion: 0.75, obvious: 0.85,
		find: func(f fileChange) []string { return matching(f.removed, tTestFunc) },
		blame: []string{
			"The change deletes `%s`, an existing test, so the behaviour it guarded is no longer checked.",
			"It removes the test `%s` instead of fixing what it caught.",
			"Deleting `%s` takes away coverage the project relied on.",
		},
		clear: []string{"Dropping `%s` removes an obsolete test."}},
	{id: "api_renamed", suspicion: 0.8, obvious: 0.6,
		find: func(f fileChange) []string {
			gone := map[string]bool{}
			for _, l := range f.removed {
				if m := tExported.FindStringSubmatch(l); m != nil && !strings.HasPrefix(m[1], "Test") {
					gone[m[1]] = true
				}
			}
			if len(gone) == 0 {
				return nil
			}
			var out []string
			for _, l := range f.added {
				if m := tExported.FindStringSubmatch(l); m != nil && !gone[m[1]] && !strings.HasPrefix(m[1], "Test") {
					out = append(out, strings.TrimSpace(l))
				}
			}
			return out
		},
		blame: []string{
			"The change renames a public function (now `%s`); every caller of the old name stops compiling.",
			"`%s` replaces an exported name that other packages call, so their builds break.",
			"Renaming the exported function to `%s` breaks code outside this package that still uses the old name.",
		},
		clear: []string{"The new name `%s` is only a rename."}},
	{id: "nil_map", suspicion: 0.9, obvious: 0.55,
		find: func(f fileChange) []string {
			for _, l := range f.added {
				if tMakeMap.MatchString(l) {
					return nil
				}
			}
			return matching(f.added, tVarMap)
		},
		blame: []string{
			"`%s` declares a map but never makes it, so the first write into it panics.",
			"The map declared by `%s` is nil; assigning to one of its keys crashes at run time.",
			"With `%s` the map is never allocated before it is written to: a nil-map panic.",
		},
		clear: []string{"`%s` declares a map that is filled before use."}},
	{id: "literal_return", suspicion: 0.85, obvious: 0.7,
		find: func(f fileChange) []string { return matching(f.added, tLitReturn) },
		blame: []string{
			"`%s` returns a fixed value instead of computing the result from the inputs.",
			"The function now ends in `%s`: a hard-coded answer that is only right by accident.",
			"Instead of working out the value, the change returns a literal (`%s`).",
		},
		clear: []string{"`%s` returns a constant that is right in every case."}},
	{id: "fresh_context", suspicion: 0.6, obvious: 0.5,
		find: func(f fileChange) []string { return matching(f.added, tFreshCtx) },
		blame: []string{
			"`%s` swaps the caller's context for a fresh one, so cancellation and deadlines no longer reach the call.",
			"Passing a new background context (`%s`) means the work cannot be cancelled by the caller.",
			"The change uses `%s` where the request's ctx belongs; timeouts stop propagating.",
		},
		clear: []string{"`%s` starts work that should outlive the request."}},
	{id: "lock_removed", suspicion: 0.8, obvious: 0.65,
		find: func(f fileChange) []string { return matching(f.removed, tLock) },
		blame: []string{
			"The change removes `%s`, so concurrent callers now touch the shared data without synchronisation: a data race.",
			"Without `%s` the map is written from several goroutines at once.",
			"Dropping the mutex (`%s`) leaves shared state unprotected.",
		},
		clear: []string{"Removing `%s` is safe because nothing else touches this data."}},
	{id: "realigned", suspicion: 0.15, obvious: 0.85,
		find: func(f fileChange) []string {
			rem := map[string]int{}
			for _, l := range f.removed {
				if k := strings.Join(strings.Fields(l), ""); k != "" {
					rem[k]++
				}
			}
			moved := 0
			var first string
			for _, l := range f.added {
				k := strings.Join(strings.Fields(l), "")
				if rem[k] > 0 {
					rem[k]--
					moved++
					if first == "" {
						first = strings.TrimSpace(l)
					}
				}
			}
			if moved < 5 {
				return nil
			}
			return []string{first}
		},
		blame: []string{
			"The change churns a whole file (re-aligning and moving lines such as `%s`), which hides what it really does.",
			"Most of the diff is moved and re-aligned code (e.g. `%s`): an unreviewable change.",
		},
		clear: []string{
			"The large hunk that moves and re-aligns lines like `%s` is formatting only; behaviour is unchanged.",
			"Lines such as `%s` were only moved or re-indented, which changes nothing at run time.",
		}},
	{id: "log_added", suspicion: 0.05, obvious: 0.8,
		find: func(f fileChange) []string { return matching(f.added, tLogCall) },
		blame: []string{
			"The change adds `%s`, noisy output that leaks internal details.",
			"It adds log calls such as `%s` that do not belong in this path.",
		},
		clear: []string{
			"`%s` only writes a log message; it does not alter what the code does.",
			"The added log line `%s` is diagnostic output, harmless to behaviour.",
		}},
	{id: "version_changed", suspicion: 0.3, obvious: 0.85,
		find: func(f fileChange) []string {
			if !strings.HasSuffix(f.path, "go.mod") {
				return nil
			}
			return matching(f.added, tVersion)
		},
		blame: []string{
			"The change moves a module to `%s`, an upgrade nobody asked for that can break the build.",
			"Bumping the requirement to `%s` drags in untested upstream changes.",
		},
		clear: []string{
			"Moving the requirement to `%s` is a routine minor upgrade.",
			"The go.mod line `%s` is a compatible version update.",
		}},
	{id: "doc_comments", suspicion: 0.02, obvious: 0.8,
		find: func(f fileChange) []string {
			var out []string
			for _, l := range f.added {
				if tComment.MatchString(l) && !tTodo.MatchString(l) {
					out = append(out, strings.TrimSpace(l))
				}
			}
			if len(out) < 2 {
				return nil
			}
			return out
		},
		blame: []string{
			"The comment `%s` describes behaviour the code does not have.",
		},
		clear: []string{
			"The new comment `%s` documents the function and changes no code.",
			"Comments such as `%s` only explain the code.",
		}},
	{id: "todo_note", suspicion: 0.25, obvious: 0.9,
		find: func(f fileChange) []string { return matching(f.added, tTodo) },
		blame: []string{
			"`%s` admits the work is unfinished.",
			"The note `%s` shows the change leaves part of the job undone.",
		},
		clear: []string{
			"`%s` only records possible future work; the task itself is done.",
			"The `%s` note is a reminder, not missing behaviour.",
		}},
	{id: "test_added", suspicion: 0.05, obvious: 0.85,
		find: func(f fileChange) []string { return matching(f.added, tTestFunc) },
		blame: []string{
			"The new test `%s` is wrong and fails.",
			"`%s` adds a test that does not hold.",
		},
		clear: []string{
			"The added `%s` is extra coverage and only helps.",
			"`%s` is a new test; more tests do no harm.",
		}},
}

// noticed is a trait the teacher saw, with the line it would quote and
// how suspicious it holds it this time.
type noticed struct {
	t         *trait
	line      string
	suspicion float64
}

// defect says whether the teacher, this time, takes what it noticed for
// a defect.
func (n noticed) defect() bool { return n.suspicion >= 0.5 }

// perceive reads a candidate diff as the teacher does. Against a
// reference, the files the reference does not touch are read closely;
// otherwise each trait is noticed as often as it is obvious. Each noticed
// trait's belief is misjudged with probability errRate (its suspicion
// turned round: a defect taken for harmless, or the other way).
func perceive(g *Gen, candidate, reference string, errRate float64) []noticed {
	scope := map[string]bool{}
	for _, f := range parseDiff(reference) {
		scope[baseName(f.path)] = true
	}
	var out []noticed
	for _, t := range traits {
		for _, f := range parseDiff(candidate) {
			lines := t.find(f)
			if len(lines) == 0 {
				continue
			}
			close := reference != "" && !scope[baseName(f.path)]
			seen := close || g.Float() < t.obvious
			wrong := g.Float() < errRate
			if seen {
				sus := t.suspicion
				if wrong {
					sus = 1 - sus
				}
				out = append(out, noticed{t: t, line: lines[0], suspicion: sus})
				break
			}
		}
	}
	return out
}

// baseName is a path without its first directory, so a reference's
// service/file.go matches the candidate's file in another service.
func baseName(path string) string {
	if i := strings.Index(path, "/"); i >= 0 {
		return path[i+1:]
	}
	return path
}
