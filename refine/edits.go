package refine

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
)

// The kinds of edit proposals.
const (
	FailReason = "fail_reason"
	PassReason = "pass_reason"
	Reword     = "reword"
	Remove     = "remove"
)

// Proposal is one proposed edit to a judge's prompt.
type Proposal struct {
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Target string `json:"target,omitempty"`
	// Count is how many disagreements proposed it (after merging);
	// Sources the records of those disagreements (its provenance).
	Count   int      `json:"count,omitempty"`
	Sources []string `json:"sources,omitempty"`
}

func (p Proposal) key() string {
	norm := func(s string) string {
		return strings.TrimRight(strings.ToLower(strings.Join(strings.Fields(s), " ")), ".")
	}
	return p.Kind + "\x00" + norm(p.Text) + "\x00" + norm(p.Target)
}

// Balance merges identical proposals and pairs every new reason to fail
// with a reason to pass, most proposed first; the unpaired reasons are
// dropped and counted (AutoRefine's balanced edits, which keep a prompt
// from drifting towards failing or passing everything). Rewordings and
// removals are kept. The result is deterministic.
func Balance(ps []Proposal) (accepted []Proposal, dropped int) {
	accepted, unpaired := BalanceEdits(ps)
	return accepted, len(unpaired)
}

// BalanceEdits is Balance with the unpaired proposals it drops.
func BalanceEdits(ps []Proposal) (accepted, unpaired []Proposal) {
	merged := map[string]*Proposal{}
	var order []string
	for _, p := range ps {
		if strings.TrimSpace(p.Text) == "" && p.Kind != Remove {
			continue
		}
		k := p.key()
		if m, ok := merged[k]; ok {
			m.Count += max(p.Count, 1)
			for _, src := range p.Sources {
				if !slices.Contains(m.Sources, src) {
					m.Sources = append(m.Sources, src)
				}
			}
			// Of spellings that differ only in case and spacing, keep the
			// one that sorts first, so the input order does not matter.
			if p.Text < m.Text {
				m.Text = p.Text
			}
			if p.Target < m.Target {
				m.Target = p.Target
			}
			continue
		}
		c := p
		c.Count = max(p.Count, 1)
		c.Sources = slices.Clone(p.Sources)
		merged[k] = &c
		order = append(order, k)
	}
	byKind := map[string][]Proposal{}
	for _, k := range order {
		m := merged[k]
		byKind[m.Kind] = append(byKind[m.Kind], *m)
	}
	for _, kind := range []string{FailReason, PassReason} {
		sort.SliceStable(byKind[kind], func(i, j int) bool {
			a, b := byKind[kind][i], byKind[kind][j]
			if a.Count != b.Count {
				return a.Count > b.Count
			}
			return a.Text < b.Text
		})
	}
	n := min(len(byKind[FailReason]), len(byKind[PassReason]))
	for i := range n {
		accepted = append(accepted, byKind[FailReason][i], byKind[PassReason][i])
	}
	unpaired = append(byKind[FailReason][n:], byKind[PassReason][n:]...)
	accepted = append(accepted, byKind[Reword]...)
	accepted = append(accepted, byKind[Remove]...)
	return accepted, unpaired
}

//go:embed prompts/proposer_system.tmpl
var proposerSystem string

//go:embed prompts/proposer_user.tmpl
var proposerUser string

//go:embed prompts/applier_system.tmpl
var applierSystem string

//go:embed prompts/applier_user.tmpl
var applierUser string

var (
	funcs          = template.FuncMap{"fence": judge.Fence}
	proposerUserT  = template.Must(template.New("proposer").Funcs(funcs).Parse(proposerUser))
	applierSystemT = template.Must(template.New("applier_system").Funcs(funcs).Parse(applierSystem))
	applierUserT   = template.Must(template.New("applier").Funcs(funcs).Parse(applierUser))
)

var proposalSchema = &llm.Schema{Name: "edit_proposals", Description: "Proposed edits to the judge's prompt.", JSON: json.RawMessage(`{
  "type": "object",
  "properties": {
    "analysis": {"type": "string"},
    "proposals": {"type": "array", "items": {
      "type": "object",
      "properties": {
        "kind": {"type": "string", "enum": ["fail_reason", "pass_reason", "reword", "remove"]},
        "text": {"type": "string"},
        "target": {"type": "string"}
      },
      "required": ["kind", "text", "target"],
      "additionalProperties": false}}
  },
  "required": ["analysis", "proposals"],
  "additionalProperties": false
}`)}

