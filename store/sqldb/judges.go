package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/teacher"
)

var _ judge.Store = (*DB)(nil)

// SavePrompt implements judge.Store.
func (db *DB) SavePrompt(ctx context.Context, p *judge.PromptVersion) error {
	spec, err := json.Marshal(p.Spec)
	if err != nil {
		return err
	}
	var parent, edits, metrics any
	if p.Parent != "" {
		parent = p.Parent
	}
	if len(p.Edits) > 0 {
		b, _ := json.Marshal(p.Edits)
		edits = string(b)
	}
	if len(p.Metrics) > 0 {
		b, _ := json.Marshal(p.Metrics)
		metrics = string(b)
	}
	// A version is stored once; what calibration learns about it later
	// (lineage, edits, metrics) is added without erasing what is known.
	_, err = db.db.ExecContext(ctx, `INSERT INTO prompt_versions (hash, judge, kind, spec, parent, iteration, note, edits, metrics, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (hash) DO UPDATE SET
			parent = COALESCE(excluded.parent, prompt_versions.parent),
			iteration = CASE WHEN excluded.iteration > 0 THEN excluded.iteration ELSE prompt_versions.iteration END,
			note = CASE WHEN excluded.note != '' THEN excluded.note ELSE prompt_versions.note END,
			edits = COALESCE(excluded.edits, prompt_versions.edits),
			metrics = COALESCE(excluded.metrics, prompt_versions.metrics)`,
		p.Hash, p.Judge, string(p.Spec.Kind), string(spec), parent, p.Iteration, p.Note, edits, metrics, db.timestamp())
	if err != nil {
		return fmt.Errorf("save prompt version %.12s: %w", p.Hash, err)
	}
	return nil
}

const promptColumns = `hash, judge, spec, COALESCE(parent, ''), iteration, note, COALESCE(edits, ''), COALESCE(metrics, ''), created_at`

func scanPrompt(rows *sql.Rows) (*judge.PromptVersion, error) {
	p := &judge.PromptVersion{Spec: &judge.Spec{}}
	var spec, edits, metrics string
	if err := rows.Scan(&p.Hash, &p.Judge, &spec, &p.Parent, &p.Iteration, &p.Note, &edits, &metrics, &p.CreatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(spec), p.Spec); err != nil {
		return nil, fmt.Errorf("prompt version %.12s: %w", p.Hash, err)
	}
	if edits != "" {
		json.Unmarshal([]byte(edits), &p.Edits)
	}
	if metrics != "" {
		json.Unmarshal([]byte(metrics), &p.Metrics)
	}
	return p, nil
}

