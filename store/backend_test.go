package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/gavelhq/gavel/store"
	"github.com/gavelhq/gavel/store/sqldb"
)

// The store suite runs every test against each implementation: SQLite
// always, PostgreSQL when GAVEL_TEST_POSTGRES names a database (CI starts
// one; under CI=true its absence is a failure). Each PostgreSQL test gets
// a schema of its own, dropped at the end.
var suite = []struct {
	name string
	test func(*testing.T)
}{
	{"MigrateEmptyDatabase", testMigrateEmptyDatabase},
	{"ImportTransaction", testImportTransaction},
	{"RecordsRoundTripAndImmutable", testRecordsRoundTripAndImmutable},
	{"RecordsFilter", testRecordsFilter},
	{"Splits", testSplits},
	{"ExecutionCache", testExecutionCache},
	{"Cache", testCache},
	{"Claims", testClaims},
	{"SharedRequestsSentOnce", testSharedRequestsSentOnce},
	{"ConcurrentOpensOfANewStore", testConcurrentOpensOfANewStore},
	{"LongImportLosesNoCacheWrite", testLongImportLosesNoCacheWrite},
	{"ImportMeetsAConcurrentImport", testImportMeetsAConcurrentImport},
	{"ServiceTables", testServiceTables},
	{"JudgesAndVerdicts", testJudgesAndVerdicts},
	{"Copy", testCopy},
}

// backend is one implementation under test.
type backend struct {
	name string
	// fresh names a new, empty store.
	fresh func(t testing.TB) string
}

// cur is the backend the running test uses (the suite's tests run one at
// a time).
var cur backend

// importLimit, when not nil, is the import memory limit of stores opened.
var importLimit *int

func setImportLimit(n int) int {
	old := 64 << 20
	if importLimit != nil {
		old = *importLimit
	}
	importLimit = &n
	return old
}

func sqliteBackend() backend {
	return backend{name: "sqlite", fresh: func(t testing.TB) string { return filepath.Join(t.TempDir(), "gavel.db") }}
}

// postgresBackend makes a schema per store in the database that
// GAVEL_TEST_POSTGRES names, and points the store's search_path at it.
func postgresBackend(t testing.TB) (backend, bool) {
	dsn := os.Getenv("GAVEL_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("GAVEL_TEST_POSTGRES is not set: CI must start PostgreSQL and name a database (see .ci/run)")
		}
		t.Log("GAVEL_TEST_POSTGRES is not set: the store suite runs on SQLite only")
		return backend{}, false
	}
	return backend{name: "postgres", fresh: func(t testing.TB) string {
		admin, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		schema := fmt.Sprintf("gavel_test_%d_%d", os.Getpid(), rand.Uint32())
		if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
			t.Fatalf("PostgreSQL at GAVEL_TEST_POSTGRES: %v", err)
		}
		t.Cleanup(func() {
			admin, err := sql.Open("pgx", dsn)
			if err == nil {
				admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
				admin.Close()
			}
		})
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}}, true
}

func backends(t testing.TB) []backend {
	out := []backend{sqliteBackend()}
	if pg, ok := postgresBackend(t); ok {
		out = append(out, pg)
	}
	return out
}

func TestStore(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			cur = b
			for _, c := range suite {
				t.Run(c.name, c.test)
			}
		})
	}
}

// freshStore names a new, empty store of the current backend.
func freshStore(t testing.TB) string { return cur.fresh(t) }

// openStore opens a store of the current backend.
func openStore(ctx context.Context, dsn string) (*sqldb.DB, error) {
	s, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	db := s.(*sqldb.DB)
	if importLimit != nil {
		db.ImportMemoryLimit = *importLimit
	}
	return db, nil
}

// MustOpenDB opens a new store, closed when the test ends.
func MustOpenDB(tb testing.TB) *sqldb.DB {
	tb.Helper()
	db, err := openStore(context.Background(), freshStore(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
