package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/problems"
)

func (a *app) execCmd() *cobra.Command {
	var lang string
	var lim bexec.Limits
	var memMiB int64
	cmd := &cobra.Command{
		Use:   "exec --lang go|python PATH",
		Short: "Run one program or Go test package in the sandbox and print its status as JSON",
		Long: `Run untrusted code the way gavel's benchmarks do and print a JSON status: passed,
failed, build_error, timeout, resource_limit or crashed, with timings, the captured
(capped) output and the isolation that was in force.

  --lang go PATH      PATH is a folder holding one Go package with its tests; it is
                      compiled offline in gavel's embedded module (standard library
                      and testify) and its test binary runs in the sandbox
  --lang python PATH  PATH is a Python script, run with python3 in the sandbox`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			path := argv[0]
			lim.AddressSpace = memMiB << 20
			var res *bexec.Result
			switch lang {
			case "python":
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				if res, err = bexec.Python(cmd.Context(), string(b), lim); err != nil {
					return err
				}
			case "go":
				files := map[string]string{}
				entries, err := os.ReadDir(path)
				if err != nil {
					return err
				}
				for _, e := range entries {
					if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".go") {
						b, err := os.ReadFile(filepath.Join(path, e.Name()))
						if err != nil {
							return err
						}
						files[e.Name()] = string(b)
					}
				}
				if len(files) == 0 {
					return usagef("%s holds no .go files", path)
				}
				mod, err := problems.NewGoModule()
				if err != nil {
					return err
				}
				defer mod.Close()
				if res, err = mod.Test(cmd.Context(), files, lim); err != nil {
					return err
				}
			default:
				return usagef("--lang: want go or python")
			}
			if err := a.writeJSON(res); err != nil {
				return err
			}
			if res.Status != bexec.Passed {
				fmt.Fprintf(a.stderr, "%s: %s %s\n", path, res.Status, res.Reason)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&lang, "lang", "", "go or python")
	fl.DurationVar(&lim.Wall, "timeout", 20*time.Second, "wall-clock limit")
	fl.DurationVar(&lim.CPU, "cpu", 0, "CPU-time limit (default the wall-clock limit)")
	fl.Int64Var(&memMiB, "memory", 2048, "address-space limit in MiB")
	return cmd
}