// Prompt returns a stored prompt version by hash (or a unique prefix of
// at least four characters).
func (db *DB) Prompt(ctx context.Context, hash string) (*judge.PromptVersion, error) {
	if len(hash) < 4 {
		return nil, fmt.Errorf("prompt version %q: give at least four characters of its hash: %w", hash, judge.ErrVersionRef)
	}
	rows, err := db.db.QueryContext(ctx, `SELECT `+promptColumns+` FROM prompt_versions WHERE hash LIKE $1 || '%' LIMIT 2`, hash)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*judge.PromptVersion
	for rows.Next() {
		p, err := scanPrompt(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	switch len(out) {
	case 0:
		return nil, fmt.Errorf("no prompt version %q: %w", hash, record.ErrNotFound)
	case 2:
		return nil, fmt.Errorf("prompt version %q is ambiguous: give more of its hash: %w", hash, judge.ErrVersionRef)
	}
	return out[0], rows.Err()
}

// Prompts lists stored prompt versions, of one judge or all, oldest first.
func (db *DB) Prompts(ctx context.Context, judgeName string) ([]*judge.PromptVersion, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT `+promptColumns+` FROM prompt_versions
		WHERE $1 = '' OR judge = $2 ORDER BY created_at, iteration, hash`, judgeName, judgeName)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*judge.PromptVersion
	for rows.Next() {
		p, err := scanPrompt(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// SaveVerdicts implements judge.Store, in one transaction.
//
// A verdict the store already holds as it is (a cached rerun) is left
// alone: its row is not rewritten, and its created_at stays the time it
// was first given.
func (db *DB) SaveVerdicts(ctx context.Context, vs []judge.Verdict) error {
	// One row per verdict's key, the last given (as one statement after
	// another would leave it): a statement of many rows may not update a
	// row twice.
	last := make(map[[3]string]int, len(vs))
	for i, v := range vs {
		last[[3]string{v.RecordID, v.Prompt, v.Model}] = i
	}
	keep := make([]int, 0, len(last))
	bodies := make([]string, len(vs))
	for i, v := range vs {
		if last[[3]string{v.RecordID, v.Prompt, v.Model}] != i {
			continue
		}
		body, err := json.Marshal(v)
		if err != nil {
			return err
		}
		keep, bodies[i] = append(keep, i), string(body)
	}
	// What the store holds already, word for word, is not written at all:
	// it is read first, without the write lock, and a cached rerun writes
	// nothing. (A verdict another process rewrites in between keeps its
	// version, as if it had been written after this one.)
	held, err := db.heldVerdicts(ctx, vs, keep)
	if err != nil {
		return err
	}
	keep = slices.DeleteFunc(keep, func(i int) bool {
		b, ok := held[[3]string{vs[i].RecordID, vs[i].Prompt, vs[i].Model}]
		return ok && b == bodies[i]
	})
	if len(keep) == 0 {
		return nil
	}
	now := db.timestamp()
	return db.inTx(ctx, func(tx *sql.Tx) error {
		err := execRows(ctx, tx, `INSERT INTO verdicts (record_id, prompt, model, outcome, score, body, request_key, created_at) VALUES `,
			` ON CONFLICT (record_id, prompt, model) DO UPDATE SET outcome = excluded.outcome,
				score = excluded.score, body = excluded.body, request_key = excluded.request_key,
				created_at = excluded.created_at
			WHERE verdicts.body <> excluded.body`, 8, len(keep), func(j int, args []any) []any {
				v := &vs[keep[j]]
				return append(args, v.RecordID, v.Prompt, v.Model, string(v.Outcome), v.Score, bodies[keep[j]], v.Key, now)
			})
		if err != nil {
			return fmt.Errorf("save verdicts: %w", err)
		}
		return nil
	})
}

// heldVerdicts reads the stored bodies of the verdicts vs[keep] would
// write, by record, prompt and model.
func (db *DB) heldVerdicts(ctx context.Context, vs []judge.Verdict, keep []int) (map[[3]string]string, error) {
	byPair := map[[2]string][]string{}
	for _, i := range keep {
		pair := [2]string{vs[i].Prompt, vs[i].Model}
		byPair[pair] = append(byPair[pair], vs[i].RecordID)
	}
	held := make(map[[3]string]string, len(keep))
	const per = 500
	for pair, ids := range byPair {
		for len(ids) > 0 {
			n := min(per, len(ids))
			args := []any{pair[0], pair[1]}
			for _, id := range ids[:n] {
				args = append(args, id)
			}
			ids = ids[n:]
			rows, err := db.db.QueryContext(ctx, `SELECT record_id, body FROM verdicts WHERE prompt = $1 AND model = $2
				AND record_id IN (`+placeholdersFrom(3, n)+`)`, args...)
			if err != nil {
				return nil, fmt.Errorf("read verdicts: %w", err)
			}
			for rows.Next() {
				var id, body string
				if err := rows.Scan(&id, &body); err != nil {
					rows.Close()
					return nil, err
				}
				held[[3]string{id, pair[0], pair[1]}] = body
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, err
			}
		}
	}
	return held, nil
}

// Verdicts implements judge.Store.
func (db *DB) Verdicts(ctx context.Context, prompt, model string) (map[string]judge.Verdict, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT body FROM verdicts WHERE prompt = $1 AND model = $2`, prompt, model)
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

// SaveDecisions stores the teacher's decisions, in one transaction.
func (db *DB) SaveDecisions(ctx context.Context, ds []teacher.Decision) error {
	return db.inTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO teacher_decisions (record_id, prompt, model, action, label, body, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (record_id, prompt, model) DO UPDATE SET action = excluded.action, label = excluded.label,
				body = excluded.body, created_at = excluded.created_at`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		now := db.timestamp()
		for _, d := range ds {
			body, err := json.Marshal(d)
			if err != nil {
				return err
			}
			if _, err := stmt.ExecContext(ctx, d.RecordID, d.Prompt, d.Model, string(d.Action), string(d.Label), string(body), now); err != nil {
				return fmt.Errorf("save teacher decision on %s: %w", d.RecordID, err)
			}
		}
		return nil
	})
}
