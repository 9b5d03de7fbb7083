package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// copyTables are the tables a copy moves, parents before children, each
// with the order its rows go in (so that serial numbers and lineage keep
// their order). Claims on requests are transient and stay behind.
var copyTables = []struct{ name, order string }{
	{"records", "seq"},
	{"splits", "name"},
	{"split_members", "split, record_id"},
	{"llm_cache", "key"},
	{"prompt_versions", "created_at, hash"}, // a parent is saved before its children
	{"verdicts", "record_id, prompt, model"},
	{"teacher_decisions", "record_id, prompt, model"},
	{"calibrations", "id"},
	{"executions", "key"},
	{"changes", "id"},
	{"change_verdicts", "change_id, prompt, model"},
	{"activations", "seq"},
	{"tokens", "id"},
	{"reviews", "change_id, reviewer"},
	{"batches", "submitted_at, id"},
	{"batch_requests", "batch_id, key"},
	{"record_outcomes", "record_id, version"},
	{"http_etags", "url"},
	{"webhook_deliveries", "received_at, id"},
}

// Copy copies every row of one store into another, empty one (of either
// database), in one transaction of the target: a failed copy leaves it
// empty. progress, when set, is told each table's rows.
func Copy(ctx context.Context, from, to *DB, progress func(table string, rows int)) error {
	for _, t := range copyTables {
		var n int
		if err := to.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+t.name).Scan(&n); err != nil {
			return fmt.Errorf("copy: target %s: %w", to.where, err)
		}
		if n > 0 {
			return fmt.Errorf("copy: the target store %s is not empty (its table %s has %d rows): copy into a new store", to.where, t.name, n)
		}
	}
	return to.inTx(ctx, func(tx *sql.Tx) error {
		for _, t := range copyTables {
			n, err := copyTable(ctx, from, tx, t.name, t.order)
			if err != nil {
				return fmt.Errorf("copy %s: %w", t.name, err)
			}
			if progress != nil {
				progress(t.name, n)
			}
		}
		for _, q := range to.dialect.AfterCopy {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("copy: %w", err)
			}
		}
		return nil
	})
}

func copyTable(ctx context.Context, from *DB, tx *sql.Tx, table, order string) (int, error) {
	rows, err := from.db.QueryContext(ctx, `SELECT * FROM `+table+` ORDER BY `+order)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	ps := make([]string, len(cols))
	for i := range ps {
		ps[i] = fmt.Sprintf("$%d", i+1)
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO `+table+` (`+strings.Join(cols, ", ")+`) VALUES (`+strings.Join(ps, ", ")+`)`)
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b) // text, whichever way a driver hands it over
			}
		}
		if _, err := stmt.ExecContext(ctx, vals...); err != nil {
			return n, fmt.Errorf("row %d: %w", n+1, err)
		}
		n++
	}
	return n, rows.Err()
}
