package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/llm"
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

type askOutput struct {
	Key          string          `json:"key"`
	Model        string          `json:"model"`
	Text         string          `json:"text"`
	JSON         json.RawMessage `json:"json,omitempty"`
	Invalid      bool            `json:"invalid"`
	ParseError   string          `json:"parse_error,omitempty"`
	Usage        llm.Usage       `json:"usage"`
	Cost         float64         `json:"cost_usd"`
	Priced       bool            `json:"priced"`
	LatencyMS    int64           `json:"latency_ms"`
	Cached       bool            `json:"cached"`
	Attempts     int             `json:"attempts"`
	ModelVersion string          `json:"model_version,omitempty"`
}

func (a *app) askCmd() *cobra.Command {
	var f askFlags
	cmd := &cobra.Command{
		Use:   "ask PROMPT",
		Short: "Ask a model one question, to check a set-up (through the cache and limits)",
		Long: `Ask a model one question and print the answer (stdout) and its usage (stderr),
through the same cache, limits and retries as every model call gavel makes. A
second identical ask is answered from the cache. PROMPT "-" reads standard input.

  gavel ask --model openai:qwen2.5-coder --base-url http://127.0.0.1:8000/v1 "hi"
  gavel ask --model anthropic:claude-sonnet-4-5 --schema verdict.json "Is 2 prime?"`,
		Args: args(cobra.ExactArgs(1)),
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
	if strings.TrimSpace(prompt) == "" {
		return usagef("the prompt is empty")
	}
	req := &llm.Request{Model: f.model, MaxTokens: f.maxTokens, Sample: f.sample}
	if f.system != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.System, Content: f.system})
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.User, Content: prompt})
	if hasTemp {
		req.Temperature = &f.temperature
	}
	if hasSeed {
		req.Seed = &f.seed
	}
	if f.schemaFile != "" {
		b, err := os.ReadFile(f.schemaFile)
		if err != nil {
			return fmt.Errorf("--schema: %w", err)
		}
		if err := llm.CheckSchema(b); err != nil {
			return fmt.Errorf("--schema %s: %w", f.schemaFile, err)
		}
		req.Schema = &llm.Schema{Name: f.schemaName, JSON: b}
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
	key, err := llm.Key(req)
	if err != nil {
		return usageError{err}
	}
	resp, err := svc.Complete(ctx, req)
	if err != nil {
		return stopped(err, svc.Stats().Pending)
	}
	out := askOutput{Key: key, Model: req.Model, Text: resp.Text, JSON: resp.JSON, Invalid: resp.Invalid,
		ParseError: resp.ParseError, Usage: resp.Usage, Cost: resp.Cost, Priced: resp.Priced,
		LatencyMS: resp.Latency.Milliseconds(), Cached: resp.Cached, Attempts: resp.Attempts, ModelVersion: resp.ModelVersion}
	if a.json {
		return a.writeJSON(out)
	}
	text := resp.Text
	if len(resp.JSON) > 0 {
		text = string(resp.JSON)
	}
	fmt.Fprintln(a.stdout, text)
	from := "sent"
	if resp.Cached {
		from = "from the cache, no call made"
	}
	cost := fmt.Sprintf("$%.6f", resp.Cost)
	if !resp.Priced {
		cost = "no price for this model"
	}
	fmt.Fprintf(a.stderr, "%s: %d input tokens (%d cached), %d output tokens; %s; %d ms; %d attempt(s); %s\n",
		req.Model, resp.Usage.InputTokens, resp.Usage.CachedTokens, resp.Usage.OutputTokens, cost,
		resp.Latency.Milliseconds(), resp.Attempts, from)
	if resp.Invalid {
		fmt.Fprintf(a.stderr, "the answer does not fit the schema: %s\n", resp.ParseError)
	}
	return nil
}
