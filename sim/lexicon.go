package sim

import (
	"regexp"
	"strings"
)

// This file is the simulated judge's reading of its prompt: a lexicon it
// owns (no role shares it) that maps what a sentence talks about to the
// signals it perceives in a patch, and the cues that say whether a
// sentence makes something a reason to fail, a harmless trait, or no
// reason to pass. A rule moves the judge when its meaning, by this
// lexicon or by the code it quotes, applies to what the judge sees in the
// candidate; vaguer rules are followed less often.

// sense is how the judge recognises talk about one signal.
type sense struct {
	sig *Signal
	// strong terms name the signal on their own.
	strong []string
	// groups: a sentence is about the signal when it has a term from
	// every group (the first group is the topic).
	groups [][]string
	// unless terms make a sentence about something else.
	unless []string
	// vague: a sentence with only the topic still points at the signal,
	// vaguely.
	vague bool
	// says is how the judge words the signal in its reasoning.
	says string
}

var lexicon = []*sense{
	{sig: DroppedErrorCheck, vague: true,
		groups: [][]string{{"error", " err ", "err !=", "err!="}, {"delet", "remov", "drop", "no longer", "stops", "stop ", "unchecked", "not checked", "without checking", "missing", "omit", "skip", "lose", "loses"}},
		says:   "an error that used to be checked is no longer checked"},
	{sig: SwallowedError, vague: true,
		groups: [][]string{{"error", " err "}, {"discard", "swallow", "ignor", "blank identifier", "`_`", "to _", "throw away", "throws away", "thrown away", "silenc", "silently", "unhandled", "not handled", "never handled", "no longer handled", "stops handling", "stop handling"}},
		says:   "an error is assigned to _ and never acted on"},
	{sig: OffByOne, vague: true,
		strong: []string{"off-by-one", "off by one", "past the end", "beyond the end", "beyond the last", "out of range", "out of bounds"},
		groups: [][]string{{"loop", "index", "bound", "slice", "length", "len("}, {"<=", "one too many", "one element too", "one step too", "one iteration too", "overrun", "too far", "stop before"}},
		says:   "a loop runs one step past the end of its slice"},
	{sig: DeletedTest,
		groups: [][]string{{"test"}, {"delet", "remov", "drop", "disabl", "weaken", "fewer", "reduce", "lose", "skip"}},
		says:   "an existing test is deleted"},
	{sig: RenamedExportedAPI,
		groups: [][]string{{"export", "public", "api", "callers", "other packages"}, {"renam", "remov", "break", "no longer exist", "leave"}},
		unless: []string{"doc comment"},
		says:   "an exported function is renamed, which breaks its callers"},
	{sig: NilMapWrite,
		groups: [][]string{{"map"}, {"nil", "never made", "not made", "make(", "`make`", "allocat", "initiali"}},
		says:   "the code writes into a map that was never made"},
	{sig: HardcodedResult,
		strong: []string{"hard-coded", "hardcoded", "hard coded", "hard-coding", "hardcoding"},
		groups: [][]string{{"value", "result", "answer", "constant", "literal"}, {"fixed", "instead of comput", "stub", "placeholder", "fake", "canned", "instead of doing"}},
		says:   "a function returns a constant instead of computing its result"},
	{sig: IgnoredContext, vague: true,
		groups: [][]string{{"context", "ctx"}, {"background", "todo()", "replac", "fresh", "new one", "drop", "ignor", "lose", "losing", "discard", "cancel", "deadline"}},
		says:   "the caller's context is replaced by context.Background()"},
	{sig: UnlockedAccess, vague: true,
		strong: []string{"data race", "race condition"},
		groups: [][]string{{"lock", "mutex", "synchroni", "concurren", "goroutine", "shared"}, {"remov", "without", "drop", "delet", "unprotect", "unguard", "unsynchroni", "no longer"}},
		says:   "shared state is no longer guarded by its mutex"},
	{sig: CosmeticReformat,
		groups: [][]string{{"format", "whitespace", "white space", "reorder", "re-order", "align", "indent", "layout", "cosmetic", "large diff", "big diff", "longer diff", "diff size", "size", "churn", "order of declarations"}},
		says:   "the diff is large, mostly reformatting and reordering"},
	{sig: AddedLogging,
		groups: [][]string{{"logging", "log statement", "log line", "log call", "log output", "log message", "logs ", "log.", "slog", " log "}},
		says:   "it adds log output"},
	{sig: DependencyBump,
		groups: [][]string{{"dependenc", "go.mod", "module version", "third-party", "library version", "requirement"}, {"updat", "upgrad", "bump", "version", "newer", "new dependency", "adds a"}},
		says:   "it changes a dependency's version in go.mod"},
	{sig: AddedComments,
		groups: [][]string{{"comment", "documentation", "docs", "godoc"}},
		unless: []string{"todo", "fixme", "commented-out", "reminder", "note", "without a doc", "missing"},
		says:   "it adds comments"},
	{sig: TodoLeft,
		groups: [][]string{{"todo", "fixme", "to-do", "follow-up", "follow up", "future work", "later work", "reminder"}},
		says:   "it leaves a TODO note"},
	{sig: NewTest,
		groups: [][]string{{"test"}, {"add", "new", "extra", "more", "additional", "welcome", "coverage"}},
		unless: []string{"delet", "remov", "disabl", "drop", "fewer", "reduce", "weaken"},
		says:   "it adds a test"},
}

