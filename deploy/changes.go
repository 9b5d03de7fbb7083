package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
)

// CheckChangeID checks a change id as a record id (it becomes one); field
// names it in the error.
func CheckChangeID(field, id string) error {
	if err := CheckText(field, id); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(id) == "":
		return FieldErrorf(field, "missing or empty")
	case id != strings.TrimSpace(id):
		return FieldErrorf(field, "%q has leading or trailing white space", id)
	case len(id) > record.MaxIDBytes:
		return FieldErrorf(field, "longer than %d bytes", record.MaxIDBytes)
	}
	return nil
}

// CheckText refuses text no store keeps as it was given: a NUL byte
// (PostgreSQL refuses it, SQLite would keep it) or bytes that are not
// UTF-8.
func CheckText(field, s string) error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return FieldErrorf(field, "holds a NUL byte (at byte %d)", i)
	}
	if !utf8.ValidString(s) {
		return FieldErrorf(field, "is not valid UTF-8")
	}
	return nil
}

// Outcome times before this, or more than MaxFuture ahead of the clock,
// are refused: a zero or mistyped time would pass for a real one.
var (
	EarliestOutcome = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxFuture       = 24 * time.Hour
)

// CheckOutcomeTime refuses an outcome time before 2000 or more than a day
// ahead.
func CheckOutcomeTime(field string, t time.Time) error {
	switch {
	case t.Before(EarliestOutcome):
		return FieldErrorf(field, "%s is before 2000: give the time the outcome happened", t.Format(time.RFC3339))
	case t.After(time.Now().Add(MaxFuture)):
		return FieldErrorf(field, "%s is more than a day ahead of this server's clock", t.Format(time.RFC3339))
	}
	return nil
}

// Judged is a verdict on a change and whether it was given before.
type Judged struct {
	Verdict *judge.Verdict
	// Cached is set when the verdict was stored or the model's answer
	// came from the cache.
	Cached bool
	// Stored is set when the verdict was given before on this change: no
	// model call and nothing written.
	Stored bool
}

// JudgeChange judges a change with a prompt version, or answers the
// verdict already given for the same (change, version, model). The change
// and the verdict are stored only once the verdict is in; the model's
// answer is waited for at most timeout (0: no bound beyond ctx's).
func JudgeChange(ctx context.Context, st Store, client llm.Client, model string, timeout time.Duration, pv *judge.PromptVersion, c *Change) (*Judged, error) {
	if old, err := st.Change(ctx, c.ID); err == nil {
		if !SameChange(old, c) {
			return nil, Errorf(Conflict, "change %q was judged before with other inputs: a change's task, candidate, reference, context and group cannot change (give the new revision its own change_id)", c.ID)
		}
		v, err := st.ChangeVerdict(ctx, c.ID, pv.Hash, model)
		if err != nil {
			return nil, err
		}
		if v != nil {
			return &Judged{Verdict: v, Cached: true, Stored: true}, nil
		}
	} else if !errors.Is(err, record.ErrNotFound) {
		return nil, err
	}
	mctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		mctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	v, cached, err := judge.JudgeInput(mctx, client, pv.Spec, model, c.ID, c.Input())
	if err != nil {
		return nil, ModelError(err, timeout)
	}
	// The verdict is paid for: store it even if the caller went away.
	sctx := context.WithoutCancel(ctx)
	if err := st.SaveChange(sctx, c); err != nil {
		if errors.Is(err, record.ErrConflict) {
			return nil, &Error{Code: Conflict, Msg: err.Error(), Err: err}
		}
		return nil, err
	}
	if err := st.SaveChangeVerdict(sctx, pv.Judge, v); err != nil {
		return nil, err
	}
	return &Judged{Verdict: v, Cached: cached}, nil
}

