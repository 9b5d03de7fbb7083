package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/server"
	"github.com/gavelhq/gavel/store"
)

// gavel's store is what the service keeps.
var _ server.Store = store.Store(nil)

type serveFlags struct {
	m          modelFlags
	addr       string
	cfg        server.Config
	recal      bool
	ropt       deploy.RecalibrateOptions
	hookSecret string
	githubURL  string
}

func (a *app) serveCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve --addr HOST:PORT --model M",
		Short: "Run the service: judge changes with each judge's active version, hear outcomes, gate promotions, watch drift, blind review",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.serve(cmd, &f) },
	}
	a.withModel(cmd, &f.m, modelUse{queue: queueRefused})
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "address to listen on, HOST:PORT (port 0: any free port)")
	fl.Int64Var(&f.cfg.BodyLimit, "body-limit", 1<<20, "largest request body, in bytes")
	fl.Int64Var(&f.cfg.WebhookBodyLimit, "webhook-body-limit", 4<<20, "largest webhook payload, in bytes (at most GitHub's 25 MB); at most 4 are read at once, the rest asked to retry")
	fl.IntVar(&f.cfg.TokenConcurrency, "token-concurrency", 32, "requests one token may have in flight at once (negative: no bound); the rest get 429")
	fl.Float64Var(&f.cfg.Rate, "rate", 20, "requests a second per token (negative: no limit)")
	fl.IntVar(&f.cfg.Burst, "burst", 0, "requests a token may send at once before --rate applies (default twice --rate)")
	fl.DurationVar(&f.cfg.ModelTimeout, "model-timeout", 2*time.Minute, "time limit of judging one change, retries included")
	fl.DurationVar(&f.cfg.ReadTimeout, "read-timeout", 30*time.Second, "time limit of reading a request")
	fl.DurationVar(&f.cfg.WriteTimeout, "write-timeout", 0, "time limit of answering a request (default --model-timeout plus 30s)")
	fl.IntVar(&f.cfg.Resamples, "resamples", 2000, "bootstrap resamples of intervals (gate, drift, agreement)")
	fl.BoolVar(&f.recal, "recalibrate", false, "when the drift monitor alerts, calibrate the active version again on the outcomes that arrived (the result is a candidate for 'gavel promote', never activated by itself)")
	fl.DurationVar(&f.ropt.Every, "drift-every", time.Hour, "with --recalibrate, how often the monitor checks each judge")
	fl.StringVar(&f.ropt.By, "drift-by", "week", "with --recalibrate, the monitor's window: week or month")
	fl.StringVar(&f.ropt.TeacherModel, "teacher-model", "", "with --recalibrate, the teacher's model (default --model)")
	fl.StringVar(&f.ropt.EditorModel, "editor-model", "", "with --recalibrate, the proposer's and applier's model (default --model)")
	fl.StringVar(&f.hookSecret, "github-webhook-secret", os.Getenv("GAVEL_GITHUB_WEBHOOK_SECRET"), "the GitHub webhook's secret (env GAVEL_GITHUB_WEBHOOK_SECRET; prefer the environment); empty: no webhook endpoint")
	fl.StringVar(&f.cfg.MetricsToken, "metrics-token", os.Getenv("GAVEL_METRICS_TOKEN"), "the bearer token /metrics asks for (env GAVEL_METRICS_TOKEN); empty: /metrics is open, fine on loopback, not on a shared host")
	fl.StringVar(&f.githubURL, "github-base-url", "", "GitHub Enterprise API URL for fetching pull requests (with GITHUB_TOKEN)")
	return cmd
}

