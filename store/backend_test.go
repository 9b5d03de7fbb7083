package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gavelhq/gavel/internal/pgtest"
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
	{"CacheHitsAreReads", testCacheHitsAreReads},
	{"Claims", testClaims},
	{"ClaimsOfDeadProcesses", testClaimsOfDeadProcesses},
	{"AnswerReleasesItsClaim", testAnswerReleasesItsClaim},
	{"CacheClear", testCacheClear},
	{"SharedRequestsSentOnce", testSharedRequestsSentOnce},
	{"ConcurrentOpensOfANewStore", testConcurrentOpensOfANewStore},
	{"LongImportLosesNoCacheWrite", testLongImportLosesNoCacheWrite},
	{"ImportMeetsAConcurrentImport", testImportMeetsAConcurrentImport},
	{"ServiceTables", testServiceTables},
	{"JudgesAndVerdicts", testJudgesAndVerdicts},
	{"Copy", testCopy},
	{"Schema", testSchema},
	{"OutcomeVersions", testOutcomeVersions},
	{"ConcurrentIdenticalImports", testConcurrentIdenticalImports},
	{"ETags", testETags},
	{"Runs", testRuns},
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
// GAVEL_TEST_POSTGRES names.
func postgresBackend(t testing.TB) (backend, bool) {
	if !pgtest.Available(t) {
		t.Log("GAVEL_TEST_POSTGRES is not set: the store suite runs on SQLite only")
		return backend{}, false
	}
	return backend{name: "postgres", fresh: pgtest.Fresh}, true
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
