package sim

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/llm"
)

// The simulated teacher's constants.
const (
	// SubtleSeenWithoutReference is how often the teacher still recognises
	// a subtle fatal signal (one a naive reviewer mostly misses) when the
	// judge's inputs do not include the reference.
	SubtleSeenWithoutReference = 0.3
	// CorrectRate is how often the teacher corrects a pass label on a
	// change with a visible fatal signal (otherwise it abstains).
	CorrectRate = 0.3
	// TeacherSlip is how often the teacher abstains on an explainable
	// record for no good reason.
	TeacherSlip = 0.03
)

var (
	reRecordedLabel = regexp.MustCompile(`The recorded label is "(pass|fail)"`)
	reProposerLabel = regexp.MustCompile(`The recorded label: (pass|fail)\.`)
	reVerdict       = regexp.MustCompile(`The judge's verdict: (pass|fail)\.`)
	reMaxChars      = regexp.MustCompile(`in at most (\d+) characters in all`)
	reReason        = regexp.MustCompile(`reason given: "([^"]*)"`)
)

func init() {
	dataTags = append(dataTags, "judge_prompt", "checks", "edits", "judge_reasoning", "teacher", "program", "answer", "test_result")
}

// subtle reports whether a fatal signal is one a reviewer needs the
// reference to see.
func subtle(s *Signal) bool { return s.Effect == Fatal && s.Naive < 0.25 }

// roleAnswer answers the calibration roles: teacher, edit proposer and
// edit applier.
func roleAnswer(g *gen, req *llm.Request) (string, bool) {
	var out any
	switch req.Schema.Name {
	case "teacher_decision":
		out = teach(g, readPrompt(req), req)
	case "edit_proposals":
		out = propose(readPrompt(req), req)
	case "revised_prompt_binary", "revised_prompt_rubric":
		out = apply(readPrompt(req), req)
	case "perturbed_program":
		// The simulated model cannot rewrite programs: it returns the
		// program unchanged, marked, so validation by execution sees an
		// unperturbed program and drops it where the score needs a defect.
		code := readPrompt(req).data["program"]
		mark := "# " + Label + " perturbation not applied"
		if strings.Contains(code, "func ") {
			mark = "// " + Label + " perturbation not applied"
		}
		out = map[string]string{"code": code + "\n" + mark + "\n"}
	default:
		return "", false
	}
	b, _ := json.Marshal(out)
	return string(b), true
}

func lastUser(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.User {
			return req.Messages[i].Content
		}
	}
	return ""
}

func allUser(req *llm.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		if m.Role == llm.User {
			b.WriteString(m.Content)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func teach(g *gen, p prompt, req *llm.Request) map[string]any {
	user := lastUser(req)
	label := "fail"
	if m := reRecordedLabel.FindStringSubmatch(user); m != nil {
		label = m[1]
	}
	reason := ""
	if m := reReason.FindStringSubmatch(user); m != nil {
		reason = m[1]
	}
	_, refShown := p.data["reference"]
	var fatal, benign []*Signal
	for _, s := range Detect(p.data["candidate"]) {
		switch {
		case s.Effect != Fatal:
			benign = append(benign, s)
		case !subtle(s) || refShown || g.float() < SubtleSeenWithoutReference:
			fatal = append(fatal, s)
		}
	}
	decide := func(d, why string) map[string]any {
		l := label
		if d == "correct" {
			l = "fail"
		}
		return map[string]any{"justification": Label + " " + why, "decision": d, "label": l}
	}
	switch {
	case label == "fail" && len(fatal) > 0:
		if g.float() < TeacherSlip {
			return decide("abstain", "The failure may have other causes; the inputs do not settle it.")
		}
		return decide("keep", "The change "+fatal[0].Phrase+", which explains the failure.")
	case label == "fail" && (reason == "duplicate" || reason == "superseded"):
		return decide("abstain", "The change was abandoned as "+reason+": a reason outside the code, which the inputs cannot show.")
	case label == "fail":
		return decide("abstain", "Nothing in the inputs explains the failure: the change looks correct and complete.")
	case len(fatal) > 0:
		if g.float() < CorrectRate {
			return decide("correct", "The change "+fatal[0].Phrase+": it cannot work, whatever the record says.")
		}
		return decide("abstain", "The change "+fatal[0].Phrase+", yet it passed: the inputs do not explain that.")
	}
	if g.float() < TeacherSlip {
		return decide("abstain", "The inputs do not settle whether the change is complete.")
	}
	why := "The change does the task and is complete."
	for _, s := range benign {
		why += " That it " + s.Phrase + " does not change its behaviour."
	}
	return decide("keep", why)
}

func propose(p prompt, req *llm.Request) map[string]any {
	user := lastUser(req)
	label, verdict := "", ""
	if m := reProposerLabel.FindStringSubmatch(user); m != nil {
		label = m[1]
	}
	if m := reVerdict.FindStringSubmatch(user); m != nil {
		verdict = m[1]
	}
	var proposals []map[string]string
	for _, s := range Signals {
		if !mentions(strings.ToLower(p.data["teacher"]), s) {
			continue
		}
		switch {
		case label == "fail" && verdict != "fail" && s.Effect == Fatal:
			proposals = append(proposals, map[string]string{"kind": "fail_reason", "text": "Fail a change that " + s.Phrase + ".", "target": ""})
		case label == "pass" && verdict != "pass" && s.Effect == Benign:
			proposals = append(proposals, map[string]string{"kind": "pass_reason", "text": "A change that " + s.Phrase + " is harmless: not a reason to fail.", "target": ""})
		}
	}
	if proposals == nil {
		proposals = []map[string]string{}
	}
	return map[string]any{"analysis": fmt.Sprintf("%s The judge said %s; the outcome was %s.", Label, verdict, label), "proposals": proposals}
}

// learntHeading opens the section where the simulated applier adds reasons.
const learntHeading = "What this team has learnt about its agents' changes:"

func apply(p prompt, req *llm.Request) map[string]any {
	maxChars := 1 << 30
	if m := reMaxChars.FindStringSubmatch(allUser(req)); m != nil {
		maxChars, _ = strconv.Atoi(m[1])
	}
	system := p.data["judge_prompt"]
	var checks []map[string]string
	rubric := req.Schema.Name == "revised_prompt_rubric"
	if rubric {
		json.Unmarshal([]byte(p.data["checks"]), &checks)
	}
	size := func() int {
		n := len(system)
		for _, c := range checks {
			n += len(c["question"])
		}
		return n
	}
	for _, line := range strings.Split(p.data["edits"], "\n") {
		kind, text, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "- "), ": ")
		if !ok {
			continue
		}
		saved, savedChecks := system, cloneChecks(checks)
		switch kind {
		case "fail_reason", "pass_reason":
			if rubric && len(checks) > 0 {
				for _, s := range Signals {
					if mentions(strings.ToLower(text), s) {
						c := checks[s.Check%len(checks)]
						if kind == "fail_reason" {
							c["question"] += " Answer no if the change " + s.Phrase + "."
						} else {
							c["question"] += " That a change " + s.Phrase + " is not a reason to answer no."
						}
						break
					}
				}
				break
			}
			if !strings.Contains(system, learntHeading) {
				system = insertBeforeAnswer(system, "\n"+learntHeading+"\n")
			}
			system = strings.Replace(system, learntHeading+"\n", learntHeading+"\n- "+text+"\n", 1)
		case "remove":
			system = strings.Replace(system, strings.Trim(text, `"`), "", 1)
		}
		if size() > maxChars {
			system, checks = saved, savedChecks
		}
	}
	out := map[string]any{"system": system}
	if rubric {
		out["checks"] = checks
	}
	return out
}

func cloneChecks(cs []map[string]string) []map[string]string {
	out := make([]map[string]string, len(cs))
	for i, c := range cs {
		out[i] = map[string]string{"name": c["name"], "question": c["question"]}
	}
	return out
}

// insertBeforeAnswer puts text before the prompt's closing paragraph about
// the answer format, or at the end.
func insertBeforeAnswer(system, text string) string {
	if i := strings.LastIndex(system, "\nAnswer with a JSON object"); i >= 0 {
		return system[:i] + text + system[i:]
	}
	return system + "\n" + text
}
