// Package sim is gavel's simulated world: a test double and a demo that
// lets every model-driven part run offline (DESIGN.md section 5). It is
// labelled as simulated in everything it produces and is not evidence about
// real models.
//
// Knowledge is separated by structure. This package is the world: it owns
// the truth (which signals are fatal, drawn for each world from the
// signals' priors in world.go; hidden failures, non-code abandonments, in
// records.go) and the judge's hidden behaviour (judge.go, lexicon.go).
// Every role that stands for a model (teacher, proposer, applier,
// perturbation applier, generator, program graders, critic) lives in
// package sim/roles, which cannot import this one, names none of its
// signals, and answers from the text of its request alone. No simulated
// model, the judge included, reads a world's truth: tests redraw it and
// check that every answer stays byte for byte the same.
//
// The world's parameters, and the demo figures each drives:
//
//   - The catalogue (signals.go): each signal's Prior (how likely it is
//     fatal in a world; each world draws its truth from these) and the
//     rates in records.go (which signals appear, drifting
//     over six months) decide the records' outcomes together with
//     FatalFailRate, HiddenFailRate, NonCodeRate and DraftRate. They set
//     the label mix, the share of failures no one can explain (so the
//     teacher's abstentions on failures) and the drift study.
//   - The judge's perception of each signal: Naive (how often a reviewer
//     who noticed it and was told nothing about it fails the change for
//     it; negative: reassurance), Visible (how often it is noticed without
//     a reference) and Check (the rubric check it bears on). With the
//     built-in prompts they set the original prompts' Scott's pi; Visible
//     also sets how much hiding the reference costs the calibrated judge.
//   - The judge's reading of its prompt (lexicon.go): its own lexicon of
//     what sentences talk about, the cues of stance, and how reliably it
//     follows a rule by how sharply the rule names what it sees
//     (QuotedCode, Named, VaguelyNear). They decide how much a calibrated
//     prompt can gain and why vague or unrelated rules gain little.
//   - The judge's noise: NoiseFlip, Malformed, MalformedRepair and
//     SpuriousCheck bound every judge's agreement and exercise invalid
//     answers.
//   - The roles' parameters (package sim/roles, set in the model name):
//     teacher-error (default 0.1) with the teacher's own perception (how
//     obvious each trait is; against a reference, hunks outside its scope
//     are read closely) sets the teacher's kept, abstained and corrected
//     counts, the abstention on failures with and without the reference,
//     what the noise study leaves, and the unreliable_teacher control
//     (teacher-error=0.5); random-rules makes the random_rules control.
//
// No constant sets a study's outcome: the reference ablation and the noise
// study come out of the teacher's perception and beliefs meeting the
// records.
//
// This file holds the simulated model's provider, registered as "sim",
// which routes each request to the role it is for, or to the world's
// judge, and answers any other structured request with a schema-valid
// answer and text requests with a short labelled text.
package sim

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/sim/roles"
)

// Label marks every text the simulated model writes.
const Label = roles.Label

// Info registers the simulated model as the local provider "sim".
var Info = llm.ProviderInfo{
	Name:  "sim",
	Doc:   "the simulated model: offline, deterministic, free; a test double, not evidence about real models",
	Local: true,
	New:   func(llm.ProviderConfig) (llm.Provider, error) { return Model{}, nil },
}

// Model is the simulated model. Its name carries the roles' parameters
// (see package sim/roles), e.g. "sim:teacher-error=0.5".
type Model struct{}

var _ llm.Provider = Model{}

// Complete implements llm.Provider.
func (m Model) Complete(ctx context.Context, name string, req *llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	seed := sha256.Sum256(b)
	g := &gen{state: binary.LittleEndian.Uint64(seed[:8])}
	resp := &llm.Response{ModelVersion: "sim", FinishReason: "stop"}
	cfg, err := roles.ParseConfig(name)
	if err != nil {
		return nil, llm.Fatal(err)
	}
	if req.Schema == nil {
		if text, ok := roles.Generate(req); ok {
			resp.Text = text
			return withUsage(resp, req), nil
		}
	}
	if req.Schema != nil {
		// The roles that stand for a model first (they answer only
		// requests of theirs), then the world's judge of patches.
		if text, ok := roles.Answer(cfg, req); ok {
			resp.Text = text
			return withUsage(resp, req), nil
		}
		if text, ok := judgeAnswer(g, req, cfg.NaiveScale, cfg.JudgeNoise); ok {
			resp.Text = text
			return withUsage(resp, req), nil
		}
		var schema any
		if err := json.Unmarshal(req.Schema.JSON, &schema); err != nil {
			return nil, llm.Fatal(fmt.Errorf("sim: schema %s: %w", req.Schema.Name, err))
		}
		out, err := json.Marshal(g.value(schema, 0))
		if err != nil {
			return nil, err
		}
		resp.Text = string(out)
	} else {
		last := ""
		if n := len(req.Messages); n > 0 {
			last = req.Messages[n-1].Content
		}
		resp.Text = fmt.Sprintf("%s This is the simulated model's answer to: %q", Label, clip(last, 80))
	}
	return withUsage(resp, req), nil
}

// withUsage counts a simulated answer's tokens at four characters a token.
func withUsage(resp *llm.Response, req *llm.Request) *llm.Response {
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content)
	}
	resp.Usage = llm.Usage{InputTokens: int64(chars/4 + 1), OutputTokens: int64(len(resp.Text)/4 + 1)}
	return resp
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// gen makes deterministic values from a seed (SplitMix64).
type gen struct{ state uint64 }

func (g *gen) next() uint64 {
	g.state += 0x9e3779b97f4a7c15
	z := g.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// value makes an instance of a JSON Schema: objects with every property,
// enums and consts honoured, numbers within bounds, arrays of minItems (at
// least one) items. It covers the schemas gavel writes, not all of JSON
// Schema.
func (g *gen) value(schema any, depth int) any {
	s, _ := schema.(map[string]any)
	if s == nil || depth > 8 {
		return nil
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[g.next()%uint64(len(e))]
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			return g.value(alts[0], depth+1)
		}
	}
	typ := s["type"]
	if list, ok := typ.([]any); ok && len(list) > 0 {
		typ = list[0]
	}
	switch typ {
	case "object":
		props, _ := s["properties"].(map[string]any)
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(keys))
		for _, k := range keys {
			out[k] = g.value(props[k], depth+1)
		}
		return out
	case "array":
		n := 1
		if m, ok := s["minItems"].(float64); ok && int(m) > n {
			n = int(m)
		}
		out := make([]any, n)
		for i := range out {
			out[i] = g.value(s["items"], depth+1)
		}
		return out
	case "integer", "number":
		lo, hi := 0.0, 10.0
		if v, ok := s["minimum"].(float64); ok {
			lo = v
			if _, ok := s["maximum"]; !ok {
				hi = lo + 10
			}
		}
		if v, ok := s["maximum"].(float64); ok {
			hi = v
		}
		if hi < lo {
			hi = lo
		}
		v := lo + float64(g.next()%uint64(hi-lo+1))
		if typ == "integer" {
			return int64(v)
		}
		return v
	case "boolean":
		return g.next()%2 == 0
	case "null":
		return nil
	}
	text := Label + " text"
	if m, ok := s["minLength"].(float64); ok && len(text) < int(m) {
		text += strings.Repeat(".", int(m)-len(text))
	}
	return text
}
