package sqldb

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Table is one table of the store as both dialects' migrations must make
// it: its columns, and how a copy (gavel db copy) moves its rows.
type Table struct {
	Name    string
	Columns []string
	// CopyOrder orders the rows a copy moves (so serial numbers and
	// lineage keep their order); empty for a table a copy leaves behind,
	// with NoCopy saying why.
	CopyOrder string
	NoCopy    string
}

// Schema describes every table of the store, parents before children:
// the order a copy fills them in. The migrations of SQLite and PostgreSQL
// are checked against it (store tests), and a copy moves exactly its
// tables with a CopyOrder, so a table added to the migrations but not here
// fails the tests instead of being left out of copies.
var Schema = []Table{
	{"records", []string{"seq", "id", "content_hash", "body", "label", "status", "source", "grp", "at_unix_ns", "imported_at"}, "seq", ""},
	{"splits", []string{"name", "spec", "created_at"}, "name", ""},
	{"split_members", []string{"split", "record_id", "part"}, "split, record_id", ""},
	{"llm_cache", []string{"key", "provider", "model", "request", "response", "input_tokens", "output_tokens", "cached_tokens", "cost_usd",
		"latency_ms", "hits", "created_at", "answered_at"}, "key", ""},
	{"llm_hits", []string{"key", "hits"}, "key", ""},
	{"llm_claims", []string{"key", "owner", "expires_ns"}, "", "claims on requests in flight are transient"},
	// A parent is saved before its children.
	{"prompt_versions", []string{"hash", "judge", "kind", "spec", "parent", "iteration", "note", "created_at", "edits", "metrics"}, "created_at, hash", ""},
	{"verdicts", []string{"record_id", "prompt", "model", "outcome", "score", "body", "request_key", "created_at"}, "record_id, prompt, model", ""},
	{"teacher_decisions", []string{"record_id", "prompt", "model", "action", "label", "body", "created_at"}, "record_id, prompt, model", ""},
	{"calibrations", []string{"id", "judge", "selected", "result", "created_at", "split", "model"}, "id", ""},
	{"executions", []string{"key", "result", "created_at"}, "key", ""},
	{"changes", []string{"id", "inputs", "inputs_hash", "grp", "created_at"}, "id", ""},
	{"change_verdicts", []string{"change_id", "judge", "prompt", "model", "outcome", "body", "created_at"}, "change_id, prompt, model", ""},
	{"activations", []string{"seq", "judge", "version", "previous", "action", "actor", "reason", "evidence", "created_at"}, "seq", ""},
	{"tokens", []string{"id", "name", "scope", "hash", "created_at", "revoked_at"}, "id", ""},
	{"reviews", []string{"change_id", "reviewer", "verdict", "note", "created_at"}, "change_id, reviewer", ""},
	{"batches", []string{"id", "provider", "state", "submitted_at", "collected_at"}, "submitted_at, id", ""},
	{"batch_requests", []string{"batch_id", "key"}, "batch_id, key", ""},
	{"record_outcomes", []string{"record_id", "version", "body", "label", "status", "source", "at_unix_ns", "origin", "recorded_at"}, "record_id, version", ""},
	{"http_etags", []string{"url", "etag", "header", "body", "stored_at"}, "url", ""},
	{"webhook_deliveries", []string{"id", "event", "result", "received_at"}, "received_at, id", ""},
	{"runs", []string{"id", "command", "judge", "body", "started_at"}, "id", ""},
	{"run_records", []string{"run_id", "seq", "record_id", "role", "outcome", "verdict", "reasoning", "body"}, "run_id, seq", ""},
}

// bookkeeping are tables that are not gavel's data: the migrations
// applied, SQLite's counters, and River's queue (its own migrations).
func bookkeeping(name string) bool {
	return name == "migrations" || name == "sqlite_sequence" || strings.HasPrefix(name, "river_")
}

// Columns lists the store's tables and their columns as the database
// has them (gavel's own tables only), columns in their order.
func (db *DB) Columns(ctx context.Context) (map[string][]string, error) {
	q := `SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table' ORDER BY m.name, p.cid`
	if db.dialect.Name == "postgres" {
		q = `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`
	}
	rows, err := db.db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", db.where, err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			return nil, err
		}
		if !bookkeeping(t) {
			out[t] = append(out[t], c)
		}
	}
	return out, rows.Err()
}

// CheckSchema compares the database's tables and columns with Schema; its
// error names every difference.
func (db *DB) CheckSchema(ctx context.Context) error {
	have, err := db.Columns(ctx)
	if err != nil {
		return err
	}
	var diffs []string
	for _, t := range Schema {
		cols, ok := have[t.Name]
		switch {
		case !ok:
			diffs = append(diffs, "table "+t.Name+" is missing")
		case !slices.Equal(sorted(cols), sorted(t.Columns)):
			diffs = append(diffs, fmt.Sprintf("table %s has columns %v, the schema says %v", t.Name, cols, t.Columns))
		}
		delete(have, t.Name)
	}
	for name := range have {
		diffs = append(diffs, "table "+name+" is not in the schema description (store/sqldb/schema.go)")
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		return fmt.Errorf("%s store %s differs from the schema: %s", db.dialect.Name, db.where, strings.Join(diffs, "; "))
	}
	return nil
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
