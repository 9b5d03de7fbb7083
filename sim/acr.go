package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/gavelhq/gavel/bench/perturb"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/sim/roles"
)

// This file holds the simulated model's roles for building training data
// (ACR): a generator whose answers are the instruction's reference made
// worse by the benchmark's perturbation rules (so each answer's true
// quality, 0..5 on AXIOM's scale, is known), a pointwise and a pairwise
// judge of programs that perceive that quality with errors, and a critic.
//
// A generated answer carries its truth in a labelled comment, e.g.
// "# [simulated] generator sample: quality 2 (rules: py_off_by_one)". The
// simulated judges read it as a real judge reads the code: imperfectly.
// Code without the comment (a reference) is taken to be of quality 5.

// The simulated program judges' constants.
const (
	// NoticeBroken is how often a judge sees that a broken program (quality
	// 0..2) is broken; otherwise it takes it for a working one (quality 3).
	NoticeBroken = 0.85
	// ExactQuality is how often it perceives a working program's quality
	// exactly; otherwise one level off.
	ExactQuality = 0.7
	// PositionBias is how often a pairwise answer is "A" whatever A is.
	PositionBias = 0.08
	// SelfPreference is how often the "self-preferring" judge
	// (sim:self-preferring) picks the generated answer of a pair whatever
	// its quality: a judge deliberately biased toward generated answers.
	SelfPreference = 0.7
)

// Generator's skill: the chance that a sample is broken rises with the
// instruction's difficulty (0..1, from its text).
const (
	brokenBase  = 0.15
	brokenSlope = 0.6
)

// Knowledge is what the simulated generator knows: the reference answer of
// each instruction it may be asked, by the instruction's text. Asked
// anything else, it answers without code.
type Knowledge struct {
	mu   sync.RWMutex
	refs map[string]knownAnswer
}

type knownAnswer struct{ lang, code string }

// NewKnowledge returns empty knowledge.
func NewKnowledge() *Knowledge { return &Knowledge{refs: map[string]knownAnswer{}} }

// Learn teaches the generator an instruction's reference code.
func (k *Knowledge) Learn(instruction, lang, code string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refs[instruction] = knownAnswer{lang, code}
}

