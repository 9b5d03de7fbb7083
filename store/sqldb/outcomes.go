package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gavelhq/gavel/record"
)

var _ record.OutcomeStore = (*DB)(nil)

// latestOutcome is the join that gives each record its latest outcome
// version (o.* is NULL when it has only the one it was imported with).
const latestOutcome = ` LEFT JOIN record_outcomes o ON o.record_id = r.id
	AND o.version = (SELECT MAX(x.version) FROM record_outcomes x WHERE x.record_id = r.id)`

// effective applies a later outcome's body (when there is one) to a
// record read from its stored body.
func effective(r *record.Record, later sql.NullString) error {
	if !later.Valid {
		return nil
	}
	return json.Unmarshal([]byte(later.String), &r.Outcome)
}

// AddOutcome implements record.OutcomeStore.
func (db *DB) AddOutcome(ctx context.Context, id string, o record.Outcome, origin string) (int, bool, error) {
	if err := o.Normalize(); err != nil {
		return 0, false, err
	}
	body, err := json.Marshal(&o)
	if err != nil {
		return 0, false, err
	}
	var at any
	if !o.At.IsZero() {
		at = o.At.UnixNano()
	}
	// Two writers may number the same version at once; the primary key
	// refuses the second, which reads again and, if its outcome is still
	// new, takes the next number.
	var lastErr error
	for range 5 {
		version, added := 0, false
		err := db.inTx(ctx, func(tx *sql.Tx) error {
			versions, err := outcomes(ctx, tx, id)
			if err != nil {
				return err
			}
			latest := versions[len(versions)-1]
			version = latest.Version
			if latest.Outcome.Same(&o) {
				return nil
			}
			version++
			_, err = tx.ExecContext(ctx, `INSERT INTO record_outcomes (record_id, version, body, label, status, source, at_unix_ns, origin, recorded_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, id, version, string(body), string(o.Label), string(o.Status), string(o.Source), at, origin, db.timestamp())
			added = err == nil
			return err
		})
		if err == nil || errors.Is(err, record.ErrNotFound) {
			return version, added, err
		}
		lastErr = err
	}
	return 0, false, fmt.Errorf("record %q: add outcome: %w", id, lastErr)
}

// Outcomes implements record.OutcomeStore.
func (db *DB) Outcomes(ctx context.Context, id string) ([]record.OutcomeVersion, error) {
	var out []record.OutcomeVersion
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = outcomes(ctx, tx, id)
		return err
	})
	return out, err
}

func outcomes(ctx context.Context, tx *sql.Tx, id string) ([]record.OutcomeVersion, error) {
	var body, imported string
	err := tx.QueryRowContext(ctx, `SELECT body, imported_at FROM records WHERE id = $1`, id).Scan(&body, &imported)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("record %q: %w", id, record.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	var first record.Record
	if err := json.Unmarshal([]byte(body), &first); err != nil {
		return nil, fmt.Errorf("record %q: decode: %w", id, err)
	}
	out := []record.OutcomeVersion{{Version: 1, Outcome: first.Outcome, Origin: "import", RecordedAt: parseTime(imported)}}
	rows, err := tx.QueryContext(ctx, `SELECT version, body, origin, recorded_at FROM record_outcomes WHERE record_id = $1 ORDER BY version`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v record.OutcomeVersion
		var b, at string
		if err := rows.Scan(&v.Version, &b, &v.Origin, &at); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(b), &v.Outcome); err != nil {
			return nil, fmt.Errorf("record %q outcome %d: decode: %w", id, v.Version, err)
		}
		v.RecordedAt = parseTime(at)
		out = append(out, v)
	}
	return out, rows.Err()
}