// SameChange reports whether two changes hold the same inputs.
func SameChange(a, b *Change) bool {
	if a.Task != b.Task || a.Candidate != b.Candidate || a.Reference != b.Reference || a.Group != b.Group || len(a.Context) != len(b.Context) {
		return false
	}
	for k, v := range a.Context {
		if w, ok := b.Context[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// StoreFull says whether err is the store's disk being full: SQLite's
// SQLITE_FULL, PostgreSQL's disk_full (53100) or could not extend a file,
// or the system's ENOSPC. It is no model's failure, and no client's.
func StoreFull(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"database or disk is full", "disk is full", "no space left on device", "sqlstate 53100", "could not extend file"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// StoreFullError is the application error of a full store: unavailable,
// worth a retry once space is made.
func StoreFullError(err error) error {
	return &Error{Code: Unavailable, RetryAfter: time.Minute, Msg: "store unavailable: its disk is full; nothing was stored (free space, then retry)", Err: err}
}

// ModelError is a failed model call as an application error: the budget
// or a provider's trouble is Unavailable (worth a retry), a timeout
// Timeout, a provider's refusal Upstream.
func ModelError(err error, timeout time.Duration) error {
	switch {
	case StoreFull(err):
		return StoreFullError(err)
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: Timeout, Msg: fmt.Sprintf("the model did not answer within %s", timeout), Err: err}
	case errors.Is(err, llm.ErrBudget):
		return &Error{Code: Unavailable, Msg: fmt.Sprintf("the service's model budget is spent: %v", err), Err: err}
	case errors.Is(err, llm.ErrPending):
		return &Error{Code: Unavailable, Msg: fmt.Sprintf("the service runs offline and has no answer for this change yet: %v", err), Err: err}
	case errors.Is(err, llm.ErrTransient):
		return &Error{Code: Unavailable, RetryAfter: 30 * time.Second, Msg: fmt.Sprintf("the model provider is failing for now: %v", err), Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Code: Canceled, Msg: "the request was cancelled", Err: err}
	}
	return &Error{Code: Upstream, Msg: fmt.Sprintf("model call failed: %v", err), Err: err}
}

// RecordedOutcome is what recording an outcome did.
type RecordedOutcome struct {
	ChangeID string        `json:"change_id"`
	RecordID string        `json:"record_id"`
	Label    record.Label  `json:"label"`
	Status   record.Status `json:"status"`
	// Created is false when the same outcome was recorded before.
	Created bool `json:"created"`
}

// RecordOutcome stores what happened to a judged change: the change
// becomes a record (id = the change's id) with that outcome. The same
// outcome again is a no-op; a different one is refused (records are
// immutable).
func RecordOutcome(ctx context.Context, st Store, changeID string, status record.Status, reason string, at *time.Time) (*RecordedOutcome, error) {
	c, err := st.Change(ctx, changeID)
	if errors.Is(err, record.ErrNotFound) {
		return nil, &Error{Code: NotFound, Field: "change_id",
			Msg: fmt.Sprintf("field change_id: no change %q was judged by this service (POST /v1/judge first)", changeID)}
	}
	if err != nil {
		return nil, err
	}
	// The same outcome again (the usual retry of a webhook or a CI step)
	// is answered from a read, without a write.
	if stored, err := StoredRecord(ctx, st, c.ID); err != nil {
		return nil, err
	} else if stored != nil && stored.Outcome.Status == status && stored.Outcome.Reason == reason && (at == nil || stored.Outcome.At.Equal(*at)) {
		return &RecordedOutcome{ChangeID: c.ID, RecordID: stored.ID, Label: stored.Outcome.Label, Status: stored.Outcome.Status}, nil
	}
	rec := &record.Record{ID: c.ID, Task: c.Task, Candidate: c.Candidate, Reference: c.Reference, Context: c.Context,
		Group: c.Group, Outcome: record.Outcome{Status: status, Reason: reason}}
	if at != nil {
		rec.Outcome.At = at.UTC()
	} else {
		rec.Outcome.At = time.Now().UTC().Truncate(time.Second)
	}
	if err := rec.Normalize(); err != nil {
		var fe *record.FieldError
		if errors.As(err, &fe) {
			return nil, FieldErrorf(strings.TrimPrefix(fe.Field, "outcome."), "%s", fe.Msg)
		}
		return nil, err
	}
	var put record.PutResult
	var writer record.Writer
	err = st.Import(context.WithoutCancel(ctx), func(w record.Writer) error {
		var err error
		writer = w
		put, err = w.Put(ctx, rec)
		return err
	})
	// Identical outcomes at once: the store tells which import really
	// inserted the record, so exactly one answers created.
	if c, ok := writer.(interface{ Inserted() int }); ok && err == nil && put == record.Inserted && c.Inserted() == 0 {
		put = record.Unchanged
	}
	if errors.Is(err, record.ErrConflict) && at == nil {
		// Without a time the first outcome's time stands: the same
		// status and reason again is the same outcome.
		put, err = sameOutcome(ctx, st, rec)
	}
	if errors.Is(err, record.ErrConflict) {
		return nil, &Error{Code: Conflict, Msg: fmt.Sprintf("change %q already has another outcome: %v (records are immutable)", changeID, err), Err: err}
	}
	if err != nil {
		return nil, err
	}
	return &RecordedOutcome{ChangeID: c.ID, RecordID: rec.ID, Label: rec.Outcome.Label, Status: rec.Outcome.Status,
		Created: put == record.Inserted}, nil
}

// sameOutcome answers Unchanged when the stored record of rec's change has
// rec's status and reason.
func sameOutcome(ctx context.Context, st Store, rec *record.Record) (record.PutResult, error) {
	stored, err := StoredRecord(ctx, st, rec.ID)
	if err != nil {
		return 0, err
	}
	if stored != nil && stored.Outcome.Status == rec.Outcome.Status && stored.Outcome.Reason == rec.Outcome.Reason {
		return record.Unchanged, nil
	}
	return 0, fmt.Errorf("outcome %s: %w", rec.Outcome.Status, record.ErrConflict)
}

// StoredRecord returns a stored record by id, or nil.
func StoredRecord(ctx context.Context, st record.Store, id string) (*record.Record, error) {
	var out *record.Record
	err := st.Records(ctx, record.Filter{IDs: []string{id}}, func(r *record.Record) error {
		out = r
		return nil
	})
	return out, err
}
