package roles

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gavelhq/gavel/llm"
)

var (
	reProposerLabel = regexp.MustCompile(`The recorded label: (pass|fail)\.`)
	reVerdict       = regexp.MustCompile(`The judge's verdict: (pass|fail)\.`)
	reQuoted        = regexp.MustCompile("`([^`]+)`")
)

// idea is a general lesson the proposer knows how to recognise in what it
// reads and how to state as a rule, in its own words. Some statements are
// vaguer than others: the proposer does not always find the sharpest
// wording.
type idea struct {
	id string
	// read: the text is about this idea when it has a term from every
	// group (lower case).
	read [][]string
	// code, when set, recognises the idea in quoted code.
	code *regexp.Regexp
	// fail states it as a reason to fail, pass as a reason not to.
	fail, pass []string
}

var ideas = []*idea{
	{id: "unhandled_error",
		read: [][]string{{"error", "failure", "fails", "failing"}, {"unnoticed", "never handled", "dropped", "discarded", "throws", "thrown away", "blank identifier", "deleted", "deletes", "removes", "is gone", "not handled", "ignored", "never checked", "carries on"}},
		code: regexp.MustCompile(`^if\s+err\s*!=\s*nil|^_\s*=`),
		fail: []string{
			"Fail a change that stops handling an error a call returns, whether it deletes the `if err != nil` check or assigns the error to `_`.",
			"Reject code in which an error returned by a call is no longer checked, or is thrown away, instead of being returned to the caller.",
			"Every returned error must still be handled: a change that silently drops one is wrong.",
			"Fail a change whose error handling is sloppy.",
		},
		pass: []string{"Not checking an error that cannot happen is not a reason to fail."}},
	{id: "loop_bound",
		read: [][]string{{"loop", "index", "bound", "iteration", "slice", "element"}, {"too far", "past the end", "out of range", "beyond the last", "one iteration beyond", "strictly less", "off by one", "off-by-one"}},
		code: regexp.MustCompile(`<=\s*len\(`),
		fail: []string{
			"Fail a change whose loop bound lets an index run past the end of a slice (for example `i <= len(s)`).",
			"Reject off-by-one loop conditions that read one element beyond the last.",
			"A loop must stop before the length of what it indexes; fail changes where it does not.",
			"Fail a change with suspicious loop logic.",
		},
		pass: []string{"A loop condition written with `<=` is not by itself a reason to fail."}},
	{id: "test_removed",
		read: [][]string{{"test"}, {"delet", "removes the test", "takes away", "no longer checked", "instead of fixing"}},
		fail: []string{
			"Fail a change that deletes or disables an existing test instead of fixing the code it covers.",
			"Removing tests that already existed is grounds for rejection.",
			"A change must not drop existing tests; fail it if it does.",
			"Fail a change that weakens the test suite.",
		},
		pass: []string{"Removing an obsolete test is not a reason to fail."}},
	{id: "api_renamed",
		read: [][]string{{"public", "exported", "callers", "other packages", "old name"}, {"renam", "replaces", "stops compiling", "break"}},
		fail: []string{
			"Fail a change that renames or removes an exported function other packages use, since their builds break.",
			"Reject changes to a public API's names that leave existing callers behind.",
			"Changing the name of an exported identifier breaks callers outside the package: fail such a change.",
			"Fail a change that breaks compatibility.",
		},
		pass: []string{"Renaming a function is not a reason to fail when nothing else calls it."}},
	{id: "nil_map",
		read: [][]string{{"map"}, {"never makes", "nil", "never allocated", "panic", "crash"}},
		code: regexp.MustCompile(`var\s+\w+\s+map\[`),
		fail: []string{
			"Fail a change that writes into a map declared with `var` but never created with `make`.",
			"Reject code that assigns to keys of a nil map; it panics at run time.",
			"A map must be allocated before it is written to; fail changes where it is not.",
			"Fail a change that can panic.",
		},
		pass: []string{"Declaring a map with `var` is not by itself a reason to fail."}},
	{id: "literal_return",
		read: [][]string{{"value", "result", "answer", "literal"}, {"fixed", "hard-coded", "hardcoded", "literal", "instead of computing", "instead of working out", "by accident"}},
		code: regexp.MustCompile(`^return\s+(-?\d+|"[^"]*"|true|false)\s*,`),
		fail: []string{
			"Fail a change that returns a literal constant where the result should be computed from the inputs.",
			"Reject stubbed functions that return a fixed value instead of doing the work.",
			"Hard-coding a function's answer is never acceptable; fail such changes.",
			"Fail a change that takes shortcuts.",
		},
		pass: []string{"Returning a constant is not a reason to fail when the constant is always right."}},
	{id: "fresh_context",
		read: [][]string{{"context", "ctx"}, {"fresh", "background", "cancel", "deadline", "timeout", "swap"}},
		code: regexp.MustCompile(`context\.(Background|TODO)\(\)`),
		fail: []string{
			"Fail a change that passes `context.Background()` where the caller's ctx should flow through, losing cancellation.",
			"Reject code that replaces an incoming context with a new one, so deadlines and cancellation stop propagating.",
			"The request's context must reach every call it governs; fail a change that drops it.",
			"Fail a change that mishandles contexts.",
		},
		pass: []string{"Starting background work with its own context is not a reason to fail."}},
	{id: "lock_removed",
		read: [][]string{{"mutex", "lock", "synchronis", "race", "goroutines", "unprotected"}, {"remov", "without", "dropping", "data race", "unprotected", "at once"}},
		code: regexp.MustCompile(`\.R?Lock\(\)`),
		fail: []string{
			"Fail a change that removes the mutex locking around shared data, introducing a data race.",
			"Reject code that touches state shared between goroutines without holding its lock.",
			"Concurrent access to shared maps or counters must stay synchronised; fail changes that drop the lock.",
			"Fail a change with concurrency problems.",
		},
		pass: []string{"Removing a lock is not a reason to fail when the data is not shared."}},
	{id: "formatting",
		read: [][]string{{"formatting", "re-align", "re-indent", "moved or", "moves and", "moved and", "churn"}},
		fail: []string{"Fail a change that mixes large formatting churn into a fix."},
		pass: []string{
			"A large diff that only moves, re-indents or re-aligns code is not a reason to fail.",
			"Formatting and reordering changes are harmless; judge only what changes behaviour.",
			"Do not fail a change because whitespace, alignment or the order of declarations changed.",
		}},
	{id: "logging",
		read: [][]string{{"log message", "log line", "log calls", "log output"}},
		fail: []string{"Fail a change that adds noisy log output."},
		pass: []string{
			"Added log statements are not a reason to fail a change.",
			"Extra logging does not change behaviour and should not fail a change.",
			"A change that writes more diagnostic log output is acceptable.",
		}},
	{id: "dependency",
		read: [][]string{{"go.mod", "requirement", "module"}, {"upgrade", "version", "moves", "bump"}},
		fail: []string{"Fail a change that upgrades a dependency nobody asked to upgrade."},
		pass: []string{
			"A routine minor or patch version update in go.mod is not a reason to fail.",
			"Updating a dependency's version is acceptable on its own.",
			"Do not fail a change only because it bumps a module version.",
		}},
	{id: "comments",
		read: [][]string{{"comment", "document", "explain the code"}},
		fail: []string{"Fail a change whose comments do not match the code."},
		pass: []string{
			"New or rewritten comments are not a reason to fail.",
			"Documentation-only additions are harmless.",
			"Do not fail a change because it adds doc comments.",
		}},
	{id: "todo",
		read: [][]string{{"todo", "fixme", "future work", "reminder", "unfinished", "undone"}},
		fail: []string{"Fail a change that leaves a TODO or FIXME in the code."},
		pass: []string{
			"A TODO or FIXME note about possible future work is not a reason to fail a change that does its task.",
			"Leftover reminder notes for later work are harmless.",
			"Do not fail a change for leaving a note about follow-up work.",
		}},
	{id: "tests_added",
		read: [][]string{{"test", "coverage"}, {"added", "new test", "extra", "more tests", "adds a test"}},
		fail: []string{"Fail a change whose new tests do not pass."},
		pass: []string{
			"Adding tests is never a reason to fail a change.",
			"New tests are welcome and do not count against a change.",
			"Extra test coverage is not a reason to reject a change.",
		}},
}