func render(t *template.Template, data any) (string, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

// ProposerRequest asks for edits from one disagreement: what the judge saw
// (its rendered system prompt and inputs), its reasoning and verdict, the
// label and the teacher's justification.
func ProposerRequest(s *judge.Spec, model string, r *record.Record, v *judge.Verdict, threshold int, justification string) (*llm.Request, error) {
	msgs, err := s.Messages(judge.InputOf(r))
	if err != nil {
		return nil, err
	}
	reasoning := v.Reasoning
	if len(v.Checks) > 0 {
		var no []string
		for _, c := range s.Checks {
			if !v.Checks[c.Name] {
				no = append(no, c.Name)
			}
		}
		reasoning += fmt.Sprintf("\n\nChecks answered no: %s.", strings.Join(no, ", "))
	}
	user, err := render(proposerUserT, map[string]any{
		"Prompt": msgs[0].Content, "Shown": s.Shown(judge.InputOf(r)), "Reasoning": reasoning,
		"Verdict": string(v.Decide(s.Kind, threshold)), "Label": string(r.Outcome.Label), "Justification": justification,
	})
	if err != nil {
		return nil, err
	}
	zero := 0.0
	return &llm.Request{Model: model, Temperature: &zero, MaxTokens: 1500, Schema: proposalSchema,
		Messages: []llm.Message{{Role: llm.System, Content: strings.TrimSpace(proposerSystem)}, {Role: llm.User, Content: user}}}, nil
}

// ParseProposals reads a proposer's answer; an unreadable one proposes
// nothing.
func ParseProposals(resp *llm.Response) []Proposal {
	if resp.Invalid {
		return nil
	}
	var a struct {
		Proposals []Proposal `json:"proposals"`
	}
	raw := resp.JSON
	if len(raw) == 0 {
		raw = json.RawMessage(resp.Text)
	}
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	var out []Proposal
	for _, p := range a.Proposals {
		switch p.Kind {
		case FailReason, PassReason, Reword, Remove:
			p.Count = 0
			out = append(out, p)
		}
	}
	return out
}

// PromptSize is what the length cap measures: the system prompt and, for
// rubric judges, the checks' questions.
func PromptSize(s *judge.Spec) int {
	n := len(s.System)
	for _, c := range s.Checks {
		n += len(c.Question)
	}
	return n
}

func applierSchema(k judge.Kind) *llm.Schema {
	if k == judge.Rubric {
		return &llm.Schema{Name: "revised_prompt_rubric", Description: "The revised prompt and checks.", JSON: json.RawMessage(`{
  "type": "object",
  "properties": {
    "system": {"type": "string"},
    "checks": {"type": "array", "items": {"type": "object",
      "properties": {"name": {"type": "string"}, "question": {"type": "string"}},
      "required": ["name", "question"], "additionalProperties": false}},
    "conflicts": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["system", "checks"],
  "additionalProperties": false
}`)}
	}
	return &llm.Schema{Name: "revised_prompt_binary", Description: "The revised prompt.", JSON: json.RawMessage(`{
  "type": "object",
  "properties": {"system": {"type": "string"}, "conflicts": {"type": "array", "items": {"type": "string"}}},
  "required": ["system"],
  "additionalProperties": false
}`)}
}

// ApplierRequest asks for the prompt rewritten with the accepted edits.
func ApplierRequest(s *judge.Spec, model string, edits []Proposal, maxChars int) (*llm.Request, error) {
	var lines []string
	for _, e := range edits {
		switch e.Kind {
		case Reword:
			lines = append(lines, fmt.Sprintf("- %s: %q -> %q", e.Kind, e.Target, e.Text))
		case Remove:
			lines = append(lines, fmt.Sprintf("- %s: %q", e.Kind, e.Target))
		default:
			lines = append(lines, fmt.Sprintf("- %s: %s", e.Kind, e.Text))
		}
	}
	checks, _ := json.MarshalIndent(s.Checks, "", "  ")
	data := map[string]any{"Rubric": s.Kind == judge.Rubric, "MaxChars": maxChars, "Chars": PromptSize(s),
		"Prompt": s.System, "Checks": string(checks), "Edits": strings.Join(lines, "\n")}
	sys, err := render(applierSystemT, data)
	if err != nil {
		return nil, err
	}
	user, err := render(applierUserT, data)
	if err != nil {
		return nil, err
	}
	zero := 0.0
	return &llm.Request{Model: model, Temperature: &zero, MaxTokens: 8192, Schema: applierSchema(s.Kind),
		Messages: []llm.Message{{Role: llm.System, Content: sys}, {Role: llm.User, Content: user}}}, nil
}

var reAction = regexp.MustCompile(`\{\{.*?\}\}`)

// ErrRejected is wrapped by the error of a revision that cannot be used.
var ErrRejected = errors.New("revision rejected")

// ErrTooLong is wrapped by the error of a revision over the length cap.
var ErrTooLong = errors.New("over the length cap")

func checkNames(cs []judge.Check) string {
	var n []string
	for _, c := range cs {
		n = append(n, c.Name)
	}
	return strings.Join(n, ", ")
}

// applied is what came of asking for a revision: the checked revision
// (nil when both were refused), a note, and the refusals on the way.
type applied struct {
	rev      *Revision
	note     string
	refusals []Refusal
}

// applyEdits asks the editor model for a revision and checks it; a
// refused revision is asked for once more with what was wrong, then given
// up (rev nil, with the reason). A retry for the length cap may leave out
// edits, which the revision lists.
func applyEdits(ctx context.Context, client llm.Client, s *judge.Spec, model string, edits []Proposal, maxChars int, minKept float64, sample func(*llm.Request)) (applied, error) {
	var out applied
	req, err := ApplierRequest(s, model, edits, maxChars)
	if err != nil {
		return out, err
	}
	sample(req)
	allowMissing := false
	for attempt := range 2 {
		resp, err := client.Complete(ctx, req)
		if err != nil {
			return out, err
		}
		rev, err := CheckRevision(s, resp, maxChars, ReviseOptions{Edits: edits, MinKept: minKept, AllowMissing: allowMissing})
		if err == nil {
			out.rev = rev
			if attempt == 1 {
				out.note = "the first revision was refused (" + out.refusals[0].Detail + "); the second was used"
			}
			return out, nil
		}
		cause := causeOf(err)
		out.refusals = append(out.refusals, Refusal{Cause: cause, Detail: err.Error()})
		allowMissing = cause == CauseOverCap
		retry := *req
		retry.Messages = append(append([]llm.Message(nil), req.Messages...),
			llm.Message{Role: llm.Assistant, Content: resp.Text},
			llm.Message{Role: llm.User, Content: fmt.Sprintf("That revision cannot be used: %v. Revise the prompt again, keeping to every rule.", err)})
		req = &retry
	}
	out.note = "the revision was refused twice (" + out.refusals[0].Detail + "; then " + out.refusals[1].Detail + "); the previous prompt was kept"
	return out, nil
}

// OneEditATarget keeps one rewording or removal of each target (the most
// proposed; then the first by text): two rewordings of one sentence would
// ask the applier for two contradictory texts. The others are returned
// apart, conflicts to count.
func OneEditATarget(edits []Proposal) (kept, conflicting []Proposal) {
	norm := func(t string) string {
		return strings.TrimRight(strings.ToLower(strings.Join(strings.Fields(t), " ")), ".")
	}
	best := map[string]int{} // target -> index in edits of the edit kept
	for i, e := range edits {
		if e.Kind != Reword && e.Kind != Remove {
			continue
		}
		t := norm(e.Target)
		j, ok := best[t]
		if !ok || e.Count > edits[j].Count || (e.Count == edits[j].Count && e.Text < edits[j].Text) {
			best[t] = i
		}
	}
	for i, e := range edits {
		if (e.Kind == Reword || e.Kind == Remove) && best[norm(e.Target)] != i {
			conflicting = append(conflicting, e)
			continue
		}
		kept = append(kept, e)
	}
	return kept, conflicting
}
