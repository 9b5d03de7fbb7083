// Package deploy owns a judge's life in service: its prompt versions and
// which one is active, the statistical gate that promotes a version, the
// rollback, judging a change with the active version and recording what
// happened to it, the drift monitor (by week or month) and the
// recalibration it starts, the agreement of blind human review with the
// judge and the outcomes, and the service's tokens.
//
// It knows nothing of HTTP: its errors carry a Code (invalid, not found,
// conflict, forbidden, unauthenticated, unavailable, ...) that the server
// maps to a status and the CLI to an exit code. Its Store is implemented
// by store/sqldb on SQLite and PostgreSQL.
package deploy
