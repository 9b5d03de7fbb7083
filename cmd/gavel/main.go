// Command gavel calibrates, benchmarks and uses LLM judges of machine-written
// code. This package reads flags, files and environment and wires the
// packages together; it holds no logic of its own.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	bexec "github.com/gavelhq/gavel/bench/exec"
)

func main() {
	// A sandboxed run re-executes gavel as its launcher: it applies the
	// limits and becomes the program, never returning here.
	bexec.Launch()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// GAVEL_CPUPROFILE=FILE writes a CPU profile of the run, for
	// 'go tool pprof' (BENCHMARKS.md).
	if path := os.Getenv("GAVEL_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f) // written by StopCPUProfile; the file closes with the process
		}
	}
	code := execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	pprof.StopCPUProfile()
	stop()
	os.Exit(code)
}