func (a *app) serve(cmd *cobra.Command, f *serveFlags) error {
	ctx := cmd.Context()
	if isSim(f.m.model) && !f.m.simOnReal {
		return usagef("--model %s is gavel's simulated model: a service would answer real changes with simulated verdicts. "+
			"Give a real model, or --sim-on-real to try the machinery (every answer then says \"simulated\": true)", f.m.model)
	}
	db, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	svc, err := f.m.service(db, registry())
	if err != nil {
		return err
	}
	if err := svc.Preflight(ctx, f.m.model); err != nil {
		return err
	}
	f.cfg.Store, f.cfg.Client, f.cfg.Stats, f.cfg.Model = db, svc, svc.Stats, f.m.model
	f.cfg.Simulated = isSim(f.m.model)
	f.cfg.GitHubWebhookSecret = []byte(f.hookSecret)
	if os.Getenv("GITHUB_TOKEN") != "" {
		if f.cfg.GitHub, err = githubClient(db, f.githubURL, nil); err != nil {
			return err
		}
	}
	f.cfg.Log = slog.New(slog.NewTextHandler(a.stderr, nil))
	srv, err := server.New(f.cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return usagef("--addr %s: %v", f.addr, err)
	}
	if f.recal {
		mon := &deploy.Monitor{Store: db, Client: svc, Model: f.m.model, Log: f.cfg.Log,
			Boot: metrics.BootstrapOptions{Resamples: f.cfg.Resamples, Seed: f.cfg.Seed}}
		go mon.Run(ctx, f.ropt)
	}
	fmt.Fprintf(a.stderr, "listening on http://%s\n", ln.Addr())
	return srv.Serve(ctx, ln)
}

func (a *app) tokenCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Create, list and revoke the service's API tokens"}
	var scope, name string
	create := &cobra.Command{
		Use:   "create --scope judge|feedback|admin|review [--name N]",
		Short: "Create a token; it is printed once, alone on stdout, and stored only hashed",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if scope == "" {
				return usagef("--scope is required: one of %s", strings.Join(deploy.Scopes, ", "))
			}
			db, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			secret, t, err := deploy.CreateToken(cmd.Context(), db, scope, name)
			if err != nil {
				return usageError{err}
			}
			fmt.Fprintln(a.stdout, secret)
			fmt.Fprintf(a.stderr, "token %s (scope %s) created; it is shown only now\n", t.ID, t.Scope)
			return nil
		},
	}
	create.Flags().StringVar(&scope, "scope", "", "what the token may do: judge (POST /v1/judge), feedback (POST /v1/outcomes), review (the review pages), admin (everything)")
	create.Flags().StringVar(&name, "name", "", "a name to recognise it by (shown in the audit trail)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  args(cobra.NoArgs),
		RunE: a.withStore(func(cmd *cobra.Command, _ []string, db store.Store) error {
			ts, err := db.Tokens(cmd.Context())
			if err != nil {
				return err
			}
			return a.output(&run.TokensResult{ResultVersion: run.ResultVersion, Tokens: ts})
		}),
	}
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token at once",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.withStore(func(cmd *cobra.Command, argv []string, db store.Store) error {
			if err := db.RevokeToken(cmd.Context(), argv[0]); err != nil {
				if errors.Is(err, record.ErrNotFound) {
					return usageError{err}
				}
				return err
			}
			fmt.Fprintf(a.stderr, "token %s revoked\n", argv[0])
			return nil
		}),
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func (a *app) promoteCmd() *cobra.Command {
	var m modelFlags
	var opt deploy.PromoteOptions
	cmd := &cobra.Command{
		Use:   "promote JUDGE VERSION --model M",
		Short: "Make a prompt version a judge's active version, only if its gain over the active one is supported",
		Args:  args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			if opt.Force && strings.TrimSpace(opt.Reason) == "" {
				return usagef("--force needs --reason TEXT: overriding the gate is recorded with why")
			}
			db, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			svc, err := m.service(db, registry())
			if err != nil {
				return err
			}
			opt.Actor = deploy.CLIActor()
			opt.Concurrency = m.opts.Concurrency
			var done func()
			opt.Progress, done = a.stageProgress("promote")
			act, ev, err := deploy.Promote(ctx, db, svc, m.model, argv[0], argv[1], opt)
			done()
			if ev != nil && err == nil {
				fmt.Fprintf(a.stderr, "%s%s\n", simTag(m.model), ev.Summary())
			}
			if a.json {
				if werr := a.writeJSON(&run.PromoteResult{ResultVersion: run.ResultVersion, Promoted: err == nil, Activation: act, Evidence: ev, Simulated: isSim(m.model)}); werr != nil {
					return werr
				}
			}
			if errors.Is(err, deploy.ErrGateRefused) {
				return gateError{fmt.Errorf("%s%w", simTag(m.model), err)}
			}
			if deploy.ErrorCode(err) == deploy.Invalid && strings.Contains(err.Error(), "give the split") {
				err = fmt.Errorf("%w (--split NAME)", err)
			}
			if err != nil {
				return run.Stopped(err, svc.Stats().Pending)
			}
			fmt.Fprintf(a.stderr, "%s is now the active version of %s (%s by %s)\n", act.Version[:12], act.Judge, act.Action, act.Actor)
			return nil
		},
	}
	a.withModel(cmd, &m, modelUse{})
	cmd.Flags().StringVar(&opt.Split, "split", "", "split whose test part the gate evaluates on (default: the one its calibration used)")
	cmd.Flags().BoolVar(&opt.Force, "force", false, "activate the version whatever the gate says (needs --reason)")
	cmd.Flags().StringVar(&opt.Reason, "reason", "", "why: recorded in the audit trail")
	bootVar(cmd.Flags(), &opt.Boot.Resamples, &opt.Boot.Seed, 2000)
	return cmd
}

