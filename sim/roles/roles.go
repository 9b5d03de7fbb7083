// Package roles holds the simulated model's roles that stand for a real
// model: the informed teacher, the edit proposer, the edit applier, the
// perturbation applier, and for training data the generator, the program
// graders and the critic. Each answers from the text of its request alone,
// the way a real model must: it perceives what it can in the fenced data,
// holds beliefs and wording of its own, and can be wrong.
//
// This package must never reach the simulated world's truth (package sim:
// which signals cause failures, hidden failures, a program's true
// quality). It does not import sim, and a test fails if it ever does,
// directly or through another package. The world imports this package to
// route requests, never the other way round.
//
// The roles' parameters, all in the model name (so they are part of every
// request's cache key and shown wherever the model is):
//
//   - teacher-error=P (default 0.1): how often the teacher misjudges a
//     trait it noticed, taking a defect for harmless or a harmless trait
//     for a defect. It drives the demo's teacher figures (kept,
//     abstained, corrected), what survives the label-noise study, and the
//     unreliable_teacher control (0.5).
//   - random-rules: the proposer ignores the disagreement and proposes
//     rules drawn at random from plausible review advice (the random_rules
//     control).
//   - self-preferring: the pairwise program grader favours answers written
//     in the simulated generator's own style (the ACR judge check's biased
//     judge).
//
// Beyond these, the teacher's perception (which traits a plain read
// notices, and that a reference makes the hunks outside its scope stand
// out) drives the reference ablation: without the reference the teacher
// notices less and so abstains more on failures.
package roles

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/llm"
)

// Label marks every text the simulated model writes.
const Label = "[simulated]"

// Config is a simulated model's role parameters, read from its name.
type Config struct {
	// TeacherError is how often the teacher misjudges a trait it noticed.
	TeacherError float64
	// RandomRules makes the proposer ignore the disagreement.
	RandomRules bool
	// SelfPreferring makes the pairwise program judge favour generated
	// answers (used by the ACR judge check).
	SelfPreferring bool
	// Sycophant is how often the teacher, shown a label it cannot explain,
	// keeps it anyway with a made-up explanation.
	Sycophant float64
	// Family names the model family the simulated model stands for (read
	// by teacher.Family from the name; nothing here depends on it).
	Family string
	// Consistent makes the teacher notice the same things in a change
	// whether or not it is told the outcome (its reading is seeded by the
	// model, task, change and reference instead of the whole request), so
	// the label-blind check measures its rationalisation without reading
	// noise.
	Consistent bool
	// NaiveScale scales how often the judge, reading a change, fails it
	// for something its prompt says nothing about (default 1): a second
	// model with other biases, on which a calibrated prompt may or may not
	// carry over.
	NaiveScale float64
	// JudgeNoise, when not negative (judge-noise=P), makes the judge read
	// a change the same way each time it is asked and flip its verdict
	// with probability P at each ask (the default judge, -1, flips 2% and
	// draws its reading afresh for each request).
	JudgeNoise float64
}

// Malformed is how often a program grader's first answer is not JSON.
const Malformed = 0.03

// DefaultTeacherError is the teacher's error rate unless the model name
// sets one.
const DefaultTeacherError = 0.1

// ParseConfig reads a simulated model's name: "" or comma-separated
// parameters (teacher-error=P, sycophant=P, family=NAME, consistent,
// naive-scale=X, random-rules, self-preferring).
func ParseConfig(name string) (Config, error) {
	c := Config{TeacherError: DefaultTeacherError, NaiveScale: 1, JudgeNoise: -1}
	for _, part := range strings.Split(name, ",") {
		part = strings.TrimSpace(part)
		key, val, hasVal := strings.Cut(part, "=")
		switch {
		case part == "":
		case key == "teacher-error" && hasVal:
			p, err := strconv.ParseFloat(val, 64)
			if err != nil || p < 0 || p > 1 {
				return c, fmt.Errorf("sim model %q: teacher-error wants a probability in 0..1, not %q", name, val)
			}
			c.TeacherError = p
		case key == "sycophant" && hasVal:
			p, err := strconv.ParseFloat(val, 64)
			if err != nil || p < 0 || p > 1 {
				return c, fmt.Errorf("sim model %q: sycophant wants a probability in 0..1, not %q", name, val)
			}
			c.Sycophant = p
		case key == "family" && hasVal && val != "":
			c.Family = val
		case key == "naive-scale" && hasVal:
			x, err := strconv.ParseFloat(val, 64)
			if err != nil || x < 0 || x > 10 {
				return c, fmt.Errorf("sim model %q: naive-scale wants a number in 0..10, not %q", name, val)
			}
			c.NaiveScale = x
		case key == "judge-noise" && hasVal:
			p, err := strconv.ParseFloat(val, 64)
			if err != nil || p < 0 || p > 1 {
				return c, fmt.Errorf("sim model %q: judge-noise wants a probability in 0..1, not %q", name, val)
			}
			c.JudgeNoise = p
		case part == "consistent":
			c.Consistent = true
		case part == "random-rules":
			c.RandomRules = true
		case part == "self-preferring":
			c.SelfPreferring = true
		default:
			return c, fmt.Errorf("sim model %q: unknown parameter %q (known: teacher-error=P, sycophant=P, family=NAME, consistent, naive-scale=X, judge-noise=P, random-rules, self-preferring)", name, part)
		}
	}
	return c, nil
}

