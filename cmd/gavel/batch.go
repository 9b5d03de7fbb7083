package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/run"
	"github.com/gavelhq/gavel/store"
)

func (a *app) batchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batch",
		Short: "Move model calls through batch files: export pending requests, import answers",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(a.batchExportCmd(), a.batchImportCmd(), a.batchSubmitCmd(), a.batchStatusCmd(), a.batchCollectCmd())
	return cmd
}

func (a *app) cacheCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Inspect the model cache",
		Args:  args(cobra.NoArgs),
	}
	stats := &cobra.Command{
		Use:   "stats",
		Short: "Entries, tokens, cost paid and cost saved by cache hits, per model",
		Args:  args(cobra.NoArgs),
		RunE: a.withStore(func(cmd *cobra.Command, _ []string, db store.Store) error {
			s, err := db.Cache().Stats(cmd.Context())
			if err != nil {
				return err
			}
			return a.output(&run.CacheStatsResult{ResultVersion: run.ResultVersion, CacheStats: s})
		}),
	}
	cmd.AddCommand(stats, a.cacheClearCmd())
	return cmd
}

func (a *app) cacheClearCmd() *cobra.Command {
	var f struct{ before, model string }
	var c llm.CacheClear
	cmd := &cobra.Command{
		Use:   "clear [--model M] [--invalid] [--before DATE] [--dry-run]",
		Short: "Remove cached answers (all, or those that meet every condition given) so they are asked for again; records and verdicts stay",
		Args:  args(cobra.NoArgs),
		RunE: a.withStore(func(cmd *cobra.Command, _ []string, db store.Store) error {
			return a.outputOf(run.ClearCache(cmd.Context(), db.Cache(), c, f.model, f.before))
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "", "only this model's answers (PROVIDER:NAME)")
	fl.BoolVar(&c.Invalid, "invalid", false, "only the unreadable answers (those that did not match their schema, after the repair call)")
	fl.StringVar(&f.before, "before", "", "only answers stored before this time (2026-11-30 or RFC 3339)")
	fl.BoolVar(&c.DryRun, "dry-run", false, "count what would be removed, and remove nothing")
	return cmd
}

// countingReader reports the bytes read so far.
type countingReader struct {
	r        io.Reader
	n        *int
	progress func(int)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += n
	c.progress(*c.n)
	return n, err
}

// batchAPI is a provider's live batch service, at --base-url when given
// (else the SDK's default or its environment variable).
func batchAPI(provider, baseURL string) (llm.BatchAPI, error) {
	return llm.NewBatchAPI(registry(), provider, llm.ProviderConfig{BaseURL: baseURL})
}

func (a *app) batchSubmitCmd() *cobra.Command {
	var provider, baseURL string
	cmd := &cobra.Command{
		Use:   "submit --provider openai|anthropic",
		Short: "Send the pending requests to the provider's batch API (half price; results within 24 hours)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(llm.BatchProviders(registry()), provider) {
				return usagef("--provider: one of %s", strings.Join(llm.BatchProviders(registry()), ", "))
			}
			db, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			api, err := batchAPI(provider, baseURL)
			if err != nil {
				return err
			}
			b, err := llm.SubmitPending(cmd.Context(), db.Cache(), db, registry(), api, provider)
			if err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(&run.BatchSubmitResult{ResultVersion: run.ResultVersion, Submitted: b})
			}
			if b == nil {
				fmt.Fprintf(a.stderr, "no pending %s request outside a running batch: nothing to submit\n", provider)
				return nil
			}
			fmt.Fprintf(a.stderr, "submitted batch %s: %d requests to %s (%s)\n", b.ID, b.Requests, provider, b.Status)
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "openai or anthropic")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "the provider's base URL (default OPENAI_BASE_URL or ANTHROPIC_BASE_URL, else the provider's)")
	return cmd
}

func (a *app) batchStatusCmd() *cobra.Command {
	var baseURL string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the batches submitted, asking the provider about those not yet collected",
		Args:  args(cobra.NoArgs),
		RunE: a.withStore(func(cmd *cobra.Command, _ []string, db store.Store) error {
			ctx := cmd.Context()
			all, err := db.Batches(ctx)
			if err != nil {
				return err
			}
			for i, b := range all {
				if !b.CollectedAt.IsZero() {
					continue
				}
				api, err := batchAPI(b.Provider, baseURL)
				if err != nil {
					return err
				}
				st, err := api.Status(ctx, b.ID)
				if err != nil {
					return fmt.Errorf("batch %s: %w", b.ID, err)
				}
				st.Provider = b.Provider
				all[i].BatchState = *st
			}
			return a.output(&run.BatchStatusResult{ResultVersion: run.ResultVersion, Batches: all})
		}),
	}
	cmd.Flags().StringVar(&baseURL, "base-url", "", "the provider's base URL (default OPENAI_BASE_URL or ANTHROPIC_BASE_URL, else the provider's)")
	return cmd
}

