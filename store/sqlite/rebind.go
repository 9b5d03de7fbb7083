package sqlite

import (
	"context"
	"database/sql/driver"
	"strconv"
	"sync"

	"modernc.org/sqlite"
)

// The store's queries number their parameters ($1, $2, ...), which both
// SQLite and PostgreSQL bind. SQLite binds a numbered parameter by its
// name, though, which costs a string per parameter per statement: a third
// of an import's time. So this connection rewrites a query whose
// parameters appear once each, in order, to plain ? placeholders, and
// passes any other query through unchanged.

// rebind is the query with $1..$n as ?, when each appears once, in order.
func rebind(q string) string {
	if v, ok := rebound.Load(q); ok {
		return v.(string)
	}
	out := make([]byte, 0, len(q))
	next := 1
	inString := false
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c == '\'' {
			inString = !inString
		}
		if c != '$' || inString {
			out = append(out, c)
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(q[i+1 : j])
		if err != nil || n != next {
			rebound.Store(q, q)
			return q
		}
		next++
		out = append(out, '?')
		i = j - 1
	}
	s := string(out)
	rebound.Store(q, s)
	return s
}

var rebound sync.Map // query -> rewritten query

// connector opens connections of the SQLite driver that rebind queries.
type connector struct{ dsn string }

func (c connector) Connect(context.Context) (driver.Conn, error) {
	conn, err := (&sqlite.Driver{}).Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return rebindConn{conn}, nil
}

func (c connector) Driver() driver.Driver { return &sqlite.Driver{} }

// rebindConn is a SQLite connection whose queries are rebound. It offers
// the same optional interfaces as the driver's own connection.
type rebindConn struct{ driver.Conn }

var (
	_ driver.ConnPrepareContext = rebindConn{}
	_ driver.ConnBeginTx        = rebindConn{}
	_ driver.ExecerContext      = rebindConn{}
	_ driver.QueryerContext     = rebindConn{}
	_ driver.Pinger             = rebindConn{}
	_ driver.SessionResetter    = rebindConn{}
	_ driver.Validator          = rebindConn{}
)

func (c rebindConn) Prepare(q string) (driver.Stmt, error) { return c.Conn.Prepare(rebind(q)) }

func (c rebindConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, rebind(q))
}

func (c rebindConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c rebindConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, rebind(q), args)
}

func (c rebindConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, rebind(q), args)
}

func (c rebindConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c rebindConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c rebindConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }
