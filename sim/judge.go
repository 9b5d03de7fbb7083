package sim

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/gavelhq/gavel/llm"
)

// The simulated judge's constants: how reliably it follows what its prompt
// names, how noisy it is, and how often its output is malformed.
const (
	NamedFollow     = 0.97 // a signal named as a reason to fail fails the patch
	NoiseFlip       = 0.02 // a verdict flipped at random
	Malformed       = 0.03 // a first answer that is not JSON
	MalformedRepair = 0.3  // a repair answer that is still not JSON
	SpuriousCheck   = 0.2  // a rubric check failed for no good reason when the patch shows a signal the prompt does not name
	ReferenceBoost  = 0.15 // added to a fatal signal's naive notice rate when the reference is shown
)

// dataTags are the fences in which judge prompts carry untrusted data; the
// simulated judge never reads instructions inside them.
var dataTags = []string{"task", "candidate", "reference", "instruction", "answer_a", "answer_b"}

// prompt is what the simulated judge makes of a request.
type prompt struct {
	instructions string            // the prompt with every data fence removed, lower case
	data         map[string]string // fenced data by tag
	repair       bool              // a repair request: the previous answer was unusable
}

func readPrompt(req *llm.Request) prompt {
	p := prompt{data: map[string]string{}}
	var b strings.Builder
	for _, m := range req.Messages {
		if m.Role == llm.Assistant {
			p.repair = true
			continue
		}
		text := m.Content
		for {
			tag, start, end, body := nextFence(text)
			if tag == "" {
				break
			}
			p.data[tag] = body
			text = text[:start] + text[end:]
		}
		b.WriteString(text)
		b.WriteString("\n")
	}
	p.instructions = strings.ToLower(b.String())
	return p
}

// nextFence finds the first data fence: <tag>\n...\n</tag>, including
// context_* fences.
func nextFence(s string) (tag string, start, end int, body string) {
	start = -1
	for i := strings.IndexByte(s, '<'); i >= 0 && i < len(s); {
		rest := s[i+1:]
		j := strings.IndexByte(rest, '>')
		if j > 0 {
			name := rest[:j]
			if isDataTag(name) && strings.HasPrefix(rest[j+1:], "\n") {
				closeTag := "\n</" + name + ">"
				if k := strings.Index(rest[j+1:], closeTag); k >= 0 {
					bodyStart := i + 1 + j + 2
					bodyEnd := i + 1 + j + 1 + k
					return name, i, bodyEnd + len(closeTag), s[bodyStart:bodyEnd]
				}
			}
		}
		n := strings.IndexByte(s[i+1:], '<')
		if n < 0 {
			break
		}
		i += 1 + n
	}
	return "", 0, 0, ""
}

func isDataTag(name string) bool {
	if strings.HasPrefix(name, "context_") {
		return true
	}
	for _, t := range dataTags {
		if name == t {
			return true
		}
	}
	return false
}

// Stance is how a prompt names a signal.
type Stance int

// The stances.
const (
	Unnamed    Stance = iota
	FailReason        // the prompt says the signal is a reason to fail
	PassReason        // the prompt says the signal is harmless
)

var passCues = []string{"not a reason to", "no reason to fail", "not a problem",
	"harmless", "benign", "acceptable", "is fine", "are fine", "does not matter", "doesn't matter",
	"should not fail", "should not be failed", "do not fail", "don't fail", "ignore", "alone is not", "by itself is not",
	"not on its own", "should pass", "may pass"}

var failCues = []string{"fail", "answer no", "reject", "wrong", "bug", "incorrect", "break", "broken", "must not", "never",
	"unacceptable", "not acceptable", "dangerous", "unsafe"}

// Stances reads a prompt's instructions for the signals it names and how.
// A sentence that mentions a signal names it as a reason to pass when it
// carries a pass cue ("harmless", "not a reason to fail", ...), else as a
// reason to fail when it carries a fail cue.
func Stances(instructions string) map[*Signal]Stance {
	out := map[*Signal]Stance{}
	for _, sentence := range sentences(strings.ToLower(instructions)) {
		for _, s := range Signals {
			if !mentions(sentence, s) {
				continue
			}
			switch {
			case containsAny(sentence, passCues):
				out[s] = PassReason
			case containsAny(sentence, failCues):
				out[s] = FailReason
			}
		}
	}
	return out
}

