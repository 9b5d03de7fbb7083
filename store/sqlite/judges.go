package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/gavelhq/gavel/judge"
)

var _ judge.Store = (*DB)(nil)

// SavePrompt implements judge.Store.
func (db *DB) SavePrompt(ctx context.Context, p *judge.PromptVersion) error {
	spec, err := json.Marshal(p.Spec)
	if err != nil {
		return err
	}
	var parent any
	if p.Parent != "" {
		parent = p.Parent
	}
	_, err = db.db.ExecContext(ctx, `INSERT INTO prompt_versions (hash, judge, kind, spec, parent, iteration, note, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING`,
		p.Hash, p.Judge, string(p.Spec.Kind), string(spec), parent, p.Iteration, p.Note, db.timestamp())
	if err != nil {
		return fmt.Errorf("save prompt version %.12s: %w", p.Hash, err)
	}
	return nil
}

// Prompt returns a stored prompt version by hash (or a unique prefix).
func (db *DB) Prompt(ctx context.Context, hash string) (*judge.PromptVersion, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT hash, judge, spec, COALESCE(parent, ''), iteration, note
		FROM prompt_versions WHERE hash LIKE ? || '%' LIMIT 2`, hash)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*judge.PromptVersion
	for rows.Next() {
		p := &judge.PromptVersion{Spec: &judge.Spec{}}
		var spec string
		if err := rows.Scan(&p.Hash, &p.Judge, &spec, &p.Parent, &p.Iteration, &p.Note); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(spec), p.Spec); err != nil {
			return nil, fmt.Errorf("prompt version %.12s: %w", p.Hash, err)
		}
		out = append(out, p)
	}
	switch len(out) {
	case 0:
		return nil, fmt.Errorf("no prompt version %q", hash)
	case 2:
		return nil, fmt.Errorf("prompt version %q is ambiguous: give more of its hash", hash)
	}
	return out[0], rows.Err()
}

// SaveVerdicts implements judge.Store, in one transaction.
func (db *DB) SaveVerdicts(ctx context.Context, vs []judge.Verdict) error {
	return db.inTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO verdicts
			(record_id, prompt, model, outcome, score, body, request_key, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (record_id, prompt, model) DO UPDATE SET outcome = excluded.outcome,
				score = excluded.score, body = excluded.body, request_key = excluded.request_key,
				created_at = excluded.created_at`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		now := db.timestamp()
		for _, v := range vs {
			body, err := json.Marshal(v)
			if err != nil {
				return err
			}
			if _, err := stmt.ExecContext(ctx, v.RecordID, v.Prompt, v.Model, string(v.Outcome), v.Score, string(body), v.Key, now); err != nil {
				return fmt.Errorf("save verdict on %s: %w", v.RecordID, err)
			}
		}
		return nil
	})
}

// Verdicts implements judge.Store.
func (db *DB) Verdicts(ctx context.Context, prompt, model string) (map[string]judge.Verdict, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT body FROM verdicts WHERE prompt = ? AND model = ?`, prompt, model)
	if err != nil {
		return nil, fmt.Errorf("read verdicts: %w", err)
	}
	defer rows.Close()
	out := map[string]judge.Verdict{}
	for rows.Next() {
		var body string
		if err := rows.Scan(&body); err != nil {
			return nil, err
		}
		var v judge.Verdict
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			return nil, fmt.Errorf("read verdict: %w", err)
		}
		out[v.RecordID] = v
	}
	return out, rows.Err()
}
