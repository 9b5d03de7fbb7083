// Package store holds gavel's storage implementations. The interfaces they
// satisfy are defined by the packages that use them (record.Store, and later
// the stores of verdicts, prompt versions and the model cache), so that a
// second implementation (PostgreSQL, for teams sharing one store) can follow
// without touching callers.
//
// Subpackage sqlite is the embedded default: pure Go (modernc.org/sqlite, no
// cgo), WAL journal, foreign keys on, migrations embedded and applied in
// transactions.
package store
