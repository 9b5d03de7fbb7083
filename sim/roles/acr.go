package roles

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"sync"

	"crypto/sha256"

	"github.com/gavelhq/gavel/bench/perturb"
	"github.com/gavelhq/gavel/llm"
)

// This file holds the roles of building training data (ACR): a generator,
// pointwise and pairwise graders of programs, and a critic. The generator
// never sees a reference or tests: it recalls, for HumanEval prompts it
// recognises, one of the answers a real model (Code Llama-Instruct-13B,
// via CodeJudge) wrote for it, sometimes with a slip of its own, and
// otherwise writes an unfinished stub. Nobody knows how good an answer is
// until it runs. The graders judge what they can see in the text.

//go:embed memory/python.jsonl.gz
var memoryGz []byte

var (
	memoryOnce sync.Once
	memory     map[string][]string
)

// recall returns the remembered completions of a prompt.
func recall(prompt string) []string {
	memoryOnce.Do(func() {
		memory = map[string][]string{}
		zr, err := gzip.NewReader(bytes.NewReader(memoryGz))
		if err != nil {
			panic(err)
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			var m struct {
				Prompt      string   `json:"prompt"`
				Completions []string `json:"completions"`
			}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				panic(err)
			}
			memory[promptKey(m.Prompt)] = m.Completions
		}
	})
	return memory[promptKey(prompt)]
}

func promptKey(s string) string { return strings.Join(strings.Fields(s), " ") }

var reFence = regexp.MustCompile("(?s)```(python|go|py|golang)\\s*\n(.*?)\n```")

// The generator's slips: how often, at the least skill, it changes a
// recalled answer on its own (a real rewrite from the perturbation
// rules, so its quality is anyone's guess until it runs).
const maxSlip = 0.5

// Generate answers a generator request: the instruction's code, completed
// from memory or left as a stub. ok is false for a request that is not a
// programming instruction with code to complete.
func Generate(req *llm.Request) (string, bool) {
	instruction := LastUser(req)
	m := reFence.FindStringSubmatch(instruction)
	if m == nil {
		return "", false
	}
	lang := map[string]string{"python": "python", "py": "python", "go": "go", "golang": "go"}[m[1]]
	prompt := m[2]
	// At temperature 0 every sample is the same answer.
	seedReq := *req
	if req.Temperature != nil && *req.Temperature == 0 {
		seedReq.Sample = 0
	}
	g := Seeded(&seedReq)
	h := sha256.Sum256([]byte(instruction))
	skill := float64(binary.LittleEndian.Uint64(h[:8])>>11) / (1 << 53)

	var code, note string
	if mem := recall(prompt); lang == "python" && len(mem) > 0 {
		code = strings.TrimRight(prompt, "\n") + "\n" + strings.Trim(mem[g.Next()%uint64(len(mem))], "\n") + "\n"
		note = "Here is a solution."
		if g.Float() < maxSlip*(1-skill) {
			rng := rand.New(rand.NewPCG(g.Next(), g.Next()))
			rules := perturb.ByLang(lang)
			for _, i := range rng.Perm(len(rules))[:min(3, len(rules))] {
				if out, err := rules[i].Apply(code, rng); err == nil && !perturb.SameCode(lang, out, code) {
					code = out
					break
				}
			}
		}
	} else {
		code, note = stub(lang, prompt), "I could not finish this; here is a start."
	}
	return fmt.Sprintf("%s %s\n\n```%s\n%s\n```\n", Label, note, lang, strings.Trim(code, "\n")), true
}

// stub is an unfinished function: the prompt with a body that says so.
func stub(lang, prompt string) string {
	prompt = strings.TrimRight(prompt, "\n")
	if lang == "go" {
		if strings.HasSuffix(strings.TrimSpace(prompt), "{") {
			return prompt + "\n\tpanic(\"not implemented\")\n}\n"
		}
		return prompt + "\n"
	}
	return prompt + "\n    raise NotImplementedError\n"
}

// concern is something a grader holds against a program's text.
type concern struct {
	what   string
	weight int // quality levels it costs
}

var (
	reStubBody   = regexp.MustCompile(`(?m)^\s*(pass|\.\.\.|raise NotImplementedError\b.*|panic\("not implemented"\))\s*$`)
	rePlacehold  = regexp.MustCompile(`(?i)#\s*your code here|//\s*your code here|\bTODO\b|\bFIXME\b`)
	reTopPrint   = regexp.MustCompile(`(?m)^print\(`)
	reReturn     = regexp.MustCompile(`\breturn\b|\byield\b`)
	reDefLine    = regexp.MustCompile(`(?m)^\s*(def|func)\s`)
	reCodeFences = regexp.MustCompile("(?s)```[a-z]*\\s*\n(.*?)\n```")
)

// codeOf is the code in an answer: its longest fenced block, or the text.
func codeOf(answer string) string {
	best := ""
	for _, m := range reCodeFences.FindAllStringSubmatch(answer, -1) {
		if len(m[1]) > len(best) {
			best = m[1]
		}
	}
	if best == "" {
		return answer
	}
	return best
}

