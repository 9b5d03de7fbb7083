package acr

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"

	"github.com/gavelhq/gavel/llm"
)

// ChatMessage is one turn of a training record, in the chat format SFT
// trainers read (OpenAI fine-tuning, TRL, axolotl). Weight, on assistant
// turns of two-turn records, follows OpenAI's fine-tuning format: 0 keeps
// the model's own flawed first answer out of the loss, 1 trains on the
// reference answer that follows the critique.
type ChatMessage struct {
	Role    llm.Role `json:"role"`
	Content string   `json:"content"`
	Weight  *int     `json:"weight,omitempty"`
}

// SFTRecord is one line of the dataset.
type SFTRecord struct {
	Messages []ChatMessage `json:"messages"`
}

// Record is the item's training record, or nil when it has none (no
// sample, or a critique that could not be read):
//   - the sample won: single-turn, instruction -> the sample;
//   - the reference won: two-turn, instruction -> the sample -> the
//     critique (as the user's turn) -> the reference.
func (it *Item) Record(system string) *SFTRecord {
	best := it.BestSample()
	if best == nil {
		return nil
	}
	var msgs []ChatMessage
	for _, m := range GeneratorMessages(system, it.Instruction.Instruction) {
		msgs = append(msgs, ChatMessage{Role: m.Role, Content: m.Content})
	}
	switch it.Branch() {
	case "single_turn":
		msgs = append(msgs, ChatMessage{Role: llm.Assistant, Content: best.Answer})
	case "critique":
		zero, one := 0, 1
		msgs = append(msgs,
			ChatMessage{Role: llm.Assistant, Content: best.Answer, Weight: &zero},
			ChatMessage{Role: llm.User, Content: it.Critique},
			ChatMessage{Role: llm.Assistant, Content: it.Instruction.Reference, Weight: &one})
	default:
		return nil
	}
	return &SFTRecord{Messages: msgs}
}

// Lineage is one line of the lineage file: where a record came from.
type Lineage struct {
	Round       int             `json:"round"`
	ID          string          `json:"id"`
	Branch      string          `json:"branch"` // single_turn, critique or skipped
	Winner      Side            `json:"winner"`
	DecidedBy   string          `json:"decided_by"`
	TestWinner  Side            `json:"test_winner,omitempty"`
	Pairwise    Judgement       `json:"pairwise"`
	BestSample  int             `json:"best_sample"` // the sample's index (1-based)
	Samples     []*SampleResult `json:"samples"`
	Reference   *Execution      `json:"reference_exec,omitempty"`
	SkipReason  string          `json:"skip_reason,omitempty"`
	Models      LineageModels   `json:"models"`
	Prompts     LineagePrompts  `json:"prompts"`
	Weights     string          `json:"weights"`
	ExecWeight  float64         `json:"exec_weight"`
	Ties        Side            `json:"ties"`
	N           int             `json:"n"`
	Temperature float64         `json:"temperature"`
	Simulated   bool            `json:"simulated,omitempty"`
}

// LineageModels names the models of a round and the versions that
// answered.
type LineageModels struct {
	Generator        string `json:"generator"`
	GeneratorVersion string `json:"generator_version,omitempty"`
	Judge            string `json:"judge"`
	JudgeVersion     string `json:"judge_version,omitempty"`
	Critic           string `json:"critic"`
	CriticVersion    string `json:"critic_version,omitempty"`
}

// LineagePrompts are the prompt versions (content hashes) used.
type LineagePrompts struct {
	Generator string `json:"generator"`
	Pointwise string `json:"pointwise"`
	Pairwise  string `json:"pairwise"`
	Critic    string `json:"critic"`
}

func hashText(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Lineage returns the item's lineage line.
func (r *Round) Lineage(it *Item, simulated bool) Lineage {
	c := r.cfg
	l := Lineage{Round: c.Round, ID: it.Instruction.ID, Branch: it.Branch(), Winner: it.Decision.Winner,
		DecidedBy: it.Decision.DecidedBy, TestWinner: it.Decision.TestWinner, Pairwise: it.Judgement,
		Samples: briefSamples(it.Samples), Reference: brief(it.RefExec), Weights: c.Weights.String(), ExecWeight: c.ExecWeight, Ties: c.Ties,
		N: c.N, Temperature: c.Temperature, Simulated: simulated,
		Models: LineageModels{Generator: c.Generator, GeneratorVersion: it.Versions["generator"], Judge: c.JudgeModel,
			JudgeVersion: it.Versions["judge"], Critic: c.CriticModel, CriticVersion: it.Versions["critic"]},
		Prompts: LineagePrompts{Generator: hashText(c.System), Pointwise: c.Pointwise.ShortVersion(),
			Pairwise: c.Pairwise.ShortVersion(), Critic: hashText(criticSystem, criticUser)},
	}
	if b := it.BestSample(); b != nil {
		l.BestSample = b.Index
	}
	if l.Branch == "skipped" {
		l.SkipReason = "the critique could not be read: " + it.CritiqueError
		if it.BestSample() == nil {
			l.SkipReason = "no sample"
		}
	}
	return l
}

// brief is an execution without its output: the lineage keeps the status
// and the reason (the output, up to 2 KB a program, would make a paper-scale
// lineage file gigabytes long).
func brief(e *Execution) *Execution {
	if e == nil {
		return nil
	}
	c := *e
	c.Output = ""
	return &c
}

func briefSamples(ss []*SampleResult) []*SampleResult {
	out := make([]*SampleResult, len(ss))
	for i, s := range ss {
		c := *s
		c.Exec = brief(s.Exec)
		out[i] = &c
	}
	return out
}

// Write writes the dataset (one SFT record per item that has one) and the
// lineage (one line per item, in the same order).
func (r *Round) Write(data, lineage io.Writer, simulated bool) error {
	de := json.NewEncoder(data)
	de.SetEscapeHTML(false)
	le := json.NewEncoder(lineage)
	le.SetEscapeHTML(false)
	for _, it := range r.Items {
		if rec := it.Record(r.cfg.System); rec != nil {
			if err := de.Encode(rec); err != nil {
				return err
			}
		}
		if err := le.Encode(r.Lineage(it, simulated)); err != nil {
			return err
		}
	}
	return nil
}

// NextInstructions are the instructions for the next round, each with the
// round's winner as its reference: the sample where it won, else the
// reference kept. Items without a sample keep theirs.
func (r *Round) NextInstructions() []*Instruction {
	out := make([]*Instruction, len(r.Items))
	for i, it := range r.Items {
		in := *it.Instruction
		if b := it.BestSample(); b != nil && it.Decision.Winner == Sample {
			in.Reference = b.Answer
		}
		out[i] = &in
	}
	return out
}
