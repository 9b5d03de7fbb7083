package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gavelhq/gavel/bench"
	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/deploy"
	"golang.org/x/term"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/project"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/store"
)

// Exit codes, as DESIGN.md section 6 fixes them.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitPending = 3 // stopped with model calls pending; rerun to resume
	// exitNoVerdict: a gate got no verdict (the service unreachable, a
	// timeout, an unreadable answer): not a failed change.
	exitNoVerdict = 4
)

// app holds what every command shares: global flags and the process's
// streams.
type app struct {
	dbPath, configPath string
	json               bool

	stdin          io.Reader
	stdout, stderr io.Writer
	// progress is true when stderr is a terminal.
	progress bool
	// log is the run being recorded (runs.go).
	log runLog
}

// gateError is a CI gate that did not pass (exit code 1): the command's
// output was written as usual, so with --json no error object follows it.
type gateError struct{ err error }

func (e gateError) Error() string { return e.err.Error() }
func (e gateError) Unwrap() error { return e.err }

// noVerdictExit is a gate left without a verdict: exit code 4, or 0 (with
// a warning) when --on-no-verdict pass lets it through.
type noVerdictExit struct {
	err  error
	pass bool
}

func (e noVerdictExit) Error() string { return e.err.Error() }
func (e noVerdictExit) Unwrap() error { return e.err }

// usageError marks an error in how gavel was called (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// writableTarget checks that a file can be written where path says: its
// folder exists and takes a new file.
func writableTarget(path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".gavel-check-*")
	if err != nil {
		return usagef("--report %s cannot be written: %v", path, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// reportWritten says where a report went.
func (a *app) reportWritten(path string) {
	if path != "" && path != "-" {
		fmt.Fprintf(a.stderr, "report written to %s\n", path)
	}
}

// normalizeModels writes every model flag (--model, --*-model,
// --generator; a comma-separated panel element by element) as
// PROVIDER:NAME, or refuses it with the provider that serves it.
func normalizeModels(cmd *cobra.Command) error {
	var err error
	reg := registry()
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Value.Type() != "string" || (f.Name != "model" && f.Name != "generator" && !strings.HasSuffix(f.Name, "-model")) {
			return
		}
		v, nerr := reg.NormalizeList(f.Value.String())
		if nerr != nil {
			err = usagef("--%s: %v", f.Name, nerr)
		} else if v != f.Value.String() {
			f.Value.Set(v)
		}
	})
	return err
}

// nearestFlag is the command's flag closest to a mistyped one (at most two
// edits away), or "".
func nearestFlag(cmd *cobra.Command, typed string) string {
	best, bestD := "", 3
	visit := func(f *pflag.Flag) {
		if d := bench.Levenshtein(typed, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return best
}

// execute runs gavel with args and returns the process exit code.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, progress: isTerminal(stderr), log: runLog{args: args}}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	if se := (run.StopError{}); !errors.As(err, &se) {
		// A provider that kept failing for reasons that pass: resumable.
		err = run.Stopped(err, 0)
	}
	err = cliWording(err)
	if errors.Is(err, llm.ErrNoPrice) {
		err = fmt.Errorf("--max-cost: %w (--prices FILE)", err)
	}
	code := exitFailed
	var ue usageError
	var pe project.UsageError
	var se run.StopError
	var nv noVerdictExit
	switch {
	case errors.As(err, &nv) && nv.pass:
		code = exitOK
		fmt.Fprintf(stderr, "gavel: warning: %v; passing, as --on-no-verdict pass says\n", err)
	case errors.As(err, &nv):
		code = exitNoVerdict
		fmt.Fprintf(stderr, "gavel: %v\n", err)
	case errors.As(err, &ue), errors.As(err, &pe), strings.HasPrefix(err.Error(), "unknown command"),
		deploy.ErrorCode(err) == deploy.Invalid, deploy.ErrorCode(err) == deploy.NotFound:
		code = exitUsage
		fmt.Fprintf(stderr, "gavel: %v\nRun 'gavel --help' for usage.\n", err)
	case errors.As(err, &se):
		code = exitPending
		fmt.Fprintf(stderr, "gavel: stopped: %v\n", err)
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "gavel: interrupted; nothing half-written was kept")
	default:
		fmt.Fprintf(stderr, "gavel: %v\n", err)
	}
	// With --json, stdout always carries a JSON object, failures included
	// (a failed gate has written its output already).
	if ge := (gateError{}); (a.json || slices.Contains(args, "--json")) && !errors.As(err, &ge) {
		out := map[string]any{"error": err.Error(), "exit_code": code}
		if code == exitPending {
			out["stopped"] = se.Why
			out["pending"] = se.Pending
		}
		b, _ := json.Marshal(out)
		fmt.Fprintf(stdout, "%s\n", b)
	}
	return code
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:               "gavel",
		Short:             "Calibrate, benchmark and use LLM judges of machine-written code",
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	defaultDB := os.Getenv("GAVEL_DB")
	if defaultDB == "" {
		defaultDB = "./gavel.db"
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.dbPath, "db", defaultDB, "path of the SQLite store (env GAVEL_DB)")
	pf.BoolVar(&a.json, "json", false, "print a machine-readable JSON summary on stdout")
	pf.StringVar(&a.configPath, "config", "", "the project file (env "+project.EnvVar+"; default ./"+project.FileName+" when there is one)")
	unisolated := pf.Bool("allow-unisolated", os.Getenv("GAVEL_ALLOW_UNISOLATED") != "", "run untrusted programs (exec, bench build, acr, workers) even where the kernel refuses the namespaces that isolate them; each result says what did not hold (env GAVEL_ALLOW_UNISOLATED)")
	// A report that cannot be written fails before the work, not after.
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		a.log.ctx, a.log.command, a.log.start = cmd.Context(), strings.TrimPrefix(cmd.CommandPath(), "gavel "), time.Now()
		bexec.AllowUnisolated(*unisolated)
		if err := a.applyProject(cmd); err != nil {
			return err
		}
		if err := normalizeModels(cmd); err != nil {
			return err
		}
		fl := cmd.Flags().Lookup("report")
		if fl == nil || fl.Value.String() == "" || fl.Value.String() == "-" {
			return nil
		}
		return writableTarget(fl.Value.String())
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			if near := nearestFlag(cmd, name); near != "" {
				err = fmt.Errorf("%w; did you mean --%s?", err, near)
			}
		}
		return usageError{err}
	})
	// Commands by what they work on, as 'gavel --help' lists them.
	groups := []struct {
		id, title string
		cmds      []*cobra.Command
	}{
		{"records", "Records and outcomes:", []*cobra.Command{a.ingestCmd(), a.importCmd(), a.recordsCmd(), a.splitCmd(), a.simCmd()}},
		{"judges", "Judges and their calibration:", []*cobra.Command{a.judgeCmd(), a.evalCmd(), a.teachCmd(), a.calibrateCmd(),
			a.promptsCmd(), a.noiseCmd(), a.driftCmd(), a.agreementCmd(), a.demoCmd(), a.runsCmd(), a.viewCmd()}},
		{"data", "Benchmarks and training data:", []*cobra.Command{a.benchCmd(), a.execCmd(), a.acrCmd()}},
		{"models", "Models, their calls and the store:", []*cobra.Command{a.askCmd(), a.batchCmd(), a.cacheCmd(), a.dbCmd(), a.workerCmd(), a.initCmd(), a.configCmd(), a.versionCmd()}},
		{"service", "The service and its clients:", []*cobra.Command{a.serveCmd(), a.tokenCmd(), a.promoteCmd(), a.rollbackCmd(),
			a.gateCmd(), a.reportOutcomeCmd()}},
	}
	for _, g := range groups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, c := range g.cmds {
			c.GroupID = g.id
			root.AddCommand(c)
		}
	}
	setHelp(root)
	return root
}