// about lists the ideas a text is about, in the order of the ideas table,
// from its words and from the code it quotes.
func about(text string) []*idea {
	lower := strings.ToLower(text)
	var quotes []string
	for _, m := range reQuoted.FindAllStringSubmatch(text, -1) {
		quotes = append(quotes, strings.TrimSpace(m[1]))
	}
	var out []*idea
	for _, id := range ideas {
		words := true
		for _, group := range id.read {
			words = words && ContainsAny(lower, group)
		}
		code := false
		for _, q := range quotes {
			code = code || (id.code != nil && id.code.MatchString(q))
		}
		if words || code {
			out = append(out, id)
		}
	}
	return out
}

// propose turns one disagreement into at most two general rules.
func propose(cfg Config, g *Gen, p Prompt, req *llm.Request) map[string]any {
	user := LastUser(req)
	label, verdict := "", ""
	if m := reProposerLabel.FindStringSubmatch(user); m != nil {
		label = m[1]
	}
	if m := reVerdict.FindStringSubmatch(user); m != nil {
		verdict = m[1]
	}
	proposals := []map[string]string{}
	add := func(kind, text string) {
		proposals = append(proposals, map[string]string{"kind": kind, "text": text, "target": ""})
	}
	if cfg.RandomRules {
		for range 1 + g.Next()%2 {
			r := reviewAdvice[g.Next()%uint64(len(reviewAdvice))]
			add(r.kind, r.text)
		}
		return map[string]any{"analysis": Label + " General review advice, not drawn from this change.", "proposals": proposals}
	}
	teacher := p.Data["teacher"]
	var chosen []*idea
	kind := ""
	switch {
	case label == "fail" && verdict != "fail":
		kind = "fail_reason"
		chosen = about(teacher)
	case label == "pass" && verdict != "pass":
		kind = "pass_reason"
		// What the teacher calls harmless, preferring what the judge held
		// against the change.
		held := map[string]bool{}
		for _, id := range about(p.Data["judge_reasoning"]) {
			held[id.id] = true
		}
		cleared := about(teacher)
		for _, id := range cleared {
			if held[id.id] {
				chosen = append(chosen, id)
			}
		}
		if len(chosen) == 0 {
			chosen = cleared
		}
	}
	if len(chosen) > 2 {
		chosen = chosen[:2]
	}
	for _, id := range chosen {
		if kind == "fail_reason" {
			add(kind, g.Pick(id.fail))
		} else {
			add(kind, g.Pick(id.pass))
		}
	}
	analysis := fmt.Sprintf("%s The judge said %s where the outcome was %s.", Label, verdict, label)
	if len(chosen) == 0 {
		analysis += " The explanation gives nothing general to learn from."
	}
	return map[string]any{"analysis": analysis, "proposals": proposals}
}

