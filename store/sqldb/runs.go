package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/runlog"
	"github.com/gavelhq/gavel/teacher"
)

var _ runlog.Store = (*DB)(nil)

// startedAt is the runs' time format: fixed width, so that the text sorts
// as the times do.
const startedAt = "2006-01-02T15:04:05.000000000Z"

// SaveRun implements runlog.Store.
func (db *DB) SaveRun(ctx context.Context, r *runlog.Run, records []runlog.Record) error {
	r.Records = len(records)
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return db.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, command, judge, body, started_at) VALUES ($1, $2, $3, $4, $5)`,
			r.ID, r.Command, r.Judge, string(body), r.StartedAt.UTC().Format(startedAt)); err != nil {
			return fmt.Errorf("save run %s: %w", r.ID, err)
		}
		bodies := make([]string, len(records))
		for i := range records {
			rec := &records[i]
			rec.Seq = i + 1
			b, err := json.Marshal(rec)
			if err != nil {
				return err
			}
			bodies[i] = string(b)
		}
		err := execRows(ctx, tx, `INSERT INTO run_records (run_id, seq, record_id, role, outcome, verdict, reasoning, body) VALUES `, ``, 8, len(records),
			func(i int, args []any) []any {
				rec := &records[i]
				return append(args, r.ID, rec.Seq, rec.ID, rec.Role, string(rec.Outcome), string(rec.Verdict), rec.Reasoning, bodies[i])
			})
		if err != nil {
			return fmt.Errorf("save run %s: %w", r.ID, err)
		}
		return nil
	})
}

// Runs implements runlog.Store.
func (db *DB) Runs(ctx context.Context, f runlog.RunFilter) ([]*runlog.Run, error) {
	q, args := `SELECT body FROM runs WHERE 1 = 1`, []any{}
	if f.Command != "" {
		args = append(args, f.Command)
		q += fmt.Sprintf(` AND command = $%d`, len(args))
	}
	if f.Judge != "" {
		args = append(args, f.Judge)
		q += fmt.Sprintf(` AND judge = $%d`, len(args))
	}
	q += ` ORDER BY started_at DESC, id DESC`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	rows, err := db.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*runlog.Run{}
	for rows.Next() {
		var body string
		if err := rows.Scan(&body); err != nil {
			return nil, err
		}
		r := &runlog.Run{}
		if err := json.Unmarshal([]byte(body), r); err != nil {
			return nil, fmt.Errorf("a stored run: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Run implements runlog.Store: an id, or a prefix that only one run has.
func (db *DB) Run(ctx context.Context, id string) (*runlog.Run, error) {
	if id == "" {
		return nil, fmt.Errorf("run %q: %w", id, runlog.ErrNotFound)
	}
	rows, err := db.db.QueryContext(ctx, `SELECT body FROM runs WHERE id = $1 OR substr(id, 1, $2) = $3 ORDER BY id LIMIT 2`, id, len(id), id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var bodies []string
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		bodies = append(bodies, b)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	switch len(bodies) {
	case 0:
		return nil, fmt.Errorf("run %q: %w", id, runlog.ErrNotFound)
	case 2:
		return nil, fmt.Errorf("run %q: the prefix names more than one run; give more of the id", id)
	}
	r := &runlog.Run{}
	if err := json.Unmarshal([]byte(bodies[0]), r); err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	return r, nil
}

// whichSQL is the condition of a record filter over run_records.
var whichSQL = map[runlog.Which]string{
	runlog.Disagree:  `verdict <> '' AND NOT ((verdict = 'pass' AND outcome = 'pass') OR (verdict = 'fail' AND outcome = 'fail'))`,
	runlog.FalsePass: `verdict = 'pass' AND outcome = 'fail'`,
	runlog.FalseFail: `verdict = 'fail' AND outcome = 'pass'`,
	runlog.Agree:     `((verdict = 'pass' AND outcome = 'pass') OR (verdict = 'fail' AND outcome = 'fail'))`,
}

// RunRecords implements runlog.Store: the filter is applied by the
// database, and only the page asked for is read.
func (db *DB) RunRecords(ctx context.Context, id string, f runlog.Filter) ([]runlog.Record, int, error) {
	r, err := db.Run(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	where, args := `run_id = $1`, []any{r.ID}
	if f.Which != runlog.All {
		cond, ok := whichSQL[f.Which]
		if !ok {
			return nil, 0, fmt.Errorf("records of run %s: unknown selection %q", r.ID, f.Which)
		}
		where += ` AND ` + cond
	}
	if f.Role != "" {
		args = append(args, f.Role)
		where += fmt.Sprintf(` AND role = $%d`, len(args))
	}
	if f.Search != "" {
		args = append(args, "%"+strings.ToLower(f.Search)+"%")
		where += fmt.Sprintf(` AND (LOWER(record_id) LIKE $%d OR LOWER(reasoning) LIKE $%d)`, len(args), len(args))
	}
	var total int
	if err := db.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM run_records WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	order, ok := map[string]string{"": "seq", "id": "record_id, seq", "outcome": "outcome, seq", "verdict": "verdict, seq"}[f.Sort]
	if !ok {
		return nil, 0, fmt.Errorf("records of run %s: unknown order %q (want id, outcome or verdict)", r.ID, f.Sort)
	}
	q := `SELECT body FROM run_records WHERE ` + where + ` ORDER BY ` + order
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d OFFSET %d`, f.Limit, max(0, f.Offset))
	}
	rows, err := db.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []runlog.Record{}
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, 0, err
		}
		var rec runlog.Record
		if err := json.Unmarshal([]byte(b), &rec); err != nil {
			return nil, 0, fmt.Errorf("run %s: a stored record: %w", r.ID, err)
		}
		out = append(out, rec)
	}
	return out, total, rows.Err()
}

// bodies reads a JSON column's rows into one value each.
func bodies[T any](ctx context.Context, db *DB, q string, args ...any) ([]T, error) {
	rows, err := db.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		var v T
		if err := json.Unmarshal([]byte(b), &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// RecordVerdicts implements runlog.Store: oldest first.
func (db *DB) RecordVerdicts(ctx context.Context, id string) ([]judge.Verdict, error) {
	return bodies[judge.Verdict](ctx, db, `SELECT body FROM verdicts WHERE record_id = $1 ORDER BY created_at, prompt, model`, id)
}

// RecordDecisions implements runlog.Store: oldest first.
func (db *DB) RecordDecisions(ctx context.Context, id string) ([]teacher.Decision, error) {
	return bodies[teacher.Decision](ctx, db, `SELECT body FROM teacher_decisions WHERE record_id = $1 ORDER BY created_at, prompt, model`, id)
}
