// Package runlog is the history of gavel's runs: every command that
// judges, evaluates, teaches, calibrates, benchmarks or builds training
// data leaves a Run in the store, with one Record for every record it
// decided about, so that any figure it printed can be opened down to the
// records behind it and the judge's reasoning on each.
package runlog

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/teacher"
)

// Run is one run of a command.
type Run struct {
	ID string `json:"id"`
	// Command is the command's path below gavel ("eval", "bench run").
	Command string `json:"command"`
	// Args is the command line, secrets replaced by "REDACTED".
	Args         []string `json:"args"`
	GavelVersion string   `json:"gavel_version"`
	Judge        string   `json:"judge,omitempty"`
	// Prompts are the prompt versions that judged, in the order the
	// command names them (the judge's first).
	Prompts []string `json:"prompts,omitempty"`
	// Models are the models the run called, each with the base URL it
	// went to ("" for the provider's default).
	Models map[string]string `json:"models,omitempty"`
	// Split is the records' split and part (NAME:PART; NAME for all
	// three).
	Split     string       `json:"split,omitempty"`
	Simulated bool         `json:"simulated"`
	StartedAt time.Time    `json:"started_at"`
	EndedAt   time.Time    `json:"ended_at"`
	Calls     llm.RunStats `json:"calls"`
	// Result is the command's --json output: its figures.
	Result json.RawMessage `json:"result"`
	// Text is what the command printed (its figures as a person read
	// them).
	Text string `json:"text"`
	// Roles name what the run did with its records, the main first: a
	// record's Role is one of them (calibrate: "test: calibrated", "test:
	// original", "train: teacher").
	Roles []string `json:"roles,omitempty"`
	// Detail is what a page of the run shows beyond its result
	// (calibrate: the calibration with every version and edit).
	Detail json.RawMessage `json:"detail,omitempty"`
	// Records counts the run's records.
	Records int `json:"records"`
}

// Record is what a run decided about one record.
type Record struct {
	// Seq orders a run's records (the order the command read them).
	Seq int    `json:"seq"`
	ID  string `json:"id"`
	// Part is the split part the record was in (calibrate: train, val,
	// test); Role what the run did with it (e.g. "test: calibrated").
	Part string `json:"part,omitempty"`
	Role string `json:"role,omitempty"`
	// Outcome is the recorded label and status.
	Outcome record.Label  `json:"outcome"`
	Status  record.Status `json:"status,omitempty"`
	// Verdict is the judge's (at the run's threshold), with its prompt
	// version, reasoning, score and per-check answers; Invalid why an
	// answer could not be read.
	Verdict   judge.Outcome   `json:"verdict,omitempty"`
	Prompt    string          `json:"prompt,omitempty"`
	Reasoning string          `json:"reasoning,omitempty"`
	Score     *float64        `json:"score,omitempty"`
	Checks    map[string]bool `json:"checks,omitempty"`
	Scores    map[string]int  `json:"scores,omitempty"`
	Invalid   string          `json:"invalid_reason,omitempty"`
	// Teacher is the teacher's decision on the record's label.
	Teacher *Teacher `json:"teacher,omitempty"`
	// Blind is the teacher's prediction of the outcome without seeing it.
	Blind *Blind `json:"blind,omitempty"`
	// Cut says the record's inputs were cut to --max-input-chars.
	Cut bool `json:"inputs_cut,omitempty"`
	// Known is a benchmark program's known score (0..5; Outcome is pass
	// when it works, 3 or more) and Program the program itself; Score is
	// then the predicted score.
	Known   *int            `json:"known_score,omitempty"`
	Program json.RawMessage `json:"program,omitempty"`
}

// Teacher is a teacher's decision on one label.
type Teacher struct {
	Model         string       `json:"model,omitempty"`
	Action        string       `json:"action"`
	Label         record.Label `json:"label,omitempty"`
	Justification string       `json:"justification,omitempty"`
}

// Blind is a label-blind prediction.
type Blind struct {
	Model     string       `json:"model,omitempty"`
	Predicted record.Label `json:"predicted"`
	Reason    string       `json:"reason,omitempty"`
}

// Agrees says whether the verdict matches the outcome (an invalid or
// missing verdict agrees with nothing).
func (r Record) Agrees() bool {
	return (r.Verdict == judge.Pass && r.Outcome == record.Pass) || (r.Verdict == judge.Fail && r.Outcome == record.Fail)
}

