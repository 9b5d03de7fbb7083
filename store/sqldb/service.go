package sqldb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
)

var _ deploy.Store = (*DB)(nil)

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// SaveCalibration keeps a calibration's result, with the split it used and
// the model, which promotion needs to evaluate on the test part.
func (db *DB) SaveCalibration(ctx context.Context, judgeName, selected, split, model string, result *refine.Result) error {
	b, err := json.Marshal(result)
	if err != nil {
		return err
	}
	_, err = db.db.ExecContext(ctx, `INSERT INTO calibrations (judge, selected, result, split, model, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		judgeName, selected, string(b), split, model, db.timestamp())
	return err
}

// Calibrations implements deploy.Store.
func (db *DB) Calibrations(ctx context.Context, judgeName string) ([]deploy.Calibration, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT id, judge, selected, split, model, result, created_at FROM calibrations
		WHERE $1 = '' OR judge = $2 ORDER BY id`, judgeName, judgeName)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []deploy.Calibration
	for rows.Next() {
		var c deploy.Calibration
		var result, at string
		if err := rows.Scan(&c.ID, &c.Judge, &c.Selected, &c.Split, &c.Model, &result, &at); err != nil {
			return nil, err
		}
		// Only the versions are read back: the result is kept whole, as
		// saved, for a later report.
		var r struct {
			Versions []struct {
				Hash string `json:"hash"`
			} `json:"versions"`
		}
		if err := json.Unmarshal([]byte(result), &r); err != nil {
			return nil, fmt.Errorf("calibration %d: %w", c.ID, err)
		}
		for _, v := range r.Versions {
			c.Versions = append(c.Versions, v.Hash)
		}
		c.At = parseTime(at)
		out = append(out, c)
	}
	return out, rows.Err()
}

func changeHash(c *deploy.Change) (string, []byte, error) {
	body, err := json.Marshal(struct {
		Task      string            `json:"task"`
		Candidate string            `json:"candidate"`
		Reference string            `json:"reference,omitempty"`
		Context   map[string]string `json:"context,omitempty"`
	}{c.Task, c.Candidate, c.Reference, c.Context})
	if err != nil {
		return "", nil, err
	}
	h := sha256.Sum256(append(body, []byte("\x00"+c.Group)...))
	return hex.EncodeToString(h[:]), body, nil
}