// concerns reads a program's text as a grader does.
func concerns(code string) []concern {
	var out []concern
	isGo := strings.Contains(code, "func ") && !strings.Contains(code, "def ")
	if isGo {
		src := code
		if !strings.HasPrefix(strings.TrimSpace(src), "package ") {
			src = "package p\n" + src
		}
		if _, err := parser.ParseFile(token.NewFileSet(), "", src, 0); err != nil {
			out = append(out, concern{"it does not parse", 4})
		}
	} else if unbalanced(code) {
		out = append(out, concern{"it is cut off: its brackets do not balance", 4})
	}
	body := reDefLine.Split(code, 2)
	if reStubBody.MatchString(code) && (len(body) < 2 || len(strings.Fields(reStubBody.ReplaceAllString(body[len(body)-1], ""))) < 12) {
		out = append(out, concern{"the function body is a stub", 5})
	}
	if !reReturn.MatchString(code) {
		out = append(out, concern{"it never returns a value", 3})
	}
	if reTopPrint.MatchString(code) {
		out = append(out, concern{"it prints at the top level, which a caller does not expect", 1})
	}
	if rePlacehold.MatchString(code) {
		out = append(out, concern{"it keeps a placeholder comment", 1})
	}
	return out
}

// unbalanced reports whether brackets outside strings and comments do not
// balance (a cut-off answer).
func unbalanced(code string) bool {
	depth := 0
	for _, line := range strings.Split(code, "\n") {
		inStr := byte(0)
		for i := 0; i < len(line); i++ {
			c := line[i]
			switch {
			case inStr != 0:
				if c == '\\' {
					i++
				} else if c == inStr {
					inStr = 0
				}
			case c == '#':
				i = len(line)
			case c == '"' || c == '\'':
				inStr = c
			case strings.IndexByte("([{", c) >= 0:
				depth++
			case strings.IndexByte(")]}", c) >= 0:
				depth--
			}
		}
	}
	return depth != 0
}

// seenQuality is the quality (0..5) a grader takes a program to have: 5
// less what its concerns cost, and a level off now and then.
func seenQuality(g *Gen, answer string) (int, []concern) {
	cs := concerns(codeOf(answer))
	q := 5
	for _, c := range cs {
		q -= c.weight
	}
	if x := g.Float(); x < 0.15 {
		q--
	} else if x < 0.25 {
		q++
	}
	return min(5, max(0, q)), cs
}

func describe(cs []concern) string {
	if len(cs) == 0 {
		return "nothing stands out as wrong"
	}
	var w []string
	for _, c := range cs {
		w = append(w, c.what)
	}
	return strings.Join(w, "; ")
}

// The graders' habits.
const (
	// PositionBias is how often a pairwise grader answers "A" whatever A is.
	PositionBias = 0.08
	// SelfPreference is how often the self-preferring grader picks the
	// answer written in its own style (the generator's) whatever its
	// quality: a grader deliberately biased toward its own answers.
	SelfPreference = 0.7
)

// ownStyle recognises an answer in the simulated generator's own style.
func ownStyle(answer string) bool { return strings.HasPrefix(strings.TrimSpace(answer), Label) }

// programAnswer answers the program graders (requests about an
// instruction's answers) and the critic; ok is false for anything else.
func programAnswer(cfg Config, g *Gen, p Prompt, req *llm.Request) (any, bool) {
	if _, ok := p.Data["instruction"]; !ok {
		return nil, false
	}
	switch req.Schema.Name {
	case "scores":
		lo, hi := SchemaScale(req.Schema.JSON)
		seen, cs := seenQuality(g, p.Data["candidate"])
		scores := map[string]any{}
		for _, c := range SchemaCriteria(req.Schema.JSON) {
			v := lo + (hi-lo)*seen/5 + int(g.Next()%3) - 1
			scores[c] = min(hi, max(lo, v))
		}
		return map[string]any{"reasoning": fmt.Sprintf("%s The answer: %s; it looks like quality %d of 5.", Label, describe(cs), seen), "scores": scores}, true
	case "preference":
		a, ca := seenQuality(g, p.Data["answer_a"])
		b, cb := seenQuality(g, p.Data["answer_b"])
		ownA, ownB := ownStyle(p.Data["answer_a"]), ownStyle(p.Data["answer_b"])
		winner := "tie"
		switch {
		case cfg.SelfPreferring && ownA != ownB && g.Float() < SelfPreference:
			winner = map[bool]string{true: "A", false: "B"}[ownA]
		case g.Float() < PositionBias:
			winner = "A"
		case a > b:
			winner = "A"
		case b > a:
			winner = "B"
		}
		return map[string]any{"reasoning": fmt.Sprintf("%s A: %s. B: %s.", Label, describe(ca), describe(cb)), "winner": winner}, true
	case "critique":
		_, cs := seenQuality(g, p.Data["answer"])
		text := Label + " Your answer falls short of the reference."
		if len(cs) > 0 {
			text = Label + " Your answer has these problems: " + describe(cs) + "."
		}
		if tr := strings.TrimSpace(p.Data["test_result"]); tr != "" {
			text += " Running it gave: " + Clip(tr, 120) + "."
		}
		return map[string]any{"critique": text + " Please write a corrected answer."}, true
	}
	return nil, false
}

// SchemaCriteria lists a pointwise schema's criteria; SchemaScale its range
// (of its first criterion by name).
func SchemaCriteria(schema json.RawMessage) []string {
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

func SchemaScale(schema json.RawMessage) (int, int) {
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
