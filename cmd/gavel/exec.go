package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/bench/exec/early" // runs gavel exec --lang python before the rest initialises
	"github.com/gavelhq/gavel/bench/problems"
	"github.com/gavelhq/gavel/run"
)

func (a *app) execCmd() *cobra.Command {
	var lang string
	var lim bexec.Limits
	var memMiB, diskMiB int64
	cmd := &cobra.Command{
		Use:   "exec --lang go|python PATH",
		Short: "Run one program or Go test package in the sandbox and print its status as JSON",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			path := argv[0]
			lim.AddressSpace, lim.Disk = memMiB<<20, diskMiB<<20
			res, err := problems.RunPath(cmd.Context(), lang, path, lim)
			if errors.Is(err, problems.ErrLanguage) {
				return usagef("--lang: want go or python")
			}
			if errors.Is(err, problems.ErrNoGoFiles) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			if err := a.writeJSON(&run.ExecResult{ResultVersion: run.ResultVersion, Result: res}); err != nil {
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
	fl.DurationVar(&lim.Wall, "timeout", early.DefaultTimeout, "wall-clock limit")
	fl.DurationVar(&lim.CPU, "cpu", 0, "CPU-time limit (default the wall-clock limit)")
	fl.Int64Var(&memMiB, "memory", early.DefaultMemoryMiB, "address-space limit in MiB")
	fl.Int64Var(&diskMiB, "max-disk", early.DefaultDiskMiB, "what the program may write in its working folder, in MiB (a tmpfs of that size)")
	return cmd
}