// reviewAdvice is plausible, general code-review advice, used by the
// random-rules proposer (a control that ignores the evidence).
var reviewAdvice = []struct{ kind, text string }{
	{"fail_reason", "Fail a change that adds a function longer than about fifty lines."},
	{"fail_reason", "Fail a change that introduces a package-level variable."},
	{"fail_reason", "Fail a change that uses panic for ordinary error cases."},
	{"fail_reason", "Fail a change that leaves commented-out code behind."},
	{"fail_reason", "Fail a change that adds a magic number without a named constant."},
	{"fail_reason", "Fail a change that adds an exported function without a doc comment."},
	{"fail_reason", "Fail a change that adds a new dependency without explaining why."},
	{"fail_reason", "Fail a change that leaves a TODO or FIXME note in the code."},
	{"fail_reason", "Fail a change that mixes refactoring with a behaviour change."},
	{"fail_reason", "Fail a change that logs sensitive data."},
	{"fail_reason", "Fail a change that makes a function take more than five parameters."},
	{"fail_reason", "Fail a change that ignores an error a call returns."},
	{"fail_reason", "Fail a change that reduces test coverage."},
	{"fail_reason", "Fail a change that duplicates code that already exists elsewhere."},
	{"fail_reason", "Fail a change with deeply nested conditionals."},
	{"pass_reason", "Renaming a local variable is not a reason to fail."},
	{"pass_reason", "A longer diff is not by itself a reason to fail."},
	{"pass_reason", "Extra log lines are not a reason to fail."},
	{"pass_reason", "Comment-only changes are not a reason to fail."},
	{"pass_reason", "Updating a dependency's patch version is not a reason to fail."},
	{"pass_reason", "Reordering imports is not a reason to fail."},
	{"pass_reason", "A change that adds tests is not a reason to fail."},
	{"pass_reason", "Using a different but equivalent algorithm from the reference is not a reason to fail."},
	{"pass_reason", "Early returns instead of nested ifs are not a reason to fail."},
	{"pass_reason", "Style differences from the reference are not a reason to fail."},
	{"pass_reason", "Short variable names in small scopes are not a reason to fail."},
	{"pass_reason", "A missing doc comment on an unexported function is not a reason to fail."},
}