func (a *app) rollbackCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "rollback JUDGE",
		Short: "Make the version active before the current one active again",
		Args:  args(cobra.ExactArgs(1)),
		RunE: a.withStore(func(cmd *cobra.Command, argv []string, db store.Store) error {
			act, err := deploy.Rollback(cmd.Context(), db, argv[0], deploy.CLIActor(), reason)
			if deploy.ErrorCode(err) != "" {
				return usageError{err} // nothing to roll back to: exit 2, as always
			}
			if err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(&run.RollbackResult{ResultVersion: run.ResultVersion, Activation: act})
			}
			fmt.Fprintf(a.stderr, "%s is the active version of %s again (was %.12s)\n", act.Version[:12], act.Judge, act.Previous)
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why: recorded in the audit trail")
	return cmd
}

// clientFlags are the flags of the CI client's commands.
type clientFlags struct {
	url, token string
	timeout    time.Duration
}

func (c *clientFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&c.url, "server", os.Getenv("GAVEL_SERVER"), "the gavel service's URL (env GAVEL_SERVER)")
	fl.StringVar(&c.token, "token", os.Getenv("GAVEL_TOKEN"), "API token (env GAVEL_TOKEN; prefer the environment, flags show in process lists)")
	fl.DurationVar(&c.timeout, "timeout", 5*time.Minute, "time limit of the request")
}

func (c *clientFlags) client() (*server.Client, error) {
	if c.url == "" {
		return nil, usagef("--server URL is required (or set GAVEL_SERVER)")
	}
	if c.token == "" {
		return nil, usagef("a token is required: set GAVEL_TOKEN (or --token)")
	}
	return &server.Client{BaseURL: c.url, Token: c.token, HTTP: &http.Client{Timeout: c.timeout}}, nil
}

