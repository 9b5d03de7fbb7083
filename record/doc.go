// Package record owns gavel's unit of data: a Record is one recorded agent
// output (a patch or a program) together with the workflow outcome it met
// (tests passed or failed; the change landed, was abandoned or stayed a draft).
//
// The package validates records, decodes them from the input formats gavel
// imports (native JSONL, any JSONL through a field map, SWE-bench predictions),
// streams files line by line so that inputs of any size can be imported, and
// assigns records to seeded, stratified, grouped train/validation/test splits.
//
// Records are immutable once imported. Everything else gavel stores (teacher
// decisions, verdicts) refers to them by ID. The interfaces through which
// records are stored are defined here, where they are used; package
// store/sqldb implements them.
package record
