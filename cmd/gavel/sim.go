package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/store/sqlite"
)

func (a *app) simCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "The simulated world: synthetic records for trying gavel offline (--model sim)",
		Args:  args(cobra.NoArgs),
	}
	var opt sim.WorldOptions
	var out, fatal string
	records := &cobra.Command{
		Use:   "records -o FILE.jsonl",
		Short: "Write synthetic records: Go patches built from signals, with outcomes that follow them",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usagef("sim records needs -o FILE.jsonl")
			}
			if opt.N < 1 {
				return usagef("--n must be at least 1")
			}
			if fatal != "" {
				w, err := sim.ParseFatal(opt.Seed, fatal)
				if err != nil {
					return usagef("--fatal: %v", err)
				}
				opt.World = w
			}
			res, err := run.SimRecords(opt, out, a.writeFile)
			if err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(res)
			}
			fmt.Fprintf(a.stderr, "[simulated] wrote %d synthetic records to %s\n", res.Records, out)
			return nil
		},
	}
	records.Flags().IntVar(&opt.N, "n", 600, "number of records")
	records.Flags().Uint64Var(&opt.Seed, "seed", 1, "seed of the world")
	records.Flags().IntVar(&opt.Months, "months", 6, "months the records' times span")
	records.Flags().StringVar(&fatal, "fatal", "", "the world's truth: the signals that fail a change, comma-separated (none: no signal; default: drawn from the seed)")
	records.Flags().BoolVar(&opt.WithFiles, "with-files", false, "give each record context.files, the files its change touches before it (as ingest --repo adds them)")
	records.Flags().Float64Var(&opt.HiddenFailEnd, "hidden-fail-end", 0, "make the world decay: hidden failures (no visible cause) rise to this rate by the end of the span (default: no decay)")
	records.Flags().StringVarP(&out, "output", "o", "", "file to write")
	cmd.AddCommand(records, a.simStudyCmd())
	return cmd
}

// simStudyCmd runs the demo's calibrations over worlds (gavel sim study).
func (a *app) simStudyCmd() *cobra.Command {
	cfg, page := run.SimStudyConfig{Log: func(line string) { fmt.Fprintf(a.stderr, "[simulated] study: %s\n", line) }}, ""
	cmd := &cobra.Command{
		Use:   "study",
		Short: "Run the honest calibration and its controls over several simulated worlds and report each one's gain over the worlds",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Registry, cfg.GavelVersion = registry(), buildVersion().Version
			cfg.OpenStore = func(ctx context.Context, path string) (run.WorldStore, error) { return sqlite.Open(ctx, path) }
			res, err := run.SimStudy(cmd.Context(), cfg)
			if err == nil && page != "" {
				err = a.writeFile(page, res.WriteHTML)
				a.reportWritten(page)
			}
			if err != nil {
				return err
			}
			return a.output(res)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Worlds, "worlds", 5, "worlds, each drawing which signals are fatal")
	fl.Uint64Var(&cfg.FirstSeed, "first-seed", 1, "seed of the first world (the others follow)")
	fl.IntVar(&cfg.N, "n", 600, "synthetic records a world")
	fl.IntVar(&cfg.MaxIter, "max-iter", 3, "iterations of each calibration")
	fl.IntVar(&cfg.Resamples, "resamples", 1000, "bootstrap resamples")
	fl.StringVar(&cfg.Keep, "keep", "", "folder to keep each world's store in (world-SEED.db), its calibrations saved as runs to open with gavel view")
	fl.StringVar(&page, "report", "", "write the study's page (charts, every world and its runs) to this HTML file")
	return cmd
}
