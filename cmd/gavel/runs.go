package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/runlog"
	"github.com/gavelhq/gavel/server"
	"github.com/gavelhq/gavel/store"
)

// runLog is what recording a command's run needs besides its result:
// the store and calls a.env sets, the command line and start time.
type runLog struct {
	ctx     context.Context
	store   runlog.Store
	calls   func() llm.RunStats
	models  map[string]string
	command string
	args    []string
	start   time.Time
}

// saveRun records the run of a result in the store a.env opened (none: a
// command that records no run) and says its id on stderr.
func (a *app) saveRun(res run.Result) error {
	l := a.log
	if l.store == nil {
		return nil
	}
	meta := runlog.Run{Command: l.command, Args: l.args, GavelVersion: buildVersion().Version, StartedAt: l.start, EndedAt: time.Now(), Models: l.models}
	if l.calls != nil {
		meta.Calls = l.calls()
	}
	for m := range l.models {
		meta.Simulated = meta.Simulated || isSim(m)
	}
	saved, err := run.SaveRun(l.ctx, l.store, res, meta)
	if err != nil {
		return fmt.Errorf("recording the run: %w", err)
	}
	fmt.Fprintf(a.stderr, "run %s recorded: gavel runs show %s\n", saved.ID, saved.ID)
	return nil
}

func (a *app) runsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "runs", Short: "The history of runs: each one's figures, and the records and reasoning behind them", Args: args(cobra.NoArgs)}
	var f runlog.RunFilter
	list := &cobra.Command{Use: "list", Short: "List runs, newest first", Args: args(cobra.NoArgs),
		RunE: a.withStore(func(cmd *cobra.Command, _ []string, db store.Store) error {
			rs, err := db.Runs(cmd.Context(), f)
			if err != nil {
				return err
			}
			return a.output(run.RunList(rs))
		})}
	list.Flags().StringVar(&f.Command, "command", "", "only runs of this command (eval, calibrate, bench run, ...)")
	list.Flags().StringVar(&f.Judge, "judge", "", "only runs of this judge")
	list.Flags().IntVar(&f.Limit, "limit", 50, "at most this many (0: all)")
	show := &cobra.Command{Use: "show ID", Short: "A run's command line, models and figures, as its command printed them", Args: args(cobra.ExactArgs(1)),
		RunE: a.withStore(func(cmd *cobra.Command, argv []string, db store.Store) error {
			r, err := db.Run(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			return a.output(&run.RunShown{ResultVersion: run.ResultVersion, Run: r})
		})}
	cmd.AddCommand(list, show, a.runsRecordsCmd(), a.runsExportCmd(), a.runsDiffCmd())
	return cmd
}

func (a *app) runsRecordsCmd() *cobra.Command {
	var f runlog.Filter
	var disagree, falsePass, falseFail bool
	cmd := &cobra.Command{Use: "records ID [--disagree | --false-pass | --false-fail]", Short: "A run's records: id, outcome, verdict and reasoning",
		Args: args(cobra.ExactArgs(1)),
		RunE: a.withStore(func(cmd *cobra.Command, argv []string, db store.Store) error {
			for _, w := range []struct {
				on    bool
				which runlog.Which
			}{{disagree, runlog.Disagree}, {falsePass, runlog.FalsePass}, {falseFail, runlog.FalseFail}} {
				if w.on && f.Which != "" {
					return usagef("give one of --disagree, --false-pass and --false-fail")
				} else if w.on {
					f.Which = w.which
				}
			}
			return a.outputOf(run.ReadRunRecords(cmd.Context(), db, argv[0], f))
		})}
	fl := cmd.Flags()
	fl.BoolVar(&disagree, "disagree", false, "only records whose verdict is not the outcome (unreadable answers included)")
	fl.BoolVar(&falsePass, "false-pass", false, "only pass verdicts on failures")
	fl.BoolVar(&falseFail, "false-fail", false, "only fail verdicts on passes")
	fl.StringVar(&f.Role, "role", "", "the records of this role (default the run's first, e.g. eval's judge; calibrate: 'test: original', 'train: teacher')")
	fl.StringVar(&f.Search, "search", "", "only records whose id or reasoning contains this")
	fl.IntVar(&f.Limit, "limit", 0, "at most this many (0: all)")
	fl.IntVar(&f.Offset, "offset", 0, "skip this many first")
	return cmd
}

func (a *app) runsExportCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{Use: "export ID -o FILE.jsonl", Short: "Write every record of a run, with all it knows of each, as JSONL", Args: args(cobra.ExactArgs(1)),
		RunE: a.withStore(func(cmd *cobra.Command, argv []string, db store.Store) error {
			if out == "" {
				return usagef("runs export needs -o FILE.jsonl (or -o - for standard output)")
			}
			if out == "-" && a.json {
				return usagef("--json and -o - both want standard output; write to a file")
			}
			n := 0
			err := a.writeFile(out, func(w io.Writer) (err error) {
				n, err = run.ExportRun(cmd.Context(), db, argv[0], w)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "exported %d records of run %s\n", n, argv[0])
			if a.json {
				return a.writeJSON(&run.FileResult{ResultVersion: run.ResultVersion, File: out, Records: n})
			}
			return nil
		})}
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write (- for standard output)")
	return cmd
}

func (a *app) runsDiffCmd() *cobra.Command {
	return &cobra.Command{Use: "diff ID1 ID2", Short: "The records two runs decided differently, with both reasonings", Args: args(cobra.ExactArgs(2)),
		RunE: a.withStore(func(cmd *cobra.Command, argv []string, db store.Store) error {
			return a.outputOf(run.DiffRuns(cmd.Context(), db, argv[0], argv[1]))
		})}
}

func (a *app) viewCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{Use: "view [--addr 127.0.0.1:PORT]", Short: "Read the store's runs in a browser: a read-only viewer on this machine's loopback",
		Args: args(cobra.NoArgs),
		RunE: a.withStore(func(cmd *cobra.Command, _ []string, db store.Store) error {
			ln, err := server.ListenLoopback(addr)
			if err != nil {
				return usagef("--addr: %v", err)
			}
			srv, err := server.NewViewer(db, server.Config{Log: slog.New(slog.NewTextHandler(a.stderr, nil))})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "viewing %s on http://%s/ui/runs (read-only; Ctrl-C stops)\n", a.dbPath, ln.Addr())
			return srv.Serve(cmd.Context(), ln)
		})}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8765", "loopback address to listen on, HOST:PORT (port 0: any free port)")
	return cmd
}
