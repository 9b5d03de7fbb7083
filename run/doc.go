// Package run holds gavel's use cases: judging records, evaluating a judge
// against outcomes (with threshold tuning, comparison and transfer), and
// the others as they move here from cmd/gavel. Each takes its
// configuration as a struct, runs through an Env (the store, the model
// client, progress), and returns a typed, versioned result that is the
// JSON contract: --json marshals it, the report renders it, the store
// keeps it. Errors about the configuration are coded (deploy.Invalid) and
// name the configuration field, which the CLI turns into its flag.
package run