// openStore opens the store named by --db.
func (a *app) openStore(ctx context.Context) (store.Store, error) {
	return store.Open(ctx, a.dbPath)
}

// writeJSON prints v as indented JSON on stdout.
func (a *app) writeJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// result is a use case's typed result: marshalled, the --json output;
// written as text, what the command prints.
type result interface{ WriteText(io.Writer) error }

// outputOf is output of a use case's result, or its error.
func (a *app) outputOf(res result, err error) error {
	if err != nil {
		return err
	}
	return a.output(res)
}

// output prints a result, as JSON with --json, else as text; what it warns
// of goes to stderr.
func (a *app) output(res result) error {
	if w, ok := res.(interface{ Warnings() []string }); ok {
		for _, s := range w.Warnings() {
			fmt.Fprintf(a.stderr, "warning: %s\n", s)
		}
	}
	if err := a.saveRun(res); err != nil {
		return err
	}
	if a.json {
		return a.writeJSON(res)
	}
	return res.WriteText(a.stdout)
}

// args returns a cobra argument validator whose errors are usage errors.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// env is the use cases' environment over a store and a model service, with
// progress on stderr.
func (a *app) env(db store.Store, svc *llm.Service) *run.Env {
	a.log.store, a.log.calls = db, svc.Stats
	return &run.Env{Store: db, Client: svc, Stats: svc.Stats,
		Progress: func(label string, total int) run.Progress { return a.newProgress(label, total) }}
}

// flagNames are the flags of configuration fields whose names differ.
var flagNames = map[string]string{"tune_on": "tune-threshold-on"}

// flagError is an error reworded for the command line; its chain is the
// original's.
type flagError struct {
	msg string
	err error
}

func (e flagError) Error() string { return e.msg }
func (e flagError) Unwrap() error { return e.err }

// cliWording names the flag of the configuration field an application
// error is about ("field tune_on: ..." becomes "--tune-threshold-on: ..."):
// the packages below speak of fields, the command line of flags.
func cliWording(err error) error {
	var de *deploy.Error
	if !errors.As(err, &de) || de.Field == "" {
		return err
	}
	rest, ok := strings.CutPrefix(de.Msg, "field "+de.Field+": ")
	if !ok {
		return err
	}
	flag := flagNames[de.Field]
	if flag == "" {
		flag = strings.ReplaceAll(de.Field, "_", "-")
	}
	return flagError{strings.Replace(err.Error(), de.Msg, "--"+flag+": "+rest, 1), err}
}

// withStore is a RunE that runs fn with the store --db names open.
func (a *app) withStore(fn func(cmd *cobra.Command, argv []string, db store.Store) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, argv []string) error {
		db, err := a.openStore(cmd.Context())
		if err != nil {
			return err
		}
		defer db.Close()
		return fn(cmd, argv, db)
	}
}