// SaveChange implements deploy.Store.
func (db *DB) SaveChange(ctx context.Context, c *deploy.Change) error {
	hash, body, err := changeHash(c)
	if err != nil {
		return err
	}
	return db.inTx(ctx, func(tx *sql.Tx) error {
		var stored string
		switch err := tx.QueryRowContext(ctx, `SELECT inputs_hash FROM changes WHERE id = $1`, c.ID).Scan(&stored); {
		case err == nil:
			if stored != hash {
				return fmt.Errorf("change %q: %w (its task, candidate, reference, context or group differ from the first time it was judged)", c.ID, record.ErrConflict)
			}
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO changes (id, inputs, inputs_hash, grp, created_at) VALUES ($1, $2, $3, $4, $5)`,
			c.ID, string(body), hash, c.Group, db.timestamp())
		return err
	})
}

// Change implements deploy.Store.
func (db *DB) Change(ctx context.Context, id string) (*deploy.Change, error) {
	var inputs, at string
	c := &deploy.Change{ID: id}
	err := db.db.QueryRowContext(ctx, `SELECT inputs, grp, created_at FROM changes WHERE id = $1`, id).Scan(&inputs, &c.Group, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("change %q: %w", id, record.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(inputs), c); err != nil {
		return nil, fmt.Errorf("change %q: %w", id, err)
	}
	c.ID, c.CreatedAt = id, parseTime(at)
	return c, nil
}

// SaveChangeVerdict implements deploy.Store.
func (db *DB) SaveChangeVerdict(ctx context.Context, judgeName string, v *judge.Verdict) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = db.db.ExecContext(ctx, `INSERT INTO change_verdicts (change_id, judge, prompt, model, outcome, body, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (change_id, prompt, model) DO UPDATE SET outcome = excluded.outcome, body = excluded.body,
			created_at = excluded.created_at`,
		v.RecordID, judgeName, v.Prompt, v.Model, string(v.Outcome), string(body), db.timestamp())
	if err != nil {
		return fmt.Errorf("save verdict on change %s: %w", v.RecordID, err)
	}
	return nil
}

// ChangeVerdict implements deploy.Store.
func (db *DB) ChangeVerdict(ctx context.Context, changeID, prompt, model string) (*judge.Verdict, error) {
	var body string
	err := db.db.QueryRowContext(ctx, `SELECT body FROM change_verdicts WHERE change_id = $1 AND prompt = $2 AND model = $3`,
		changeID, prompt, model).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var v judge.Verdict
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return nil, fmt.Errorf("verdict on change %s: %w", changeID, err)
	}
	return &v, nil
}

// ChangeVerdicts implements deploy.Store.
func (db *DB) ChangeVerdicts(ctx context.Context, f deploy.VerdictFilter) ([]deploy.ChangeVerdict, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT judge, body, created_at FROM change_verdicts
		WHERE ($1 = '' OR judge = $1) AND ($2 = '' OR prompt = $2) AND ($3 = '' OR model = $3) AND ($4 = '' OR change_id = $4)
		ORDER BY created_at DESC, change_id`+limitClause(f.Limit), f.Judge, f.Prompt, f.Model, f.ChangeID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []deploy.ChangeVerdict
	for rows.Next() {
		var cv deploy.ChangeVerdict
		var body, at string
		if err := rows.Scan(&cv.Judge, &body, &at); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(body), &cv.Verdict); err != nil {
			return nil, err
		}
		cv.CreatedAt = parseTime(at)
		out = append(out, cv)
	}
	return out, rows.Err()
}

// JudgedRecords implements deploy.Store.
func (db *DB) JudgedRecords(ctx context.Context, f deploy.VerdictFilter) ([]deploy.JudgedRecord, error) {
	// A record's outcome is its latest, and so is the time it is ordered by.
	rows, err := db.db.QueryContext(ctx, `SELECT v.judge, v.body, r.body, o.body FROM change_verdicts v JOIN records r ON r.id = v.change_id`+latestOutcome+`
		WHERE ($1 = '' OR v.judge = $1) AND ($2 = '' OR v.prompt = $2) AND ($3 = '' OR v.model = $3) AND ($4 = '' OR v.change_id = $4)
		ORDER BY COALESCE(o.at_unix_ns, r.at_unix_ns) NULLS FIRST, r.seq`+limitClause(f.Limit), f.Judge, f.Prompt, f.Model, f.ChangeID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []deploy.JudgedRecord
	for rows.Next() {
		var jr deploy.JudgedRecord
		var vb, rb string
		var later sql.NullString
		if err := rows.Scan(&jr.Judge, &vb, &rb, &later); err != nil {
			return nil, err
		}
		jr.Record = &record.Record{}
		if err := json.Unmarshal([]byte(rb), jr.Record); err != nil {
			return nil, err
		}
		if err := effective(jr.Record, later); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(vb), &jr.Verdict); err != nil {
			return nil, err
		}
		out = append(out, jr)
	}
	return out, rows.Err()
}

// JudgedStamp implements deploy.Store: the verdicts the filter selects
// that have a record (a verdict without one is not listed), those that
// pass, and their records' outcome versions, counted. Records never
// change, outcome versions are only added, and a verdict saved again over
// one (after its cache entry was cleared) counts among the passes if its
// outcome changed, so the counts change whenever JudgedRecords' answer
// does. Only the filter's fields are compared, so the query uses the
// verdicts' index.
func (db *DB) JudgedStamp(ctx context.Context, f deploy.VerdictFilter) (string, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"judge", f.Judge}, {"prompt", f.Prompt}, {"model", f.Model}, {"change_id", f.ChangeID}} {
		if c.v != "" {
			args = append(args, c.v)
			where = append(where, fmt.Sprintf("v.%s = $%d", c.col, len(args)))
		}
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	var judged, passes, versions int64
	err := db.db.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(CASE WHEN v.outcome = 'pass' THEN 1 END),
		COALESCE(SUM((SELECT COUNT(*) FROM record_outcomes o WHERE o.record_id = v.change_id)), 0)
		FROM change_verdicts v JOIN records r ON r.id = v.change_id`+cond, args...).Scan(&judged, &passes, &versions)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("j%d p%d o%d", judged, passes, versions), nil
}

// Activate implements deploy.Store.
func (db *DB) Activate(ctx context.Context, a *deploy.Activation) error {
	var evidence any
	if a.Evidence != nil {
		b, err := json.Marshal(a.Evidence)
		if err != nil {
			return err
		}
		evidence = string(b)
	}
	return db.inTx(ctx, func(tx *sql.Tx) error {
		var active string
		err := tx.QueryRowContext(ctx, `SELECT version FROM activations WHERE judge = $1 ORDER BY seq DESC LIMIT 1`, a.Judge).Scan(&active)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if active != a.Previous {
			return fmt.Errorf("judge %s: %w (now %.12s)", a.Judge, deploy.ErrActiveChanged, active)
		}
		now := db.Now().UTC()
		err = tx.QueryRowContext(ctx, `INSERT INTO activations (judge, version, previous, action, actor, reason, evidence, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING seq`, a.Judge, a.Version, a.Previous, a.Action, a.Actor, a.Reason, evidence,
			now.Format(time.RFC3339Nano)).Scan(&a.Seq)
		if err != nil {
			return fmt.Errorf("activate %.12s: %w", a.Version, err)
		}
		a.At = now
		return nil
	})
}

// Activations implements deploy.Store.
func (db *DB) Activations(ctx context.Context, judgeName string) ([]deploy.Activation, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT seq, judge, version, previous, action, actor, reason, COALESCE(evidence, ''), created_at
		FROM activations WHERE $1 = '' OR judge = $2 ORDER BY seq`, judgeName, judgeName)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []deploy.Activation
	for rows.Next() {
		var a deploy.Activation
		var evidence, at string
		if err := rows.Scan(&a.Seq, &a.Judge, &a.Version, &a.Previous, &a.Action, &a.Actor, &a.Reason, &evidence, &at); err != nil {
			return nil, err
		}
		if evidence != "" {
			a.Evidence = &deploy.Evidence{}
			if err := json.Unmarshal([]byte(evidence), a.Evidence); err != nil {
				return nil, fmt.Errorf("activation %d: %w", a.Seq, err)
			}
		}
		a.At = parseTime(at)
		out = append(out, a)
	}
	return out, rows.Err()
}

// SaveToken implements deploy.Store.
func (db *DB) SaveToken(ctx context.Context, t *deploy.Token) error {
	t.CreatedAt = db.Now().UTC()
	_, err := db.db.ExecContext(ctx, `INSERT INTO tokens (id, name, scope, hash, created_at) VALUES ($1, $2, $3, $4, $5)`,
		t.ID, t.Name, t.Scope, t.Hash, t.CreatedAt.Format(time.RFC3339Nano))
	return err
}

const tokenColumns = `id, name, scope, hash, created_at, COALESCE(revoked_at, '')`

func scanToken(scan func(...any) error) (*deploy.Token, error) {
	var t deploy.Token
	var at, revoked string
	if err := scan(&t.ID, &t.Name, &t.Scope, &t.Hash, &at, &revoked); err != nil {
		return nil, err
	}
	t.CreatedAt = parseTime(at)
	if revoked != "" {
		t.RevokedAt = parseTime(revoked)
	}
	return &t, nil
}

// Token implements deploy.Store.
func (db *DB) Token(ctx context.Context, id string) (*deploy.Token, error) {
	t, err := scanToken(db.db.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id = $1`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("token %q: %w", id, record.ErrNotFound)
	}
	return t, err
}

// Tokens implements deploy.Store.
func (db *DB) Tokens(ctx context.Context) ([]deploy.Token, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT `+tokenColumns+` FROM tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []deploy.Token
	for rows.Next() {
		t, err := scanToken(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, rows.Err()
}

// RevokeToken implements deploy.Store.
func (db *DB) RevokeToken(ctx context.Context, id string) error {
	res, err := db.db.ExecContext(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2`, db.timestamp(), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("token %q: %w", id, record.ErrNotFound)
	}
	return nil
}

// SaveReview implements deploy.Store.
func (db *DB) SaveReview(ctx context.Context, r *deploy.Review) error {
	r.At = db.Now().UTC()
	_, err := db.db.ExecContext(ctx, `INSERT INTO reviews (change_id, reviewer, verdict, note, created_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (change_id, reviewer) DO UPDATE SET verdict = excluded.verdict, note = excluded.note, created_at = excluded.created_at`,
		r.ChangeID, r.Reviewer, string(r.Verdict), r.Note, r.At.Format(time.RFC3339Nano))
	return err
}

// Reviews implements deploy.Store.
func (db *DB) Reviews(ctx context.Context) ([]deploy.Review, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT change_id, reviewer, verdict, note, created_at FROM reviews ORDER BY created_at, change_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []deploy.Review
	for rows.Next() {
		var r deploy.Review
		var v, at string
		if err := rows.Scan(&r.ChangeID, &r.Reviewer, &v, &r.Note, &at); err != nil {
			return nil, err
		}
		r.Verdict, r.At = record.Label(v), parseTime(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

// limitClause is " LIMIT n", or nothing for n <= 0.
func limitClause(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" LIMIT %d", n)
}
