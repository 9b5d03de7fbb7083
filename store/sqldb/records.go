package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/gavelhq/gavel/record"
)

// An import holds its records in memory up to DB.ImportMemoryLimit bytes
// of bodies and moves them into records from there; beyond it, it stages
// them in a temporary table stagingBatch records at a time, so that the
// memory an import takes is bounded whatever its size.
const stagingBatch = 2000

// Import implements record.Store. fn's records are checked against the
// store and held in memory or, for a large import, staged in a temporary
// table of the import's own connection (neither takes a lock on the store),
// then moved into records in one short transaction; if fn, the context or
// the move fails, nothing is imported.
// So an import is atomic for the user, yet never holds the write lock for
// longer than the move, and a command running beside it is not locked out.
func (db *DB) Import(ctx context.Context, fn func(record.Writer) error) error {
	conn, err := db.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, db.dialect.Staging); err != nil {
		return fmt.Errorf("import: staging table: %w", err)
	}
	// The connection goes back to the pool: leave no table behind.
	defer conn.ExecContext(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS `+db.staging())
	get, err := conn.PrepareContext(ctx, `SELECT body FROM records WHERE id = $1`)
	if err != nil {
		return err
	}
	defer get.Close()
	w := &recordWriter{db: db, conn: conn, get: get, staged: map[string]string{}}
	err = fn(w)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil && w.spilled {
		err = w.flush(ctx)
	}
	if err != nil && ctx.Err() != nil {
		return ctx.Err() // a driver may report a cancelled statement otherwise
	}
	if err != nil {
		return err
	}
	if !w.spilled {
		// Straight from memory, which is the quickest way when
		// nothing was imported meanwhile; when something was, the rows
		// are staged after all, so that one check covers both ways.
		switch err := w.commit(ctx, w.moveFromMemory); {
		case err == nil:
			return nil
		case !errors.Is(err, errSkipped):
			return err
		}
		if err := w.flush(ctx); err != nil {
			return err
		}
	}
	return w.commit(ctx, w.move)
}

// errSkipped says that a move from memory skipped records that another
// command imported meanwhile.
var errSkipped = errors.New("records imported meanwhile")

// commit runs move in one transaction of the import's connection.
func (w *recordWriter) commit(ctx context.Context, move func(context.Context, *sql.Tx) error) error {
	tx, err := w.conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	if err := move(ctx, tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

type recordWriter struct {
	db   *DB
	conn *sql.Conn
	get  *sql.Stmt
	// staged maps each staged record's id to its content hash.
	staged map[string]string
	batch  []stagedRow
	// held is the size of the bodies in batch; spilled says that the
	// import outgrew ImportMemoryLimit and stages its records.
	held    int
	spilled bool
	// inserted counts the records this import really inserted, known once
	// it has committed (Put says Inserted for a record another import may
	// commit first).
	inserted int
}

// Inserted is how many records the import really inserted: after Import
// returns, what Put's Inserted answers came to once concurrent imports of
// the same records were settled.
func (w *recordWriter) Inserted() int { return w.inserted }

type stagedRow struct {
	id, hash, body, label, status, source, grp string
	at                                         any
}

func (w *recordWriter) Put(ctx context.Context, r *record.Record) (record.PutResult, error) {
	body, err := r.Canonical()
	if err != nil {
		return 0, fmt.Errorf("encode record %q: %w", r.ID, err)
	}
	hash := record.Hash(body)
	if h, ok := w.staged[r.ID]; ok {
		if h == hash {
			return record.Unchanged, nil
		}
		old, err := w.stagedBody(ctx, r.ID)
		if err != nil {
			return 0, err
		}
		return 0, conflict(r, old)
	}
	var stored string
	switch err := w.get.QueryRowContext(ctx, r.ID).Scan(&stored); {
	case err == nil:
		if stored == string(body) {
			return record.Unchanged, nil
		}
		return 0, conflict(r, stored)
	case !errors.Is(err, sql.ErrNoRows):
		return 0, fmt.Errorf("look up record %q: %w", r.ID, err)
	}
	var at any
	if !r.Outcome.At.IsZero() {
		at = r.Outcome.At.UnixNano()
	}
	w.staged[r.ID] = hash
	w.batch = append(w.batch, stagedRow{r.ID, hash, string(body), string(r.Outcome.Label),
		string(r.Outcome.Status), string(r.Outcome.Source), r.Group, at})
	w.held += len(body)
	if w.held > w.db.ImportMemoryLimit {
		w.spilled = true
	}
	if w.spilled && len(w.batch) >= stagingBatch {
		if err := w.flush(ctx); err != nil {
			return 0, err
		}
	}
	return record.Inserted, nil
}

func conflict(r *record.Record, stored string) error {
	var old record.Record
	if err := json.Unmarshal([]byte(stored), &old); err != nil {
		return fmt.Errorf("record %q: stored body unreadable: %w", r.ID, err)
	}
	return fmt.Errorf("id %q: %w (differs in %s)", r.ID, record.ErrConflict, strings.Join(record.Diff(&old, r), ", "))
}

// stagedBody is the body this import staged for an id: from the batch in
// memory, else from the staging table.
func (w *recordWriter) stagedBody(ctx context.Context, id string) (string, error) {
	for _, b := range w.batch {
		if b.id == id {
			return b.body, nil
		}
	}
	var body string
	err := w.conn.QueryRowContext(ctx, `SELECT body FROM `+w.db.staging()+` WHERE id = $1`, id).Scan(&body)
	return body, err
}

// flush stages the batch, many rows a statement. The staging table is
// temporary, so this takes no lock on the store.
func (w *recordWriter) flush(ctx context.Context) error {
	err := insertRows(w.batch, nil, func(q string, args []any) (int64, error) {
		_, err := w.conn.ExecContext(ctx, `INSERT INTO `+w.db.staging()+`
			(id, content_hash, body, label, status, source, grp, at_unix_ns) VALUES `+q, args...)
		return 0, err
	})
	if err != nil {
		return fmt.Errorf("stage records: %w", err)
	}
	w.batch, w.held = w.batch[:0], 0
	return nil
}

// moveFromMemory inserts the batch into records, in the order it came,
// and reports errSkipped when a record was imported meanwhile.
func (w *recordWriter) moveFromMemory(ctx context.Context, tx *sql.Tx) error {
	var inserted int64
	err := insertRows(w.batch, []any{w.db.timestamp()}, func(q string, args []any) (int64, error) {
		res, err := tx.ExecContext(ctx, `INSERT INTO records
			(id, content_hash, body, label, status, source, grp, at_unix_ns, imported_at) VALUES `+q+` ON CONFLICT (id) DO NOTHING`, args...)
		if err != nil {
			return 0, err
		}
		n, err := res.RowsAffected()
		inserted += n
		return n, err
	})
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if int(inserted) != len(w.batch) {
		return errSkipped
	}
	w.inserted = int(inserted)
	return nil
}

// insertRows hands exec the rows, many a statement: the placeholders'
// VALUES list and the arguments, each row's in stagedRow's field order
// followed by extra.
func insertRows(rows []stagedRow, extra []any, exec func(values string, args []any) (int64, error)) error {
	const perStmt = 50
	width := 8 + len(extra)
	for start := 0; start < len(rows); start += perStmt {
		part := rows[start:min(start+perStmt, len(rows))]
		args := make([]any, 0, width*len(part))
		for _, b := range part {
			args = append(args, b.id, b.hash, b.body, b.label, b.status, b.source, b.grp, b.at)
			args = append(args, extra...)
		}
		values := valuesList(len(part), width)
		if _, err := exec(values, args); err != nil {
			return fmt.Errorf("records %q to %q: %w", part[0].id, part[len(part)-1].id, err)
		}
	}
	return nil
}

// move puts the staged records into records, in the order they came. A
// record another command imported meanwhile is left as it is when it is
// the same, and fails the import when it differs.
func (w *recordWriter) move(ctx context.Context, tx *sql.Tx) error {
	// Insert what is new; a record another command imported meanwhile
	// (the same id) is skipped here and checked below, which is needed
	// only when something was skipped.
	res, err := tx.ExecContext(ctx, `INSERT INTO records
		(id, content_hash, body, label, status, source, grp, at_unix_ns, imported_at)
		SELECT s.id, s.content_hash, s.body, s.label, s.status, s.source, s.grp, s.at_unix_ns, $1
		FROM `+w.db.staging()+` s WHERE true ORDER BY s.seq ON CONFLICT (id) DO NOTHING`, w.db.timestamp())
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	inserted, err := res.RowsAffected()
	if err != nil {
		return err
	}
	w.inserted = int(inserted)
	if int(inserted) == len(w.staged) {
		return nil
	}
	var id, stored, body string
	err = tx.QueryRowContext(ctx, `SELECT s.id, r.body, s.body FROM `+w.db.staging()+` s JOIN records r ON r.id = s.id
		WHERE r.body != s.body LIMIT 1`).Scan(&id, &stored, &body)
	switch {
	case err == nil:
		var r record.Record
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			return err
		}
		return conflict(&r, stored) // the caller rolls the insert back
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	// Everything staged must now be in records, word for word: nothing
	// may have been skipped for another reason.
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+w.db.staging()+` s JOIN records r ON r.id = s.id AND r.body = s.body`).Scan(&n); err != nil {
		return err
	}
	if n != len(w.staged) {
		return fmt.Errorf("import: %d of %d records could not be stored", len(w.staged)-n, len(w.staged))
	}
	return nil
}

// Records implements record.Store.
func (db *DB) Records(ctx context.Context, f record.Filter, fn func(*record.Record) error) error {
	q, args, err := db.recordQuery(ctx, f, `r.body, o.body`)
	if err != nil {
		return err
	}
	rows, err := db.db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("query records: %w", err)
	}
	defer rows.Close()
	return decodeRecords(rows, fn)
}

// decodeRecords hands fn each row's record in order, decoded by a few
// goroutines while the rows are read: JSON decoding is most of the cost of
// reading records, and it need not wait for the row before it.
func decodeRecords(rows *sql.Rows, fn func(*record.Record) error) error {
	const batch = 64
	type job struct {
		bodies [][]byte
		later  []sql.NullString
		out    []*record.Record
		err    error
		done   chan struct{}
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), 4))
	work := make(chan *job, workers)
	order := make(chan *job, 2*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range work {
				j.out = make([]*record.Record, len(j.bodies))
				for i, body := range j.bodies {
					r := &record.Record{}
					if err := decodeStored(body, r); err != nil {
						j.err = fmt.Errorf("decode stored record: %w", err)
						break
					}
					if err := effective(r, j.later[i]); err != nil {
						j.err = fmt.Errorf("decode stored outcome of %q: %w", r.ID, err)
						break
					}
					j.out[i] = r
				}
				close(j.done)
			}
		})
	}
	// The reader fills batches; the caller's goroutine (below) hands them
	// to fn in order. stop ends the reader early when fn fails.
	stop := make(chan struct{})
	var readErr error
	go func() {
		defer close(order)
		defer close(work)
		j := &job{done: make(chan struct{})}
		send := func() bool {
			select {
			case order <- j:
			case <-stop:
				return false
			}
			work <- j
			j = &job{done: make(chan struct{})}
			return true
		}
		for rows.Next() {
			var body []byte
			var later sql.NullString
			if err := rows.Scan(&body, &later); err != nil {
				readErr = err
				break
			}
			j.bodies, j.later = append(j.bodies, body), append(j.later, later)
			if len(j.bodies) == batch && !send() {
				return
			}
		}
		if readErr == nil {
			readErr = rows.Err()
		}
		if len(j.bodies) > 0 {
			send()
		}
	}()
	var err error
	for j := range order {
		<-j.done
		if err != nil {
			continue // drain, so the reader and the workers end
		}
		if j.err != nil {
			err = j.err
		}
		for _, r := range j.out {
			if err != nil || r == nil {
				break
			}
			// Meta was stored canonical; keep its exact bytes.
			err = fn(r)
		}
		if err != nil {
			close(stop)
		}
	}
	wg.Wait()
	if err != nil {
		return err
	}
	return readErr
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// recordQuery is the query of the records a filter keeps, in their order,
// selecting cols.
func (db *DB) recordQuery(ctx context.Context, f record.Filter, cols string) (string, []any, error) {
	var where []string
	var args []any
	// arg adds an argument and returns its placeholder.
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	from := `records r` + latestOutcome
	if f.Split != "" {
		if err := db.splitExists(ctx, f.Split); err != nil {
			return "", nil, err
		}
		from += ` JOIN split_members m ON m.record_id = r.id AND m.split = ` + arg(f.Split)
		if f.Part != "" {
			from += ` AND m.part = ` + arg(string(f.Part))
		}
	}
	in := func(col string, vals []string, not bool) {
		if len(vals) == 0 {
			return
		}
		op := "IN"
		if not {
			op = "NOT IN"
		}
		ps := make([]string, len(vals))
		for i, v := range vals {
			ps[i] = arg(v)
		}
		where = append(where, fmt.Sprintf("%s %s (%s)", col, op, strings.Join(ps, ", ")))
	}
	// Labels and statuses are the latest outcome's.
	in("r.id", f.IDs, false)
	in("COALESCE(o.label, r.label)", strs(f.Labels), false)
	in("COALESCE(o.status, r.status)", strs(f.Statuses), false)
	in("COALESCE(o.status, r.status)", strs(f.ExcludeStatus), true)
	if f.Group != "" {
		where = append(where, "r.grp = "+arg(f.Group))
	}
	// The filter picks the records' sequence numbers and the outer query
	// reads the rows in that order by their key: ordering the selected
	// rows themselves would sort their bodies (kilobytes each) in a
	// temporary tree.
	sub := `SELECT r.seq FROM ` + from
	if len(where) > 0 {
		sub += ` WHERE ` + strings.Join(where, " AND ")
	}
	q := `SELECT ` + cols + ` FROM records r` + latestOutcome + ` WHERE r.seq IN (` + sub + `) ORDER BY r.seq`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	return q, args, nil
}

// Members implements record.MemberLister: what a sample needs of each
// record a filter keeps (its id, group and latest label), without the
// records' bodies.
func (db *DB) Members(ctx context.Context, f record.Filter) ([]record.Member, error) {
	q, args, err := db.recordQuery(ctx, f, `r.id, r.grp, COALESCE(o.label, r.label)`)
	if err != nil {
		return nil, err
	}
	rows, err := db.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("query records: %w", err)
	}
	defer rows.Close()
	var out []record.Member
	for rows.Next() {
		var m record.Member
		var label string
		if err := rows.Scan(&m.ID, &m.Group, &label); err != nil {
			return nil, err
		}
		m.Label = record.Label(label)
		out = append(out, m)
	}
	return out, rows.Err()
}

// staging names an import's staging table.
func (db *DB) staging() string { return db.dialect.TempSchema + ".import_staging" }

// valuesList is the VALUES list of n rows of width parameters each,
// numbered from $1: ($1, $2), ($3, $4), ...
func valuesList(n, width int) string {
	key := [2]int{n, width}
	if v, ok := valuesLists.Load(key); ok {
		return v.(string)
	}
	b := make([]byte, 0, n*width*6)
	for i := range n {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, '(')
		for j := range width {
			if j > 0 {
				b = append(b, ", "...)
			}
			b = append(b, '$')
			b = strconv.AppendInt(b, int64(i*width+j+1), 10)
		}
		b = append(b, ')')
	}
	valuesLists.Store(key, string(b))
	return string(b)
}

var valuesLists sync.Map // [rows, width] -> VALUES list