func mentions(sentence string, s *Signal) bool {
	return containsAny(sentence, s.Keywords)
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// sentences splits text at line ends and sentence ends.
func sentences(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, s := range strings.Split(line, ". ") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// judgement is the simulated reviewer's reading of one patch.
type judgement struct {
	failing []*Signal // signals it fails the patch for
	noticed []*Signal // every signal it noticed
}

// review reads a patch as the prompt tells it to, falling back to a naive
// reviewer's biases for what the prompt does not name.
func review(g *gen, patch string, stances map[*Signal]Stance, referenceShown bool) judgement {
	var j judgement
	trust := 0.0
	for _, s := range Detect(patch) {
		switch stances[s] {
		case FailReason:
			j.noticed = append(j.noticed, s)
			if g.float() < NamedFollow {
				j.failing = append(j.failing, s)
			}
		case PassReason:
			j.noticed = append(j.noticed, s)
		default:
			p := s.Naive
			if p < 0 {
				trust = max(trust, -p)
				continue
			}
			if s.Effect == Fatal && referenceShown {
				p += ReferenceBoost
			}
			if g.float() < p {
				j.noticed = append(j.noticed, s)
				j.failing = append(j.failing, s)
			}
		}
	}
	// A naive reviewer that sees tests it trusts lets one worry go.
	if len(j.failing) == 1 && stances[j.failing[0]] != FailReason && g.float() < trust {
		j.failing = nil
	}
	return j
}

func (g *gen) float() float64 { return float64(g.next()>>11) / (1 << 53) }

// judgeAnswer answers a judge request of any kind: it returns the JSON
// text, or malformed text to exercise the invalid path.
func judgeAnswer(g *gen, req *llm.Request) (string, bool) {
	switch req.Schema.Name {
	case "verdict", "rubric", "preference", "scores":
	default:
		return "", false
	}
	p := readPrompt(req)
	if (!p.repair && g.float() < Malformed) || (p.repair && g.float() < MalformedRepair) {
		return Label + " verdict: it depends", true
	}
	stances := Stances(p.instructions)
	_, refShown := p.data["reference"]
	var out any
	switch req.Schema.Name {
	case "verdict":
		j := review(g, p.data["candidate"], stances, refShown)
		verdict := "pass"
		if len(j.failing) > 0 {
			verdict = "fail"
		}
		if g.float() < NoiseFlip {
			verdict = map[string]string{"pass": "fail", "fail": "pass"}[verdict]
		}
		out = map[string]any{"reasoning": reasoning(j, verdict), "verdict": verdict}
	case "rubric":
		checks := schemaChecks(req.Schema.JSON)
		j := review(g, p.data["candidate"], stances, refShown)
		failed := map[int]bool{}
		for _, s := range j.failing {
			failed[s.Check%max(len(checks), 1)] = true
		}
		// Unsure about a signal its prompt does not name, a strict reviewer
		// sometimes fails a check for no good reason.
		unnamed := false
		for _, s := range Detect(p.data["candidate"]) {
			unnamed = unnamed || stances[s] == Unnamed
		}
		if unnamed && g.float() < SpuriousCheck && len(checks) > 0 {
			failed[int(g.next()%uint64(len(checks)))] = true
		}
		flip := -1
		if g.float() < NoiseFlip && len(checks) > 0 {
			flip = int(g.next() % uint64(len(checks)))
		}
		answers := map[string]any{}
		for i, c := range checks {
			ans := "yes"
			if failed[i] != (i == flip) {
				ans = "no"
			}
			answers[c] = map[string]any{"reasoning": fmt.Sprintf("%s Check %s: %s.", Label, c, ans), "answer": ans}
		}
		out = map[string]any{"reasoning": reasoning(j, "see checks"), "checks": answers}
	case "preference":
		a := review(g, p.data["answer_a"], stances, false)
		b := review(g, p.data["answer_b"], stances, false)
		winner := "tie"
		switch {
		case g.float() < 0.1: // position bias
			winner = "A"
		case len(a.failing) < len(b.failing):
			winner = "A"
		case len(b.failing) < len(a.failing):
			winner = "B"
		}
		out = map[string]any{"reasoning": fmt.Sprintf("%s A raises %d concerns, B %d.", Label, len(a.failing), len(b.failing)), "winner": winner}
	case "scores":
		j := review(g, p.data["candidate"], stances, false)
		lo, hi := schemaScale(req.Schema.JSON)
		scores := map[string]any{}
		for _, c := range schemaCriteria(req.Schema.JSON) {
			v := hi - 2 - 3*len(j.failing) + int(g.next()%3) - 1
			scores[c] = min(hi, max(lo, v))
		}
		out = map[string]any{"reasoning": reasoning(j, "scored"), "scores": scores}
	default:
		return "", false
	}
	b, _ := json.Marshal(out)
	return string(b), true
}

func reasoning(j judgement, verdict string) string {
	if len(j.noticed) == 0 {
		return fmt.Sprintf("%s Nothing in the change stands out as wrong; %s.", Label, verdict)
	}
	var names []string
	for _, s := range j.noticed {
		names = append(names, "it "+s.Phrase)
	}
	return fmt.Sprintf("%s The change: %s; %s.", Label, strings.Join(names, "; "), verdict)
}

// schemaChecks lists a rubric schema's check names in order.
func schemaChecks(schema json.RawMessage) []string {
	var s struct {
		Properties struct {
			Checks struct {
				Required []string `json:"required"`
			} `json:"checks"`
		} `json:"properties"`
	}
	json.Unmarshal(schema, &s)
	return s.Properties.Checks.Required
}

// schemaCriteria lists a pointwise schema's criteria; schemaScale its range.
func schemaCriteria(schema json.RawMessage) []string {
	var s struct {
		Properties struct {
			Scores struct {
				Required []string `json:"required"`
			} `json:"scores"`
		} `json:"properties"`
	}
	json.Unmarshal(schema, &s)
	return s.Properties.Scores.Required
}

func schemaScale(schema json.RawMessage) (int, int) {
	var s struct {
		Properties struct {
			Scores struct {
				Properties map[string]struct {
					Minimum int `json:"minimum"`
					Maximum int `json:"maximum"`
				} `json:"properties"`
			} `json:"scores"`
		} `json:"properties"`
	}
	json.Unmarshal(schema, &s)
	keys := make([]string, 0, len(s.Properties.Scores.Properties))
	for k := range s.Properties.Scores.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return 1, 10
	}
	c := s.Properties.Scores.Properties[keys[0]]
	return c.Minimum, c.Maximum
}
