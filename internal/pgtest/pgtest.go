// Package pgtest gives tests a PostgreSQL store of their own: a fresh
// schema in the database that GAVEL_TEST_POSTGRES names, dropped when the
// test ends.
package pgtest

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// Env is the variable naming the test database.
const Env = "GAVEL_TEST_POSTGRES"

// Available reports whether a test database is named. Under CI=true its
// absence fails the test: CI starts PostgreSQL (see .ci/run).
func Available(t testing.TB) bool {
	t.Helper()
	if os.Getenv(Env) != "" {
		return true
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(Env + " is not set: CI must start PostgreSQL and name a database (see .ci/run)")
	}
	return false
}

// Fresh makes an empty schema and returns the database URL with its
// search_path pointing at it.
func Fresh(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(Env)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	schema := fmt.Sprintf("gavel_test_%d_%d", os.Getpid(), rand.Uint32())
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("PostgreSQL at %s: %v", Env, err)
	}
	t.Cleanup(func() {
		if admin, err := sql.Open("pgx", dsn); err == nil {
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
}
