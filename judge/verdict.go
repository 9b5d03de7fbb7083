package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gavelhq/gavel/llm"
)

// Outcome is a verdict's decision. Invalid is an answer that could not be
// read: it is kept and counted, never mapped to pass or fail.
type Outcome string

// The outcomes.
const (
	Pass    Outcome = "pass"
	Fail    Outcome = "fail"
	Invalid Outcome = "invalid"
)

// Verdict is one judge's answer about one record, stored per (record,
// prompt version, model).
type Verdict struct {
	RecordID string  `json:"record_id"`
	Prompt   string  `json:"prompt"` // prompt version
	Model    string  `json:"model"`
	Outcome  Outcome `json:"outcome"`
	// Score is 1 or 0 for a binary judge, the number of passed checks for a
	// rubric judge (so thresholds can be tuned later), the weighted
	// normalised score in [0, 1] for a pointwise judge.
	Score float64 `json:"score"`
	// Checks holds a rubric judge's answer per check; Scores a pointwise
	// judge's score per criterion.
	Checks     map[string]bool `json:"checks,omitempty"`
	Scores     map[string]int  `json:"scores,omitempty"`
	Winner     string          `json:"winner,omitempty"`
	Reasoning  string          `json:"reasoning,omitempty"`
	Raw        string          `json:"raw"`
	ParseError string          `json:"parse_error,omitempty"`
	// Key is the request's cache key.
	Key string `json:"key"`
}

// Decide returns the verdict's outcome at a rubric threshold (for other
// kinds, the stored outcome).
func (v *Verdict) Decide(k Kind, threshold int) Outcome {
	if v.Outcome == Invalid || k != Rubric {
		return v.Outcome
	}
	if v.Score >= float64(threshold) {
		return Pass
	}
	return Fail
}

// ParseAnswer reads a model's answer into a verdict. An answer the model
// layer marked invalid, or one whose content does not make sense for the
// judge, gives an Invalid verdict with the reason.
func (s *Spec) ParseAnswer(resp *llm.Response) Verdict {
	v := Verdict{Raw: resp.Text, Outcome: Invalid}
	if resp.Invalid {
		v.ParseError = resp.ParseError
		return v
	}
	raw := resp.JSON
	if len(raw) == 0 {
		var err error
		if raw, err = llm.ExtractJSON(resp.Text); err != nil {
			v.ParseError = err.Error()
			return v
		}
	}
	if err := s.parseJSON(raw, &v); err != nil {
		v.Outcome = Invalid
		v.ParseError = err.Error()
	}
	return v
}

func (s *Spec) parseJSON(raw json.RawMessage, v *Verdict) error {
	var a struct {
		Reasoning string                     `json:"reasoning"`
		Verdict   string                     `json:"verdict"`
		Winner    string                     `json:"winner"`
		Checks    map[string]json.RawMessage `json:"checks"`
		Scores    map[string]json.Number     `json:"scores"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return fmt.Errorf("the answer is not a JSON object of the expected shape: %v", err)
	}
	v.Reasoning = a.Reasoning
	switch s.Kind {
	case Binary:
		switch strings.ToLower(strings.TrimSpace(a.Verdict)) {
		case "pass":
			v.Outcome, v.Score = Pass, 1
		case "fail":
			v.Outcome, v.Score = Fail, 0
		default:
			return fmt.Errorf("verdict %q is neither pass nor fail", a.Verdict)
		}
	case Rubric:
		v.Checks = map[string]bool{}
		for _, c := range s.Checks {
			rawc, ok := a.Checks[c.Name]
			if !ok {
				return fmt.Errorf("check %s is not answered", c.Name)
			}
			var ca struct {
				Answer any `json:"answer"`
			}
			if err := json.Unmarshal(rawc, &ca); err != nil {
				return fmt.Errorf("check %s: %v", c.Name, err)
			}
			yes, err := yesNo(ca.Answer)
			if err != nil {
				return fmt.Errorf("check %s: %v", c.Name, err)
			}
			v.Checks[c.Name] = yes
			if yes {
				v.Score++
			}
		}
		v.Outcome = Fail
		if v.Score >= float64(s.PassThreshold()) {
			v.Outcome = Pass
		}
	case Pairwise:
		switch w := strings.TrimSpace(a.Winner); strings.ToLower(w) {
		case "a", "b":
			v.Winner = strings.ToUpper(w)
		case "tie":
			v.Winner = "tie"
		default:
			return fmt.Errorf("winner %q is not A, B or tie", a.Winner)
		}
		v.Outcome = Pass
	case Pointwise:
		v.Scores = map[string]int{}
		total, weights := 0.0, 0.0
		for _, c := range s.Criteria {
			n, ok := a.Scores[c.Name]
			if !ok {
				return fmt.Errorf("criterion %s is not scored", c.Name)
			}
			x, err := n.Int64()
			if err != nil || int(x) < s.Scale[0] || int(x) > s.Scale[1] {
				return fmt.Errorf("criterion %s: score %s is not an integer from %d to %d", c.Name, n, s.Scale[0], s.Scale[1])
			}
			v.Scores[c.Name] = int(x)
			total += c.Weight * float64(int(x)-s.Scale[0]) / float64(s.Scale[1]-s.Scale[0])
			weights += c.Weight
		}
		if weights > 0 {
			v.Score = total / weights
		}
		v.Outcome = Pass
	}
	return nil
}

func yesNo(x any) (bool, error) {
	switch t := x.(type) {
	case bool:
		return t, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(t)) {
		case "yes", "true", "pass":
			return true, nil
		case "no", "false", "fail":
			return false, nil
		}
	}
	return false, fmt.Errorf("answer %v is neither yes nor no", x)
}

// ErrUnreadable is a stage whose model answered mostly in a form that
// cannot be read: a wrong model or server, not a finding about records.
var ErrUnreadable = errors.New("most answers cannot be read")

// UnreadableError says how many answers of a model could not be read, and
// quotes the first.
type UnreadableError struct {
	Model       string
	Bad, Of     int
	First       string
	FirstReason string
}

func (e *UnreadableError) Error() string {
	first := e.First
	if r := []rune(first); len(r) > 200 {
		first = string(r[:200]) + "…"
	}
	return fmt.Sprintf("%d of %d answers of %s cannot be read (%s); the first was %q: is the model, or its server, the right one?",
		e.Bad, e.Of, e.Model, e.FirstReason, first)
}

func (e *UnreadableError) Unwrap() error { return ErrUnreadable }

// Readable checks that at most half of a stage's answers are unreadable
// (inputs refused for their length aside, which say nothing of the
// model): more is an *UnreadableError.
func Readable(model string, n int, unreadable func(i int) (bad bool, raw, reason string)) error {
	e := &UnreadableError{Model: model}
	for i := range n {
		bad, raw, reason := unreadable(i)
		if reason == llm.InputTooLong {
			continue
		}
		e.Of++
		if bad {
			if e.Bad == 0 {
				e.First, e.FirstReason = raw, reason
			}
			e.Bad++
		}
	}
	if e.Of > 0 && 2*e.Bad > e.Of {
		return e
	}
	return nil
}

// ReadableVerdicts is Readable over verdicts.
func ReadableVerdicts(model string, vs []Verdict) error {
	return Readable(model, len(vs), func(i int) (bool, string, string) {
		return vs[i].Outcome == Invalid, vs[i].Raw, vs[i].ParseError
	})
}
