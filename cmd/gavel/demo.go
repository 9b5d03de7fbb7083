package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/store"
	"github.com/gavelhq/gavel/store/sqlite"
)

type demoFlags struct {
	out string
	cfg run.DemoConfig
}

func (a *app) demoCmd() *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole AutoRefine pipeline offline on the simulated world and write a report",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.demo(cmd, &f) },
	}
	cmd.Flags().StringVar(&f.out, "out", "", "folder for the demo's store and reports, all kept (default: a new temporary folder, whose store is removed at the end)")
	cmd.Flags().IntVar(&f.cfg.N, "n", 1200, "synthetic records")
	cmd.Flags().Uint64Var(&f.cfg.Seed, "seed", 3, "seed of the simulated world")
	cmd.Flags().IntVar(&f.cfg.Resamples, "resamples", 2000, "bootstrap resamples")
	return cmd
}

func (a *app) demo(cmd *cobra.Command, f *demoFlags) error {
	ctx := cmd.Context()
	start := time.Now()
	keep := f.out != ""
	var dbPath string
	var err error
	if f.out, dbPath, err = run.DemoFolder(f.out); err != nil {
		return err
	}
	db, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	f.cfg.GavelVersion, f.cfg.Log = buildVersion().Version, func(line string) { fmt.Fprintf(a.stderr, "[simulated] demo: %s\n", line) }
	sum, err := a.runDemo(ctx, db, f.out, f.cfg)
	if err != nil {
		return err
	}
	if !keep {
		// Without --out the store (about 100 MB of cached simulated
		// answers) is not left behind in the temporary folder.
		a.log.store = nil // the store is gone: the run is not recorded
		db.Close()
		run.RemoveStoreFiles(dbPath)
		sum.Files["store"] = ""
	}
	sum.Seconds = time.Since(start).Seconds()
	if err := a.writeFile(sum.Files["summary.json"], func(w io.Writer) error { return writeJSONTo(w, sum) }); err != nil {
		return err
	}
	return a.output(sum)
}

func writeJSONTo(w io.Writer, v any) error {
	a := &app{stdout: w}
	return a.writeJSON(v)
}

// runDemo runs the demo's study and writes its reports into out.
func (a *app) runDemo(ctx context.Context, db store.Store, out string, cfg run.DemoConfig) (*run.DemoResult, error) {
	svc := llm.NewService(registry(), db.Cache(), llm.Options{Offline: true}) // sim is local: nothing leaves the machine
	sum, rep, err := run.Demo(ctx, a.env(db, svc), db, cfg, a.stageProgress)
	if err != nil {
		return nil, err
	}
	return sum, run.WriteDemoReports(sum, rep, out, a.writeFile)
}