func (a *app) batchCollectCmd() *cobra.Command {
	var baseURL, pricesFile string
	cmd := &cobra.Command{
		Use:   "collect",
		Short: "Import the results of the batches that ended; requests they did not answer stay pending",
		Args:  args(cobra.NoArgs),
		RunE: a.withStore(func(cmd *cobra.Command, _ []string, db store.Store) error {
			ctx := cmd.Context()
			prices, err := llm.LoadPrices(pricesFile)
			if err != nil {
				return err
			}
			done, running, err := llm.CollectEnded(ctx, db.Cache(), db, registry(), prices, func(provider string) (llm.BatchAPI, error) {
				return batchAPI(provider, baseURL)
			})
			if err != nil {
				return err
			}
			st, err := db.Cache().Stats(ctx)
			if err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(&run.BatchCollectResult{ResultVersion: run.ResultVersion, Collected: done, Running: running, Pending: st.Pending})
			}
			for _, c := range done {
				fmt.Fprintf(a.stderr, "batch %s (%s, %s): %d answers imported (%d invalid), %d failed or expired and left pending\n",
					c.ID, c.Provider, c.Status, c.Import.Imported, c.Import.Invalid, c.Import.Failed)
			}
			for _, r := range running {
				fmt.Fprintf(a.stderr, "batch %s (%s) is still %s: %d of %d done\n", r.ID, r.Provider, r.Status, r.Succeeded+r.Failed, r.Requests)
			}
			fmt.Fprintf(a.stderr, "%d requests pending; rerun the command to continue from the answers\n", st.Pending)
			return nil
		}),
	}
	cmd.Flags().StringVar(&baseURL, "base-url", "", "the provider's base URL (default OPENAI_BASE_URL or ANTHROPIC_BASE_URL, else the provider's)")
	cmd.Flags().StringVar(&pricesFile, "prices", "", "price table overriding the built-in one (JSON)")
	return cmd
}

func (a *app) batchExportCmd() *cobra.Command {
	var format, out string
	var pending bool
	export := &cobra.Command{
		Use:   "export --pending --format openai|anthropic -o FILE",
		Short: "Write the pending requests as a batch input file",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !pending {
				return usagef("batch export writes pending requests: give --pending")
			}
			if out == "" {
				return usagef("batch export needs -o FILE")
			}
			if out == "-" && a.json {
				return usagef("--json and -o - both want standard output; write to a file")
			}
			db, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			var res *llm.BatchExport
			err = a.writeFile(out, func(w io.Writer) error {
				var err error
				res, err = llm.ExportPending(cmd.Context(), db.Cache(), registry(), format, w)
				return err
			})
			if err != nil {
				return fmt.Errorf("batch export: %w", err)
			}
			if a.json {
				return a.writeJSON(&run.BatchExportResult{ResultVersion: run.ResultVersion, BatchExport: res})
			}
			fmt.Fprintf(a.stderr, "wrote %d %s batch request(s) to %s", res.Exported, format, out)
			if res.Other > 0 {
				fmt.Fprintf(a.stderr, "; %d pending request(s) are for other providers (export them with their --format)", res.Other)
			}
			fmt.Fprintln(a.stderr)
			return nil
		},
	}
	export.Flags().BoolVar(&pending, "pending", false, "export the requests that offline runs left pending")
	export.Flags().StringVar(&format, "format", "openai", "batch format: openai (also vLLM's run_batch) or anthropic (Message Batches)")
	export.Flags().StringVarP(&out, "output", "o", "", "file to write (- for standard output)")

	return export
}

func (a *app) batchImportCmd() *cobra.Command {
	var pricesFile string
	imp := &cobra.Command{
		Use:   "import FILE...",
		Short: "Read batch result files into the cache (OpenAI, vLLM or Anthropic results)",
		Args:  args(cobra.MinimumNArgs(1)),
		RunE: a.withStore(func(cmd *cobra.Command, files []string, db store.Store) error {
			prices, err := llm.LoadPrices(pricesFile)
			if err != nil {
				return err
			}
			total := &run.BatchImportResult{ResultVersion: run.ResultVersion, BatchImport: &llm.BatchImport{}}
			for _, name := range files {
				// Progress in bytes read: the importer reads each file twice
				// (checking, then storing).
				size := 0
				if fi, err := os.Stat(name); err == nil {
					size = 2 * int(fi.Size())
				}
				prog := a.newProgress("batch import "+filepath.Base(name)+": bytes", size)
				read := 0
				res, err := llm.ImportResults(cmd.Context(), db.Cache(), registry(), prices, name,
					func() (io.ReadCloser, error) {
						return record.OpenInputWith(name, func(r io.Reader) io.Reader {
							return &countingReader{r: r, n: &read, progress: prog.Update}
						})
					})
				prog.Done()
				if err != nil {
					return fmt.Errorf("batch import: %w", err)
				}
				total.Add(res)
			}
			for _, f := range total.Failures {
				fmt.Fprintf(a.stderr, "failed: %s\n", f)
			}
			return a.output(total)
		}),
	}
	imp.Flags().StringVar(&pricesFile, "prices", os.Getenv("GAVEL_PRICES"), "price table overriding the built-in one, for the answers' cost")
	return imp
}