func senseOf(s *Signal) *sense {
	for _, x := range lexicon {
		if x.sig == s {
			return x
		}
	}
	return nil
}

// Stance is what a sentence of a prompt makes of a signal.
type Stance int

// The stances.
const (
	Unnamed    Stance = iota
	FailReason        // a reason to fail
	Harmless          // not a reason to fail
	NoCredit          // not a reason to pass
)

var (
	noCreditCues = []string{"not a reason to pass", "not reasons to pass", "no reason to pass", "not enough to pass"}
	failNegCues  = []string{"never acceptable", "not acceptable", "unacceptable", "never fine"}
	harmlessCues = []string{"not a reason to fail", "not reasons to fail", "no reason to fail", "not a reason to reject",
		"not by itself a reason", "not on its own a reason", "not a reason to answer no", "never a reason to fail",
		"harmless", "benign", "acceptable", "is fine", "are fine", "does not matter", "doesn't matter",
		"should not fail", "should not be failed", "do not fail", "don't fail", "not count against",
		"welcome", "decide no check", "decides no check", "safe to ignore", "can be ignored", "not a problem", "not a defect"}
	failCues = []string{"fail", "answer no", "reject", "wrong", "bug", "incorrect", "break", "broken", "defect",
		"must not", "dangerous", "unsafe", "grounds for"}
)

// outcomeCues say that a prompt asks for a change's outcome (will its
// tests pass, will it be accepted) rather than for a review of it.
var outcomeCues = []string{"predict that outcome", "predict the outcome", "predict what will happen", "predict what happened",
	"will its tests pass", "whether its tests will pass", "will pass its tests", "its tests will pass"}

// outcomeFramed reports whether a prompt's instructions (lower case) ask
// for the outcome.
func outcomeFramed(instructions string) bool { return containsAny(instructions, outcomeCues) }

// stanceOf reads a sentence's stance.
func stanceOf(sentence string) Stance {
	switch {
	case containsAny(sentence, noCreditCues):
		return NoCredit
	case containsAny(sentence, failNegCues):
		return FailReason
	case containsAny(sentence, harmlessCues):
		return Harmless
	case containsAny(sentence, failCues):
		return FailReason
	}
	return Unnamed
}

