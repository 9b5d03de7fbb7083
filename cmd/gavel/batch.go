package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
)

func (a *app) batchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batch",
		Short: "Move model calls through batch files: export pending requests, import answers",
		Long: `Model calls that an --offline run could not make are stored as pending. Export
them as a batch file, run it (OpenAI Batch API, vLLM's run_batch, or Anthropic
Message Batches), import the results into the cache, and run the command again:
it continues from the answers without sending anything.`,
		Args: args(cobra.NoArgs),
	}
	var format, out, pricesFile string
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
			err = writeAtomic(out, a.stdout, func(w io.Writer) error {
				var err error
				res, err = llm.ExportPending(cmd.Context(), db.Cache(), registry(), format, w)
				return err
			})
			if err != nil {
				return fmt.Errorf("batch export: %w", err)
			}
			if a.json {
				return a.writeJSON(res)
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

	imp := &cobra.Command{
		Use:   "import FILE...",
		Short: "Read batch result files into the cache (OpenAI, vLLM or Anthropic results)",
		Args:  args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, files []string) error {
			db, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			prices, err := llm.LoadPrices(pricesFile)
			if err != nil {
				return err
			}
			total := &llm.BatchImport{}
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
							return &countingReader{r: r, n: &read, progress: prog.update}
						})
					})
				prog.done()
				if err != nil {
					return fmt.Errorf("batch import: %w", err)
				}
				total.Lines += res.Lines
				total.Imported += res.Imported
				total.Invalid += res.Invalid
				total.Failed += res.Failed
				total.Unknown += res.Unknown
				total.Already += res.Already
				total.Failures = append(total.Failures, res.Failures...)
			}
			if a.json {
				return a.writeJSON(total)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "imported\t%d\t(of which %d do not fit their schema and are kept as invalid answers)\n", total.Imported, total.Invalid)
			fmt.Fprintf(tw, "failed\t%d\t(still pending: export and run them again)\n", total.Failed)
			fmt.Fprintf(tw, "unknown ids\t%d\t(no such request in this store)\n", total.Unknown)
			fmt.Fprintf(tw, "already answered\t%d\t\n", total.Already)
			tw.Flush()
			for _, f := range total.Failures {
				fmt.Fprintf(a.stderr, "failed: %s\n", f)
			}
			return nil
		},
	}
	imp.Flags().StringVar(&pricesFile, "prices", os.Getenv("GAVEL_PRICES"), "price table overriding the built-in one, for the answers' cost")
	cmd.AddCommand(export, imp)
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			s, err := db.Cache().Stats(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				return a.writeJSON(s)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "model\tanswers\thits\tinput tokens\toutput tokens\tcost $\tsaved $\t")
			for _, m := range s.ByModel {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.4f\t%.4f\t\n", m.Model, m.Entries, m.Hits, m.InputTokens, m.OutputTokens, m.Cost, m.SavedCost)
			}
			fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%.4f\t%.4f\t\n", s.Entries, s.Hits, s.InputTokens, s.OutputTokens, s.Cost, s.SavedCost)
			tw.Flush()
			if s.Pending > 0 {
				fmt.Fprintf(a.stdout, "%d request(s) pending: gavel batch export --pending\n", s.Pending)
			}
			return nil
		},
	}
	cmd.AddCommand(stats)
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
