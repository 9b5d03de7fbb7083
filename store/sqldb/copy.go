package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Copy copies every row of one store into another, empty one (of either
// database), in one transaction of the target: a failed copy leaves it
// empty. It moves every table of Schema with a CopyOrder. progress, when
// set, is told each table's rows.
func Copy(ctx context.Context, from, to *DB, progress func(table string, rows int)) error {
	var tables []Table
	for _, t := range Schema {
		if t.CopyOrder != "" {
			tables = append(tables, t)
		}
	}
	// Both stores have the schema of this gavel (their migrations ran on
	// opening): a difference would lose or misplace data.
	for _, db := range []*DB{from, to} {
		if err := db.CheckSchema(ctx); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
	}
	for _, t := range tables {
		var n int
		if err := to.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+t.Name).Scan(&n); err != nil {
			return fmt.Errorf("copy: target %s: %w", to.where, err)
		}
		if n > 0 {
			return fmt.Errorf("copy: the target store %s is not empty (its table %s has %d rows): copy into a new store", to.where, t.Name, n)
		}
	}
	return to.inTx(ctx, func(tx *sql.Tx) error {
		for _, t := range tables {
			n, err := copyTable(ctx, from, tx, t.Name, t.CopyOrder)
			if err != nil {
				return fmt.Errorf("copy %s: %w", t.Name, err)
			}
			if progress != nil {
				progress(t.Name, n)
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
