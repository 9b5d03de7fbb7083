package roles

import (
	"fmt"
	"regexp"
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

// teach is the informed teacher: it reads the change the way a reviewer
// does (perceive), then explains the recorded label from what it noticed
// and believes, abstains when nothing it noticed explains it, and corrects
// a pass when it sees more than one defect.
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
		return map[string]any{"justification": Label + " " + why, "decision": d, "label": l}
	}
	if reason != "" && ContainsAny(reason, outsideCode) {
		return decide("abstain", label, fmt.Sprintf("The change was abandoned as %q, a reason outside the code: nothing in the inputs can show it.", reason))
	}
	seen := perceive(g, p.Data["candidate"], p.Data["reference"], cfg.TeacherError)
	var defects, harmless []noticed
	for _, n := range seen {
		if n.defect {
			defects = append(defects, n)
		} else {
			harmless = append(harmless, n)
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
	case label == "fail" && len(defects) > 0:
		why := blame(defects[0])
		if len(defects) > 1 {
			why += " Also: " + blame(defects[1])
		}
		return decide("keep", label, why)
	case label == "fail":
		why := "I find nothing in the change that would make it fail: it does what the task asks."
		if len(harmless) > 0 {
			why += " " + clear(harmless)
		}
		return decide("abstain", label, why+" The failure must come from something these inputs do not show.")
	case len(defects) > 1:
		return decide("correct", "fail", blame(defects[0])+" And: "+blame(defects[1])+" A change like this cannot work, whatever the record says.")
	case len(defects) == 1:
		return decide("abstain", label, blame(defects[0])+" Yet it passed, which these inputs do not explain.")
	}
	why := g.Pick([]string{
		"The change does what the task asks and leaves nothing out.",
		"The change is a sound, complete solution to the task.",
		"The change implements the requested behaviour correctly.",
	})
	if len(harmless) > 0 {
		why += " " + clear(harmless)
	}
	return decide("keep", label, why)
}