// FalsePass is a pass verdict on a failure; FalseFail a fail verdict on a
// pass.
func (r Record) FalsePass() bool { return r.Verdict == judge.Pass && r.Outcome == record.Fail }
func (r Record) FalseFail() bool { return r.Verdict == judge.Fail && r.Outcome == record.Pass }

// Which selects a run's records.
type Which string

const (
	All       Which = ""
	Disagree  Which = "disagree" // a verdict other than the outcome, invalid included
	FalsePass Which = "false_pass"
	FalseFail Which = "false_fail"
	Agree     Which = "agree"
)

// Filter selects and pages a run's records.
type Filter struct {
	Which Which
	// Role, when set, keeps the records of one role (calibrate: one
	// prompt on one part).
	Role string
	// Search keeps records whose id or reasoning contains it.
	Search string
	// Sort orders the records: "" (the run's order), "id", "outcome" or
	// "verdict" (then the run's order).
	Sort   string
	Offset int
	// Limit is the page size (0: all).
	Limit int
}

// Keeps says whether the filter keeps a record (Offset and Limit aside).
func (f Filter) Keeps(r *Record) bool {
	if f.Role != "" && r.Role != f.Role {
		return false
	}
	if f.Search != "" && !strings.Contains(strings.ToLower(r.ID+"\x00"+r.Reasoning), strings.ToLower(f.Search)) {
		return false
	}
	switch f.Which {
	case Disagree:
		return r.Verdict != "" && !r.Agrees()
	case FalsePass:
		return r.FalsePass()
	case FalseFail:
		return r.FalseFail()
	case Agree:
		return r.Agrees()
	}
	return true
}

// RunFilter selects runs, newest first.
type RunFilter struct {
	Command string
	Judge   string
	Limit   int
}

// ErrNotFound is a run that is not in the store.
var ErrNotFound = errors.New("no such run")

// Store keeps runs.
type Store interface {
	// SaveRun stores a run and its records in one transaction.
	SaveRun(ctx context.Context, r *Run, records []Record) error
	// Runs lists runs, newest first.
	Runs(ctx context.Context, f RunFilter) ([]*Run, error)
	// Run returns a run by its id or a unique prefix of it.
	Run(ctx context.Context, id string) (*Run, error)
	// RunRecords returns the page of a run's records the filter selects,
	// in their order, and how many it selects in all.
	RunRecords(ctx context.Context, id string, f Filter) ([]Record, int, error)
	// RecordVerdicts are every verdict the store keeps on a record (each
	// prompt version's, each model's); RecordDecisions every teacher
	// decision on its label.
	RecordVerdicts(ctx context.Context, id string) ([]judge.Verdict, error)
	RecordDecisions(ctx context.Context, id string) ([]teacher.Decision, error)
}

// secretFlags are flags whose value is a secret.
var secretFlags = []string{"token", "secret", "password", "key", "github-webhook-secret"}

// Redact is a command line with secrets replaced: the values of flags
// named like secrets (--token, --api-key, --github-webhook-secret, ...),
// and the passwords of URLs (postgres://user:PASSWORD@host/db).
func Redact(args []string) []string {
	out := make([]string, len(args))
	secret := func(flag string) bool {
		name := strings.ToLower(strings.TrimLeft(flag, "-"))
		for _, s := range secretFlags {
			if name == s || strings.HasSuffix(name, "-"+s) || strings.HasPrefix(name, s+"-") {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if name, _, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "--") && secret(name) {
			out[i] = name + "=REDACTED"
			continue
		}
		if strings.HasPrefix(a, "--") && secret(a) && i+1 < len(args) {
			out[i], out[i+1] = a, "REDACTED"
			i++
			continue
		}
		out[i] = redactURL(a)
	}
	return out
}

// redactURL hides the password of a URL anywhere in s (a flag's value
// included).
func redactURL(s string) string {
	prefix, rest := "", s
	if i := strings.Index(s, "://"); i > 0 {
		// The URL starts after a flag's "=".
		if j := strings.LastIndex(s[:i], "="); j >= 0 {
			prefix, rest = s[:j+1], s[j+1:]
		}
	} else {
		return s
	}
	u, err := url.Parse(rest)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "REDACTED")
		return prefix + u.String()
	}
	return s
}
