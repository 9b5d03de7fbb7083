package deploy

import (
	"context"
	"errors"
	"time"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/teacher"
)

// Store is what a judge's life in service keeps: records and splits,
// prompt versions and verdicts, the changes judged and their verdicts,
// activations, calibrations, tokens and reviews. store/sqldb implements it.
type Store interface {
	record.Store
	record.OutcomeStore
	judge.Store
	Prompt(ctx context.Context, hash string) (*judge.PromptVersion, error)
	Prompts(ctx context.Context, judgeName string) ([]*judge.PromptVersion, error)

	// SaveChange stores a change the first time it is judged; the same
	// change again is a no-op, a different one under its id wraps
	// record.ErrConflict.
	SaveChange(ctx context.Context, c *Change) error
	// Change returns a stored change, or an error wrapping
	// record.ErrNotFound.
	Change(ctx context.Context, id string) (*Change, error)
	// SaveChangeVerdict stores a verdict given on a change (its RecordID
	// is the change's id), replacing one of the same (change, prompt,
	// model).
	SaveChangeVerdict(ctx context.Context, judgeName string, v *judge.Verdict) error
	// ChangeVerdict returns the stored verdict of (change, prompt, model),
	// or nil.
	ChangeVerdict(ctx context.Context, changeID, prompt, model string) (*judge.Verdict, error)
	// ChangeVerdicts lists the verdicts given on changes, newest first.
	ChangeVerdicts(ctx context.Context, f VerdictFilter) ([]ChangeVerdict, error)
	// JudgedRecords lists the verdicts on changes that have an outcome,
	// each with its change's record, in order of the outcome's time.
	JudgedRecords(ctx context.Context, f VerdictFilter) ([]JudgedRecord, error)
	// JudgedStamp is a cheap mark of what JudgedRecords would list (its
	// verdicts with a record, their passes and outcome versions counted):
	// it changes
	// whenever that could, so a figure computed from it can be kept.
	JudgedStamp(ctx context.Context, f VerdictFilter) (string, error)

	// Activate appends an activation, provided the judge's active version
	// is still a.Previous (else ErrActiveChanged): two promotions at once
	// cannot both win.
	Activate(ctx context.Context, a *Activation) error
	// Activations lists a judge's activations, oldest first (every
	// judge's when empty).
	Activations(ctx context.Context, judgeName string) ([]Activation, error)
	// Calibrations lists the stored calibrations, oldest first.
	Calibrations(ctx context.Context, judgeName string) ([]Calibration, error)
	// SaveCalibration keeps a calibration's result with its split and
	// model; SaveDecisions its teacher's decisions.
	SaveCalibration(ctx context.Context, judgeName, selected, split, model string, result *refine.Result) error
	SaveDecisions(ctx context.Context, ds []teacher.Decision) error

	SaveToken(ctx context.Context, t *Token) error
	// Token returns a token by id (revoked ones too), or an error wrapping
	// record.ErrNotFound.
	Token(ctx context.Context, id string) (*Token, error)
	Tokens(ctx context.Context) ([]Token, error)
	RevokeToken(ctx context.Context, id string) error

	// SaveReview stores a reviewer's verdict on a change, replacing their
	// earlier one.
	SaveReview(ctx context.Context, r *Review) error
	Reviews(ctx context.Context) ([]Review, error)
}

// ErrActiveChanged says that the active version changed under a promotion.
var ErrActiveChanged = errors.New("the active version changed meanwhile")

// Change is a change the service judged: what the judge saw.
type Change struct {
	ID        string            `json:"change_id"`
	Task      string            `json:"task"`
	Candidate string            `json:"candidate"`
	Reference string            `json:"reference,omitempty"`
	Context   map[string]string `json:"context,omitempty"`
	Group     string            `json:"group,omitempty"`
	CreatedAt time.Time         `json:"created_at,omitzero"`
}

// Input is the change as a judge's input.
func (c *Change) Input() judge.Input {
	return judge.Input{Task: c.Task, Candidate: c.Candidate, Reference: c.Reference, Context: c.Context}
}

// VerdictFilter selects verdicts on changes; the zero value selects all.
type VerdictFilter struct {
	Judge, Prompt, Model, ChangeID string
	// Limit keeps the newest this many (0: all).
	Limit int
}

// ChangeVerdict is a verdict on a change, with its judge and time.
type ChangeVerdict struct {
	Judge     string        `json:"judge"`
	Verdict   judge.Verdict `json:"verdict"`
	CreatedAt time.Time     `json:"created_at"`
}

// JudgedRecord is a change's record (its outcome known) with a verdict
// the service gave on it before.
type JudgedRecord struct {
	Record  *record.Record
	Judge   string
	Verdict judge.Verdict
}

// The actions that change a judge's active version.
const (
	ActionInitial  = "initial"  // a built-in judge's first use
	ActionPromote  = "promote"  // through the gate
	ActionForce    = "force"    // past the gate, with a reason
	ActionRollback = "rollback" // back to the version before
)

// Activation is one change of a judge's active version: an audit entry.
type Activation struct {
	Seq      int64     `json:"seq"`
	Judge    string    `json:"judge"`
	Version  string    `json:"version"`
	Previous string    `json:"previous,omitempty"`
	Action   string    `json:"action"`
	Actor    string    `json:"actor"`
	Reason   string    `json:"reason,omitempty"`
	Evidence *Evidence `json:"evidence,omitempty"`
	At       time.Time `json:"at"`
}

// Calibration is a stored calibration: the version it selected, the split
// it used and the model, and every version it made.
type Calibration struct {
	ID       int64     `json:"id"`
	Judge    string    `json:"judge"`
	Selected string    `json:"selected"`
	Split    string    `json:"split"`
	Model    string    `json:"model"`
	Versions []string  `json:"versions"`
	At       time.Time `json:"at"`
}

// The token scopes. Admin may do everything.
const (
	ScopeJudge    = "judge"
	ScopeFeedback = "feedback"
	ScopeAdmin    = "admin"
	ScopeReview   = "review"
)

// Scopes lists the scopes.
var Scopes = []string{ScopeJudge, ScopeFeedback, ScopeAdmin, ScopeReview}

// Token is an API token as stored: its secret only as a hash.
type Token struct {
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"`
	Scope     string    `json:"scope"`
	Hash      string    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// Review is a blind human verdict on a change.
type Review struct {
	ChangeID string       `json:"change_id"`
	Reviewer string       `json:"reviewer"`
	Verdict  record.Label `json:"verdict"`
	Note     string       `json:"note,omitempty"`
	At       time.Time    `json:"at"`
}
