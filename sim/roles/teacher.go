package roles

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gavelhq/gavel/llm"
)

var (
	reRecordedLabel = regexp.MustCompile(`The recorded label is "(pass|fail)"`)
	reReason        = regexp.MustCompile(`reason given: "([^"]*)"`)
)

// outsideCode are reasons for abandoning a change that the code cannot
// show.
var outsideCode = []string{"duplicate", "superseded", "obsolete", "no longer needed", "change of plan", "wontfix", "won't fix"}

// The informed teacher's thresholds: what it can point to as a cause of a
// failure, what it holds too surely a defect to explain a pass with, and
// how many of those it takes before it overrides a recorded outcome.
const (
	plausibleCause = 0.25
	sureDefect     = 0.85
	overwhelming   = 3
)

// teach is the informed teacher: it reads the change the way a reviewer
// does (perceive) and uses the outcome it is told. Told of a failure, it
// looks for a cause it can point to (the most suspicious thing it
// noticed, even one it would not have failed the change for unprompted),
// keeps the label with it, and abstains when it finds none. Told of a
// pass, it keeps the label, saying that what it noticed did no harm here,
// unless it holds something it noticed surely a defect (then it abstains:
// the inputs do not explain the pass); it corrects a pass to a failure
// only on overwhelming evidence (several sure defects at once), so
// rarely. It never overrides an outcome with a belief it holds less
// surely.
func teach(cfg Config, g *Gen, p Prompt, req *llm.Request) map[string]any {
	user := LastUser(req)
	label := "fail"
	if m := reRecordedLabel.FindStringSubmatch(user); m != nil {
		label = m[1]
	}
	reason := ""
	if m := reReason.FindStringSubmatch(user); m != nil {
		reason = strings.ToLower(m[1])
	}
	decide := func(d, l, why string) map[string]any {
		if d != "keep" && cfg.Sycophant > 0 && g.Float() < cfg.Sycophant {
			// Told the label, a sycophantic teacher finds an explanation
			// for it anyway.
			d, l = "keep", label
			why = g.Pick(rationalisations[label])
		}
		return map[string]any{"justification": Label + " " + why, "decision": d, "label": l}
	}
	if reason != "" && ContainsAny(reason, outsideCode) {
		return decide("abstain", label, fmt.Sprintf("The change was abandoned as %q, a reason outside the code: nothing in the inputs can show it.", reason))
	}
	read := g
	if cfg.Consistent {
		read = perception(req, p)
	}
	seen := perceive(read, p.Data["candidate"], p.Data["reference"], cfg.TeacherError)
	// Most suspicious first (perceive lists them in the teacher's order).
	slices.SortStableFunc(seen, func(a, b noticed) int { return cmp.Compare(b.suspicion, a.suspicion) })
	var causes, sure []noticed
	for _, n := range seen {
		if n.suspicion >= plausibleCause {
			causes = append(causes, n)
		}
		if n.suspicion >= sureDefect {
			sure = append(sure, n)
		}
	}
	blame := func(n noticed) string { return fmt.Sprintf(g.Pick(n.t.blame), n.line) }
	clear := func(ns []noticed) string {
		var parts []string
		for _, n := range ns {
			parts = append(parts, fmt.Sprintf(g.Pick(n.t.clear), n.line))
		}
		return strings.Join(parts, " ")
	}
	switch {
	case label == "fail" && len(causes) > 0:
		why := blame(causes[0])
		if len(causes) > 1 {
			why += " Also: " + blame(causes[1])
		}
		return decide("keep", label, why)
	case label == "fail":
		why := "I find nothing in the change that would make it fail: it does what the task asks."
		if len(seen) > 0 {
			why += " " + clear(seen)
		}
		return decide("abstain", label, why+" The failure must come from something these inputs do not show.")
	case len(sure) >= overwhelming:
		return decide("correct", "fail", blame(sure[0])+" And: "+blame(sure[1])+" And: "+blame(sure[2])+" A change like this cannot work, whatever the record says.")
	case len(sure) > 0:
		return decide("abstain", label, blame(sure[0])+" Yet it passed, which these inputs do not explain.")
	}
	why := g.Pick([]string{
		"The change does what the task asks and leaves nothing out.",
		"The change is a sound, complete solution to the task.",
		"The change implements the requested behaviour correctly.",
	})
	if len(seen) > 0 {
		why += " " + clear(seen)
	}
	return decide("keep", label, why)
}

// perception seeds what a consistent teacher notices in a change: the
// same model reading the same task and change (and reference) notices the
// same things, whether or not it is told the outcome.
func perception(req *llm.Request, p Prompt) *Gen {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s", req.Model, p.Data["task"], p.Data["candidate"], p.Data["reference"])
	return NewGen(binary.LittleEndian.Uint64(h.Sum(nil)[:8]))
}

// rationalisations are the made-up explanations of a sycophantic teacher:
// fitted to the label, about nothing in particular.
var rationalisations = map[string][]string{
	"fail": {
		"The change looks plausible, but it evidently falls short of what the task implies.",
		"The approach is fragile; an outcome like this was to be expected.",
		"Something in the change does not fully meet the task's requirements.",
	},
	"pass": {
		"The change addresses the task and looks acceptable overall.",
		"On balance the change is reasonable and does what was asked.",
		"The change is fine for what the task needs.",
	},
}

// predictBlind is the teacher's prediction without the outcome: what it
// notices decides it, as when it is told the outcome. A consistent teacher
// notices the same things as when told; any other reads the change afresh
// (its reading depends on the whole request), so some of its blind
// predictions differ from its informed reading by chance alone.
func predictBlind(cfg Config, g *Gen, p Prompt, req *llm.Request) map[string]any {
	seen := g
	if cfg.Consistent {
		seen = perception(req, p)
	}
	for _, n := range perceive(seen, p.Data["candidate"], p.Data["reference"], cfg.TeacherError) {
		if n.defect() {
			return map[string]any{"justification": fmt.Sprintf("%s The change has a defect at %q.", Label, n.line), "prediction": "fail"}
		}
	}
	return map[string]any{"justification": Label + " I see nothing in the change that would make it fail.", "prediction": "pass"}
}