// Match strengths: how reliably the judge follows a rule, by how sharply
// it names what the judge sees.
const (
	QuotedCode  = 0.95 // the rule quotes code the judge finds in the signal's lines
	Named       = 0.9  // the rule names the signal in words the judge understands
	VaguelyNear = 0.45 // the rule only gestures at the signal's topic
)

// strength is how sharply a sentence names a signal by its words: 0 when
// it does not.
func (x *sense) strength(sentence string, st Stance) float64 {
	if containsAny(sentence, x.unless) {
		return 0
	}
	if containsAny(sentence, x.strong) {
		return Named
	}
	all := true
	for _, g := range x.groups {
		all = all && containsAny(sentence, g)
	}
	switch {
	case all:
		return Named
	case (x.vague || st == NoCredit) && containsAny(sentence, x.groups[0]):
		return VaguelyNear
	}
	return 0
}

// rule is one sentence of a prompt with a stance, and the rubric check it
// sits in (-1: the system prompt's prose).
type rule struct {
	text   string
	stance Stance
	check  int
	quotes []string // code it quotes, lower case, white space removed
}

var (
	reCheckLine = regexp.MustCompile(`^(\d+)\.\s+[a-z_]+:`)
	reBullet    = regexp.MustCompile(`^([-*]|\d+\.)\s`)
	reQuote     = regexp.MustCompile("`([^`]+)`")
	reSymbol    = regexp.MustCompile(`[^a-z0-9\s]`)
)

// rules reads a prompt's instructions (lower case, fences removed) into
// its sentences that carry a stance. Wrapped lines join their paragraph or
// list item; a numbered check line keeps its check.
func rules(instructions string) []rule {
	type unit struct {
		text  string
		check int
	}
	var units []unit
	open := false
	for _, line := range strings.Split(instructions, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "":
			open = false
		case reBullet.MatchString(t) || !open:
			u := unit{text: t, check: -1}
			if m := reCheckLine.FindStringSubmatch(t); m != nil {
				n := 0
				for _, c := range m[1] {
					n = n*10 + int(c-'0')
				}
				u.check = n - 1
			}
			units = append(units, u)
			open = true
		default:
			units[len(units)-1].text += " " + t
		}
	}
	var out []rule
	for _, u := range units {
		for _, s := range clauses(splitSentences(u.text)) {
			st := stanceOf(s)
			if st == Unnamed {
				continue
			}
			r := rule{text: s, stance: st, check: u.check}
			for _, m := range reQuote.FindAllStringSubmatch(s, -1) {
				q := strings.Join(strings.Fields(m[1]), "")
				if len(q) >= 3 && reSymbol.MatchString(q) {
					r.quotes = append(r.quotes, q)
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// clauses splits a sentence whose parts take different stances ("size
// and formatting alone are not reasons to fail, and tests alone are not
// reasons to pass") into those parts; a sentence with one stance stays
// whole, so a clause without its topic ("...; fail changes where it does
// not") keeps it.
func clauses(sentences []string) []string {
	var out []string
	for _, s := range sentences {
		parts := splitAny(s, []string{", and ", "; ", ", but ", ", while "})
		with := 0
		for _, p := range parts {
			if stanceOf(p) != Unnamed {
				with++
			}
		}
		if with > 1 {
			out = append(out, parts...)
		} else {
			out = append(out, s)
		}
	}
	return out
}

func splitAny(s string, seps []string) []string {
	parts := []string{s}
	for _, sep := range seps {
		var next []string
		for _, p := range parts {
			next = append(next, strings.Split(p, sep)...)
		}
		parts = next
	}
	return parts
}

// splitSentences splits at sentence ends (". ", "? ", "! ") outside
// backquotes.
func splitSentences(text string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '`':
			quoted = !quoted
		case !quoted && (c == '.' || c == '?' || c == '!') && (i+1 == len(text) || text[i+1] == ' '):
			if s := strings.TrimSpace(text[start : i+1]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}