// Answer answers a request for one of the roles here, by its schema name;
// ok is false for any other request.
func Answer(cfg Config, req *llm.Request) (text string, ok bool) {
	if req.Schema == nil {
		return "", false
	}
	g := Seeded(req)
	p := Read(req)
	if out, ok := programAnswer(cfg, g, p, req); ok {
		// Now and then a grader's first answer is not JSON, as with real
		// models, so the invalid path is exercised.
		if !p.Repair && req.Schema.Name != "critique" && g.Float() < Malformed {
			return Label + " " + req.Schema.Name + ": hard to say", true
		}
		b, _ := json.Marshal(out)
		return string(b), true
	}
	var out any
	switch req.Schema.Name {
	case "teacher_decision":
		out = teach(cfg, g, p, req)
	case "teacher_blind_prediction":
		out = predictBlind(cfg, g, p, req)
	case "edit_proposals":
		out = propose(cfg, g, p, req)
	case "revised_prompt_binary", "revised_prompt_rubric":
		out = apply(p, req)
	case "perturbed_program":
		out = perturbProgram(g, p, req)
	default:
		return "", false
	}
	b, _ := json.Marshal(out)
	return string(b), true
}

// Gen makes deterministic values from a seed (SplitMix64).
type Gen struct{ state uint64 }

// Seeded returns a generator seeded by the request's content, so the same
// request always gets the same answer.
func Seeded(req *llm.Request) *Gen {
	b, _ := json.Marshal(req)
	sum := sha256.Sum256(b)
	return &Gen{state: binary.LittleEndian.Uint64(sum[:8])}
}

// NewGen returns a generator with a given state.
func NewGen(state uint64) *Gen { return &Gen{state: state} }

// Next returns the next 64 random bits.
func (g *Gen) Next() uint64 {
	g.state += 0x9e3779b97f4a7c15
	z := g.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Float returns a number in [0, 1).
func (g *Gen) Float() float64 { return float64(g.Next()>>11) / (1 << 53) }

// Pick returns one of the strings.
func (g *Gen) Pick(xs []string) string { return xs[g.Next()%uint64(len(xs))] }

// Prompt is what a simulated model makes of a request: the instructions
// (every data fence removed, lower case) and the fenced data by tag.
type Prompt struct {
	Instructions string
	Data         map[string]string
	// Repair is set when the request carries an earlier answer of the
	// model's (a retry after an unusable answer).
	Repair bool
}

// DataTags are the fences in which gavel's prompts carry data; a
// simulated model never reads instructions inside them.
var DataTags = []string{"task", "candidate", "reference", "instruction", "answer_a", "answer_b",
	"judge_prompt", "checks", "edits", "judge_reasoning", "teacher", "program", "answer", "test_result"}

// Read splits a request into instructions and fenced data.
func Read(req *llm.Request) Prompt {
	p := Prompt{Data: map[string]string{}}
	var b strings.Builder
	for _, m := range req.Messages {
		if m.Role == llm.Assistant {
			p.Repair = true
			continue
		}
		text := m.Content
		for {
			tag, start, end, body := nextFence(text)
			if tag == "" {
				break
			}
			p.Data[tag] = body
			text = text[:start] + text[end:]
		}
		b.WriteString(text)
		b.WriteString("\n")
	}
	p.Instructions = strings.ToLower(b.String())
	return p
}

// nextFence finds the first data fence: <tag>\n...\n</tag>, including
// context_* fences.
func nextFence(s string) (tag string, start, end int, body string) {
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
	for _, t := range DataTags {
		if name == t {
			return true
		}
	}
	return false
}

// LastUser returns the last user message.
func LastUser(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.User {
			return req.Messages[i].Content
		}
	}
	return ""
}

// ContainsAny reports whether s contains any of subs.
func ContainsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// Clip shortens text to n runes on one line.
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