func (k *Knowledge) lookup(instruction string) (knownAnswer, bool) {
	if k == nil {
		return knownAnswer{}, false
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	a, ok := k.refs[instruction]
	return a, ok
}

// InfoWith registers the simulated model as "sim", its generator knowing k.
func InfoWith(k *Knowledge) llm.ProviderInfo {
	info := Info
	info.New = func(llm.ProviderConfig) (llm.Provider, error) { return Model{Knows: k}, nil }
	return info
}

var reQuality = regexp.MustCompile(`\[simulated\] generator sample: quality ([0-5])(?: \(rules: ([a-z0-9_, ]*)\))?`)

// generate answers a generator request for a known instruction.
func generate(req *llm.Request, k *Knowledge) (string, bool) {
	instruction := roles.LastUser(req)
	ref, ok := k.lookup(instruction)
	if !ok {
		return "", false
	}
	// At temperature 0 every sample is the same answer.
	seedReq := *req
	if req.Temperature != nil && *req.Temperature == 0 {
		seedReq.Sample = 0
	}
	b, _ := json.Marshal(&seedReq)
	sum := sha256.Sum256(b)
	g := &gen{state: binary.LittleEndian.Uint64(sum[:8])}
	h := sha256.Sum256([]byte(instruction))
	difficulty := float64(binary.LittleEndian.Uint64(h[:8])>>11) / (1 << 53)

	target := 5
	if g.float() < brokenBase+brokenSlope*difficulty {
		target = int(g.next() % 3)
	} else if x := g.float(); x < 0.3 {
		target = 3
	} else if x < 0.6 {
		target = 4
	}
	code, quality, names := ref.code, 5, []string(nil)
	rng := rand.New(rand.NewPCG(g.next(), g.next()))
	rules := perturb.ByLang(ref.lang)
	for try := 0; target < 5 && try < 6 && len(rules) > 0; try++ {
		chosen := perturb.Choose(rules, target, rng)
		out, score, err := perturb.Compose(ref.code, chosen, rng)
		if err != nil {
			continue
		}
		code, quality = out, score
		for _, r := range chosen {
			names = append(names, r.Name)
		}
		break
	}
	comment := "#"
	if ref.lang == "go" {
		comment = "//"
	}
	mark := fmt.Sprintf("%s %s generator sample: quality %d", comment, Label, quality)
	if len(names) > 0 {
		mark += " (rules: " + strings.Join(names, ", ") + ")"
	}
	text := fmt.Sprintf("%s Here is a solution.\n\n```%s\n%s\n%s\n```\n", Label, ref.lang, mark, strings.Trim(code, "\n"))
	return text, true
}

// quality reads a program's true quality: its generator comment, else 5 (a
// reference), and whether it was generated.
func quality(code string) (int, bool, []string) {
	m := reQuality.FindStringSubmatch(code)
	if m == nil {
		return 5, false, nil
	}
	q, _ := strconv.Atoi(m[1])
	var rules []string
	for _, r := range strings.Split(m[2], ",") {
		if r = strings.TrimSpace(r); r != "" {
			rules = append(rules, r)
		}
	}
	return q, true, rules
}

// perceive is the quality a judge takes a program to have.
func perceive(g *gen, q int) int {
	if q <= 2 {
		if g.float() < NoticeBroken {
			return q
		}
		return 3
	}
	if g.float() < ExactQuality {
		return q
	}
	if g.next()%2 == 0 {
		return max(3, q-1)
	}
	return min(5, q+1)
}

// programAnswer answers the program roles: pointwise and pairwise judges
// of generated programs (a request with a generator comment in its data)
// and the critic.
func programAnswer(g *gen, cfg roles.Config, req *llm.Request) (string, bool) {
	if req.Schema == nil {
		return "", false
	}
	p := readPrompt(req)
	var out any
	switch req.Schema.Name {
	case "scores":
		q, generated, _ := quality(p.Data["candidate"])
		if !generated {
			return "", false
		}
		if g.float() < Malformed {
			return Label + " scores: hard to say", true
		}
		lo, hi := schemaScale(req.Schema.JSON)
		seen := perceive(g, q)
		scores := map[string]any{}
		for _, c := range schemaCriteria(req.Schema.JSON) {
			v := lo + (hi-lo)*seen/5 + int(g.next()%3) - 1
			scores[c] = min(hi, max(lo, v))
		}
		out = map[string]any{"reasoning": fmt.Sprintf("%s The answer looks like quality %d of 5.", Label, seen), "scores": scores}
	case "preference":
		qa, genA, _ := quality(p.Data["answer_a"])
		qb, genB, _ := quality(p.Data["answer_b"])
		if !genA && !genB {
			return "", false
		}
		if g.float() < Malformed {
			return Label + " preference: hard to say", true
		}
		winner := "tie"
		a, b := perceive(g, qa), perceive(g, qb)
		switch {
		case cfg.SelfPreferring && genA != genB && g.float() < SelfPreference:
			winner = map[bool]string{true: "A", false: "B"}[genA]
		case g.float() < PositionBias:
			winner = "A"
		case a > b:
			winner = "A"
		case b > a:
			winner = "B"
		}
		out = map[string]any{"reasoning": fmt.Sprintf("%s A looks like quality %d, B like %d.", Label, a, b), "winner": winner}
	case "critique":
		_, _, rules := quality(p.Data["answer"])
		var why []string
		for _, name := range rules {
			for _, r := range perturb.Catalogue() {
				if r.Name == name {
					why = append(why, strings.TrimSuffix(r.Description, "."))
				}
			}
		}
		text := Label + " Your answer falls short of what the instruction asks."
		if len(why) > 0 {
			text = Label + " Your answer has these problems: " + strings.Join(why, "; ") + "."
		}
		if tr := strings.TrimSpace(p.Data["test_result"]); tr != "" {
			text += " Running it gave: " + roles.Clip(tr, 120) + "."
		}
		out = map[string]any{"critique": text + " Please write a corrected answer."}
	default:
		return "", false
	}
	b, _ := json.Marshal(out)
	return string(b), true
}