func (a *app) gateCmd() *cobra.Command {
	var c clientFlags
	var g run.GateConfig
	var onNoVerdict string
	cmd := &cobra.Command{
		Use:   "gate --server URL --judge J --change-id ID --task FILE --candidate DIFF",
		Short: "CI gate: ask the service to judge a change; exit 0 when it passes, 1 when it fails, 4 without a verdict",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.client()
			if onNoVerdict != "" && onNoVerdict != "fail" && onNoVerdict != "pass" {
				return usagef("--on-no-verdict %q: want fail or pass", onNoVerdict)
			} else if err != nil {
				return err
			}
			g.Stdin = a.stdin
			resp, err := run.Gate(cmd.Context(), cl, g)
			if nv := (*server.NoVerdictError)(nil); errors.As(err, &nv) {
				return noVerdict(onNoVerdict, nv)
			}
			if err != nil {
				return err
			}
			if a.json {
				if err := a.writeJSON(resp); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "%s: %s (judge %s, version %.12s, model %s)\n", resp.ChangeID, strings.ToUpper(string(resp.Verdict)),
					resp.Judge, resp.Version, resp.Model)
				if resp.Reasoning != "" {
					fmt.Fprintf(a.stdout, "\n%s\n", resp.Reasoning)
				}
			}
			if resp.Verdict == "fail" {
				return gateError{fmt.Errorf("the judge failed change %s", resp.ChangeID)}
			}
			return nil
		},
	}
	c.register(cmd.Flags())
	fl := cmd.Flags()
	fl.StringVar(&g.Request.Judge, "judge", "", "judge name, e.g. passfail")
	fl.StringVar(&g.Request.ChangeID, "change-id", "", "the change's id, e.g. OWNER/NAME#NUMBER; it becomes the record's id once its outcome is reported")
	fl.StringVar(&g.Request.Group, "group", "", "group of the change for intervals (e.g. the repository)")
	fl.StringVar(&g.Task, "task", "", "file with the task (issue text); - for stdin")
	fl.StringVar(&g.Candidate, "candidate", "", "file with the change (a diff); - for stdin")
	fl.StringVar(&g.Reference, "reference", "", "file with a reference solution, if the judge sees one")
	fl.StringToStringVar(&g.Context, "context", nil, "context entries KEY=FILE (e.g. ci_log=log.txt)")
	fl.StringVar(&onNoVerdict, "on-no-verdict", "", "without a verdict (service unreachable, timeout, unreadable answer) exit 4 (default), or as this: fail (1) or pass (0)")
	return cmd
}

// noVerdict is a gate's exit without a verdict: 4, or as --on-no-verdict
// maps it.
func noVerdict(on string, err error) error {
	if on == "fail" {
		return gateError{err}
	}
	return noVerdictExit{err, on == "pass"}
}

func (a *app) reportOutcomeCmd() *cobra.Command {
	var c clientFlags
	var o run.OutcomeConfig
	cmd := &cobra.Command{
		Use:   "report-outcome --server URL --change-id ID --status landed|abandoned|passed|failed|draft",
		Short: "Tell the service what happened to a judged change (it becomes a record for later calibrations)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.client()
			if err != nil {
				return err
			}
			resp, err := run.ReportOutcome(cmd.Context(), cl, o)
			if err != nil || a.json {
				return errOr(err, func() error { return a.writeJSON(resp) })
			}
			what := "recorded"
			if !resp.Created {
				what = "was already recorded"
			}
			fmt.Fprintf(a.stdout, "%s: outcome %s (%s) %s as record %s\n", resp.ChangeID, resp.Status, resp.Label, what, resp.RecordID)
			return nil
		},
	}
	c.register(cmd.Flags())
	fl := cmd.Flags()
	fl.StringVar(&o.ChangeID, "change-id", "", "the change's id, as given to 'gavel gate'")
	fl.StringVar(&o.Status, "status", "", "landed, abandoned, passed, failed or draft")
	fl.StringVar(&o.Reason, "reason", "", "why, e.g. the comment that closed the change")
	fl.StringVar(&o.At, "at", "", "when it happened (RFC 3339; default now)")
	return cmd
}

// errOr is err, or what fn returns when err is nil.
func errOr(err error, fn func() error) error {
	if err != nil {
		return err
	}
	return fn()
}

// liveDrift prints the drift monitor's state (gavel drift --live).
func (a *app) liveDrift(ctx context.Context, judgeName, model, by string, resamples int, failOnAlert bool) error {
	db, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := run.LiveDrift(ctx, db, judgeName, model, by, resamples, isSim(model))
	if err != nil {
		return usageError{err}
	}
	if err := a.output(res); err != nil {
		return err
	}
	if res.Alert && failOnAlert {
		return gateError{errors.New(res.Status)}
	}
	return nil
}
