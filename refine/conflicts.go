package refine

import (
	"regexp"
	"strings"

	"github.com/gavelhq/gavel/judge"
)

// A reason's polarity: what it tells the judge to do with what it names.
const (
	toFail = 1
	toPass = -1
)

var (
	rePassRule = regexp.MustCompile(`\b(not|no|never)\b[^.]*\breasons? to fail\b|\bis not a defect\b|\b(should|must) not fail\b|\bis (fine|acceptable|harmless)\b|\bpass (a|any|the) change\b`)
	reFailRule = regexp.MustCompile(`^fail\b|\bfail (a|any|the) change\b|\b(must|should) fail\b|\breasons? to fail\b`)
)

// polarity reads whether a sentence is a reason to fail (toFail), a
// reason not to (toPass), or neither (0).
func polarity(sentence string) int {
	s := flat(sentence)
	switch {
	case rePassRule.MatchString(s):
		return toPass
	case reFailRule.MatchString(s):
		return toFail
	}
	return 0
}

// ruleWords are the words every reason shares, which say nothing of its
// subject.
var ruleWords = map[string]bool{"fail": true, "fails": true, "failing": true, "pass": true, "passes": true, "change": true, "changes": true,
	"reason": true, "reasons": true, "not": true, "that": true, "this": true, "the": true, "and": true, "for": true, "with": true,
	"any": true, "are": true, "its": true, "which": true, "when": true, "does": true, "should": true, "must": true, "alone": true,
	"itself": true, "agent": true, "code": true, "from": true, "into": true, "was": true, "has": true, "have": true, "but": true,
	"never": true, "only": true, "also": true, "all": true, "can": true, "may": true, "defect": true, "harmless": true}

func subject(text string) map[string]bool {
	out := map[string]bool{}
	for w := range terms(text) {
		if !ruleWords[w] {
			out[w] = true
		}
	}
	return out
}

// sameSubject says whether two reasons speak of the same thing: at least
// two subject words in common, half of the shorter's.
func sameSubject(a, b map[string]bool) bool {
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return n >= 2 && 2*n >= min(len(a), len(b))
}

func kindPolarity(kind string) int {
	switch kind {
	case FailReason:
		return toFail
	case PassReason:
		return toPass
	}
	return 0
}

// Opposed finds, for a new reason, a sentence of the prompt or an earlier
// reason that says the opposite of the same subject ("Fail a change that
// leaves a TODO" against "A TODO note is not a reason to fail"), or "".
func Opposed(prompt []string, p Proposal) string {
	pol := kindPolarity(p.Kind)
	if pol == 0 {
		return ""
	}
	sub := subject(p.Text)
	for _, s := range prompt {
		if polarity(s) == -pol && sameSubject(sub, subject(s)) {
			return s
		}
	}
	return ""
}

// DropOpposed leaves out each new reason whose subject a reason of the
// opposite kind already covers: in the prompt, or among the reasons kept
// before it (in order). A reword whose new text contradicts the prompt is
// left to the applier, which reports what it resolved.
func DropOpposed(s *judge.Spec, ps []Proposal) (kept []Proposal, dropped []DroppedEdit) {
	prompt := sentences(PromptText(s))
	var earlier []string // kept reasons, as sentences that carry their polarity
	for _, p := range ps {
		if o := Opposed(prompt, p); o != "" {
			dropped = append(dropped, DroppedEdit{p, "conflict: the prompt already says the opposite: " + o})
			continue
		}
		if o := opposedEarlier(earlier, p); o != "" {
			dropped = append(dropped, DroppedEdit{p, "conflict: an edit kept before it says the opposite: " + o})
			continue
		}
		kept = append(kept, p)
		if kindPolarity(p.Kind) != 0 {
			earlier = append(earlier, p.Kind+"\x00"+p.Text)
		}
	}
	return kept, dropped
}

func opposedEarlier(earlier []string, p Proposal) string {
	pol := kindPolarity(p.Kind)
	if pol == 0 {
		return ""
	}
	sub := subject(p.Text)
	for _, e := range earlier {
		kind, text, _ := strings.Cut(e, "\x00")
		if kindPolarity(kind) == -pol && sameSubject(sub, subject(text)) {
			return text
		}
	}
	return ""
}
