package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/run"
)

type askFlags struct {
	modelFlags
	system      string
	schemaFile  string
	schemaName  string
	temperature float64
	maxTokens   int
	seed        int64
	sample      int
}

func (a *app) askCmd() *cobra.Command {
	var f askFlags
	cmd := &cobra.Command{
		Use:   "ask PROMPT",
		Short: "Ask a model one question, to check a set-up (through the cache and limits)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.ask(cmd, argv[0], &f, cmd.Flags().Changed("temperature"), cmd.Flags().Changed("seed"))
		},
	}
	a.withModel(cmd, &f.modelFlags, modelUse{})
	fl := cmd.Flags()
	fl.StringVar(&f.system, "system", "", "system message")
	fl.StringVar(&f.schemaFile, "schema", "", "JSON Schema file: ask for a structured answer")
	fl.StringVar(&f.schemaName, "schema-name", "answer", "name of the structured answer")
	fl.Float64Var(&f.temperature, "temperature", 0, "sampling temperature (default: the model's)")
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "bound on the answer's tokens (default: the provider's)")
	fl.Int64Var(&f.seed, "seed", 0, "sampling seed, where the server supports one")
	fl.IntVar(&f.sample, "sample", 0, "sample index: a different index is a different request to the cache")
	return cmd
}

func (a *app) ask(cmd *cobra.Command, prompt string, f *askFlags, hasTemp, hasSeed bool) error {
	if prompt == "-" {
		b, err := io.ReadAll(io.LimitReader(a.stdin, 64<<20))
		if err != nil {
			return err
		}
		prompt = string(b)
	}
	cfg := run.AskConfig{Model: f.model, System: f.system, Prompt: prompt, SchemaName: f.schemaName, MaxTokens: f.maxTokens, Sample: f.sample}
	if hasTemp {
		cfg.Temperature = &f.temperature
	}
	if hasSeed {
		cfg.Seed = &f.seed
	}
	if f.schemaFile != "" {
		b, err := os.ReadFile(f.schemaFile)
		if err != nil {
			return fmt.Errorf("--schema: %w", err)
		}
		cfg.Schema = b
	}
	ctx := cmd.Context()
	db, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	svc, err := f.service(db, registry())
	if err != nil {
		return err
	}
	res, err := run.Ask(ctx, svc, cfg)
	if err != nil {
		return run.Stopped(err, svc.Stats().Pending)
	}
	if err := a.output(res); err != nil {
		return err
	}
	fmt.Fprintln(a.stderr, res.UsageText())
	return nil
}
