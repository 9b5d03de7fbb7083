package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/repoctx"
	"github.com/gavelhq/gavel/run"
)

type ingestFlags struct {
	format       string
	fieldMap     string
	source       string
	gold         string
	skipInvalid  bool
	maxLineBytes int
	repo         run.Repo
}

func (a *app) ingestCmd() *cobra.Command {
	var f ingestFlags
	cmd := &cobra.Command{
		Use:   "ingest FILE...",
		Short: "Import records (agent outputs with outcomes) from JSONL files",
		Args:  args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, files []string) error {
			return a.ingest(cmd, files, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "", "input format: native, map or swebench (default native, or map when --map is given)")
	fl.StringVar(&f.fieldMap, "map", "", "field map for the map format: target=field,... (targets: id, task, candidate, reference, group, label, status, source, reason, at, meta, context.NAME)")
	fl.StringVar(&f.source, "source", "", "outcome source for records that do not give one: tests or review")
	fl.StringVar(&f.gold, "gold", "", "SWE-bench dataset JSONL with gold patches (swebench format)")
	fl.BoolVar(&f.skipInvalid, "skip-invalid", false, "import the valid lines and list the invalid ones instead of failing")
	fl.IntVar(&f.maxLineBytes, "max-line-bytes", record.DefaultMaxLineBytes, "refuse lines longer than this")
	fl.StringVar(&f.repo.Dir, "repo", "", "a local clone: add context.files, each file the change touches as it was at the record's base commit (meta base_commit, else --base)")
	fl.StringVar(&f.repo.Base, "base", "HEAD", "with --repo, the commit of records whose meta names none")
	fl.IntVar(&f.repo.MaxChars, "max-context-chars", repoctx.DefaultMaxChars, "with --repo, the files' text at most, cut at line ends around the change")
	return cmd
}

func (a *app) decoder(f ingestFlags) (record.Decoder, error) {
	dec, err := record.NewDecoder(record.DecoderOptions{Format: f.format, FieldMap: f.fieldMap, Source: f.source, Gold: f.gold})
	var oe *record.OptionError
	if errors.As(err, &oe) {
		return nil, usagef("--%v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("--%w", err)
	}
	return dec, nil
}

func (a *app) ingest(cmd *cobra.Command, files []string, f ingestFlags) error {
	dec, err := a.decoder(f)
	if err != nil {
		return err
	}
	db, err := a.openStore(cmd.Context())
	if err != nil {
		return err
	}
	defer db.Close()
	prog := a.newProgress("ingest: lines read", 0)
	res, err := run.Ingest(cmd.Context(), db, dec, files, record.ImportOptions{SkipInvalid: f.skipInvalid, MaxLineBytes: f.maxLineBytes, Progress: prog.Update}, f.repo)
	prog.Done()
	if err != nil {
		return err
	}
	return a.output(res)
}
