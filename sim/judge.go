package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/sim/roles"
)

// The simulated judge's constants: how noisy it is and how often its
// output is malformed. How it reads its prompt is in lexicon.go; how it
// perceives each signal (Naive, Visible, Check) is in the catalogue.
const (
	NoiseFlip       = 0.02 // a verdict flipped at random
	Malformed       = 0.03 // a first answer that is not JSON
	MalformedRepair = 0.3  // a repair answer that is still not JSON
	SpuriousCheck   = 0.2  // a rubric check failed for no good reason when the patch shows a signal the prompt says nothing about
	// OutcomeTaste scales the naive bias against a taste trait when the
	// prompt asks for the change's outcome (will its tests pass, will it
	// be accepted) rather than for a review: a model asked what will
	// happen weighs what breaks, not what it would have written.
	OutcomeTaste = 0.3
)

type prompt = roles.Prompt

func readPrompt(req *llm.Request) prompt { return roles.Read(req) }

// guidance is what a prompt's rules make of one signal in one candidate.
type guidance struct {
	fail, harmless float64 // the strongest rule of each stance that applies
	check          int     // the check the strongest fail rule sits in, or -1
	noCredit       bool
}

// guide applies a prompt's rules to a signal whose changed lines (lower
// case, white space removed) are given.
func guide(rs []rule, s *Signal, lines string) guidance {
	gd := guidance{check: -1}
	x := senseOf(s)
	for _, r := range rs {
		v := x.strength(r.text, r.stance)
		for _, q := range r.quotes {
			if strings.Contains(lines, q) {
				v = max(v, QuotedCode)
			}
		}
		if v == 0 {
			continue
		}
		switch r.stance {
		case FailReason:
			if v > gd.fail {
				gd.fail, gd.check = v, r.check
			}
		case Harmless:
			gd.harmless = max(gd.harmless, v)
		case NoCredit:
			gd.noCredit = true
		}
	}
	return gd
}

// finding is a signal the judge holds against a patch, and the rubric
// check it fails (-1: the signal's own check).
type finding struct {
	sig   *Signal
	check int
}

// judgement is the simulated reviewer's reading of one patch.
type judgement struct {
	failing  []finding
	noticed  []*Signal // every signal it noticed
	harmless []*Signal // noticed, and its prompt says they are harmless
	unguided bool      // it noticed a signal its prompt says nothing about
}

// present lists the signals in a patch, in catalogue order, with their
// changed lines (lower case, white space removed) across the files that
// show them.
func present(patch string) ([]*Signal, map[*Signal]string) {
	changed := map[*Signal]string{}
	for _, f := range files(patch) {
		var b strings.Builder
		for _, sign := range []byte{'+', '-'} {
			for _, l := range lines(f, sign) {
				b.WriteString(strings.ToLower(strings.Join(strings.Fields(l), "")))
				b.WriteString("\n")
			}
		}
		for _, s := range Detect(f) {
			changed[s] += b.String()
		}
	}
	var out []*Signal
	for _, s := range Signals {
		if _, ok := changed[s]; ok {
			out = append(out, s)
		}
	}
	return out, changed
}

// review reads a patch as the prompt tells it to, falling back to a naive
// reviewer's biases for what the prompt says nothing about. Against a
// reference, every hunk the reference does not need stands out; without
// one, the judge notices each signal as often as it is visible.
func review(g *gen, patch string, rs []rule, referenceShown bool, naiveScale float64, outcome bool) judgement {
	var j judgement
	trust := 0.0
	sigs, lines := present(patch)
	for _, s := range sigs {
		gd := guide(rs, s, lines[s])
		if !referenceShown && g.float() >= s.Visible {
			continue
		}
		j.noticed = append(j.noticed, s)
		switch {
		case gd.fail > gd.harmless:
			if g.float() < gd.fail {
				j.failing = append(j.failing, finding{s, gd.check})
			}
		case gd.harmless > 0:
			j.harmless = append(j.harmless, s)
		default:
			j.unguided = true
			if s.Naive < 0 {
				if !gd.noCredit {
					trust = max(trust, -s.Naive)
				}
				continue
			}
			bias := s.Naive * naiveScale
			if outcome && s.Taste {
				bias *= OutcomeTaste
			}
			if g.float() < min(1, bias) {
				j.failing = append(j.failing, finding{s, -1})
			}
		}
	}
	// A naive reviewer that sees tests it trusts lets one worry of its own
	// go (never one its prompt names).
	if len(j.failing) == 1 && j.failing[0].check == -1 && g.float() < trust {
		if gd := guide(rs, j.failing[0].sig, lines[j.failing[0].sig]); gd.fail == 0 {
			j.failing = nil
		}
	}
	return j
}

