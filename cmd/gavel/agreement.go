package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/run"
)

type agreementFlags struct {
	a, b      string
	coders    []string
	group     string
	level     string
	resamples int
	seed      uint64
	ciLevel   float64
	reviews   bool
	judge     string
	model     string
}

func (a *app) reviewAgreement(ctx context.Context, f agreementFlags) error {
	db, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	rep, err := deploy.Agreement(ctx, db, f.judge, f.model, metrics.BootstrapOptions{Resamples: f.resamples, Seed: f.seed, Level: f.ciLevel})
	if err != nil {
		return err
	}
	return a.output(&run.ReviewAgreementResult{ResultVersion: run.ResultVersion, Simulated: isSim(f.model), AgreementReport: rep})
}

func (a *app) agreementCmd() *cobra.Command {
	var f agreementFlags
	cmd := &cobra.Command{
		Use:   "agreement FILE | agreement --reviews --judge J --model M",
		Short: "Agreement and classification metrics between raters in a CSV or JSONL file, with intervals",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if f.reviews {
				if len(argv) > 0 {
					return usagef("--reviews reads the store, not a file")
				}
				if f.model == "" {
					return errNoModel
				}
				return a.reviewAgreement(cmd.Context(), f)
			}
			if len(argv) != 1 {
				return usagef("give a FILE of ratings, or --reviews for the service's blind reviews")
			}
			return a.agreement(argv[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.a, "a", "", "column of the first rater (the reference for classification)")
	fl.StringVar(&f.b, "b", "", "column of the second rater")
	fl.StringSliceVar(&f.coders, "coders", nil, "columns of several coders, for Krippendorff's alpha")
	fl.StringVar(&f.group, "group", "", "column whose groups the bootstrap resamples whole")
	fl.StringVar(&f.level, "level", "nominal", "level of Krippendorff's alpha: nominal, ordinal, interval or ratio")
	fl.IntVar(&f.resamples, "resamples", 10_000, "bootstrap resamples (0: no intervals)")
	fl.Uint64Var(&f.seed, "seed", 1, "bootstrap seed")
	fl.Float64Var(&f.ciLevel, "ci", 0.95, "confidence level of the intervals")
	fl.BoolVar(&f.reviews, "reviews", false, "compare the service's blind human reviews with the judge and the outcomes")
	fl.StringVar(&f.judge, "judge", "passfail", "with --reviews: the judge whose verdicts are compared")
	fl.StringVar(&f.model, "model", os.Getenv("GAVEL_MODEL"), "with --reviews: the model whose verdicts are compared (env GAVEL_MODEL)")
	return cmd
}

func (a *app) agreement(file string, f agreementFlags) error {
	level, err := metrics.ParseLevel(f.level)
	if err != nil {
		return usagef("--level: %v", err)
	}
	pair := f.a != "" || f.b != ""
	switch {
	case pair && len(f.coders) > 0:
		return usagef("give either --a and --b, or --coders")
	case pair && (f.a == "" || f.b == ""):
		return usagef("give both --a and --b")
	case !pair && len(f.coders) < 2:
		return usagef("give --a and --b, or --coders with two or more columns")
	case f.resamples < 0 || f.ciLevel <= 0 || f.ciLevel >= 1:
		return usagef("--resamples must not be negative and --ci must be between 0 and 1")
	}
	cols := f.coders
	if pair {
		cols = []string{f.a, f.b}
	}
	sum, err := run.Agreement(run.AgreementConfig{File: file, Raters: cols, Pair: pair, Group: f.group, Level: level,
		Boot: metrics.BootstrapOptions{Resamples: f.resamples, Seed: f.seed, Level: f.ciLevel}})
	if err != nil {
		return err
	}
	return a.output(sum)
}