func (g *gen) float() float64 { return float64(g.next()>>11) / (1 << 53) }

// judgeAnswer answers a judge request of any kind: it returns the JSON
// text, or malformed text to exercise the invalid path.
//
// noise < 0 is the default judge: NoiseFlip, and every draw seeded by the
// whole request. noise >= 0 (judge-noise=P) is a judge whose reading of
// a change is the same each time it is asked (seeded by the request
// without its sample index) and whose verdict alone flips with
// probability noise at each ask: two asks then disagree with probability
// 2·noise·(1-noise), the noise a retest measures.
func judgeAnswer(g *gen, req *llm.Request, naiveScale, noise float64) (string, bool) {
	flipper := g
	if noise < 0 {
		noise = NoiseFlip
	} else if req.Sample != 0 {
		steady := *req
		steady.Sample = 0
		b, _ := json.Marshal(&steady)
		seed := sha256.Sum256(b)
		g = &gen{state: binary.LittleEndian.Uint64(seed[:8])}
	}
	switch req.Schema.Name {
	case "verdict", "rubric", "preference", "scores":
	default:
		return "", false
	}
	p := readPrompt(req)
	if (!p.Repair && g.float() < Malformed) || (p.Repair && g.float() < MalformedRepair) {
		return Label + " verdict: it depends", true
	}
	rs := rules(p.Instructions)
	outcome := outcomeFramed(p.Instructions)
	_, refShown := p.Data["reference"]
	var out any
	switch req.Schema.Name {
	case "verdict":
		j := review(g, p.Data["candidate"], rs, refShown, naiveScale, outcome)
		verdict := "pass"
		if len(j.failing) > 0 {
			verdict = "fail"
		}
		if flipper.float() < noise {
			verdict = map[string]string{"pass": "fail", "fail": "pass"}[verdict]
		}
		out = map[string]any{"reasoning": reasoning(j, verdict), "verdict": verdict}
	case "rubric":
		checks := schemaChecks(req.Schema.JSON)
		j := review(g, p.Data["candidate"], rs, refShown, naiveScale, outcome)
		failed := map[int]bool{}
		for _, f := range j.failing {
			c := f.sig.Check
			if f.check >= 0 {
				c = f.check
			}
			failed[c%max(len(checks), 1)] = true
		}
		// Unsure about a signal its prompt says nothing about, a strict
		// reviewer sometimes fails a check for no good reason.
		if j.unguided && g.float() < SpuriousCheck && len(checks) > 0 {
			failed[int(g.next()%uint64(len(checks)))] = true
		}
		flip := -1
		if flipper.float() < noise && len(checks) > 0 {
			flip = int(flipper.next() % uint64(len(checks)))
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
		a := review(g, p.Data["answer_a"], rs, false, naiveScale, outcome)
		b := review(g, p.Data["answer_b"], rs, false, naiveScale, outcome)
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
		j := review(g, p.Data["candidate"], rs, false, naiveScale, outcome)
		lo, hi := roles.SchemaScale(req.Schema.JSON)
		scores := map[string]any{}
		for _, c := range roles.SchemaCriteria(req.Schema.JSON) {
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
	var held []string
	for _, f := range j.failing {
		held = append(held, senseOf(f.sig).says)
	}
	var fine []string
	for _, h := range j.harmless {
		fine = append(fine, senseOf(h).says)
	}
	text := Label + " Nothing in the change stands out as wrong"
	if len(held) > 0 {
		text = Label + " Against the change: " + strings.Join(held, "; ")
	}
	if len(fine) > 0 {
		text += " (not held against it: " + strings.Join(fine, "; ") + ")"
	}
	return text + "; " + verdict + "."
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
