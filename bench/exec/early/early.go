// Package early runs `gavel exec --lang python FILE` as gavel's binary
// initialises, before the packages that command does not need: the model
// SDKs, the cloud providers' authentication, the JSON Schema validator, the
// store. Their initialisation is most of gavel's start (about 25 of 33 ms,
// BENCHMARKS.md), and a script that runs one program a call pays it every
// time. Go initialises a package once everything it imports is, taking the
// first such package in import-path order, so this one, which imports the
// sandbox and the standard library only, runs before them.
//
// It takes exactly the command lines the full command reads the same way:
// gavel's own --db (which exec does not use), --json and
// --allow-unisolated, `exec`, then its flags --lang python, --timeout,
// --cpu, --memory and --max-disk (as --flag VALUE or --flag=VALUE, parsed
// as the full command parses them) and one path. Anything else (Go, help,
// another flag, a project file that might apply, a file it cannot read, a
// sandbox that fails) leaves the command to the full CLI, which then says
// what it says of it. Its output, exit code and stderr are the full
// command's (TestEarlyExecIsTheFullCommand runs both on the same programs).
package early

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	bexec "github.com/gavelhq/gavel/bench/exec"
)

// The exec command's defaults, for both ways of running it.
const (
	DefaultTimeout   = 20 * time.Second
	DefaultMemoryMiB = 2048
	DefaultDiskMiB   = 256
)

// OffEnv, set to anything, leaves every `gavel exec` to the full command.
const OffEnv = "GAVEL_EXEC_EARLY_OFF"

// resultVersion is run.ResultVersion (which this package may not import:
// it would bring everything in); the test compares the two outputs.
const resultVersion = 1

func init() {
	if !slices.Contains(os.Args[1:], "exec") {
		return
	}
	if code, ok := Run(os.Args[1:], os.Stdout, os.Stderr); ok {
		os.Exit(code)
	}
}

// job is a command line this package runs.
type job struct {
	path       string
	lim        bexec.Limits
	json       bool
	unisolated bool
}

// parse reads args (gavel's, without the program name) as the full command
// would, or says it is not one for this package.
func parse(args []string) (*job, bool) {
	if os.Getenv(OffEnv) != "" || os.Getenv("GAVEL_CPUPROFILE") != "" || os.Getenv("GAVEL_CONFIG") != "" {
		return nil, false
	}
	// A project file is the full command's to read (even one that says
	// nothing of exec may be broken, and then exec fails).
	if _, err := os.Lstat("gavel.yaml"); !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	j := &job{lim: bexec.Limits{Wall: DefaultTimeout}, unisolated: os.Getenv("GAVEL_ALLOW_UNISOLATED") != ""}
	memory, disk := int64(DefaultMemoryMiB), int64(DefaultDiskMiB)
	var lang string
	var paths []string
	command := false // past "exec": before it, gavel's own flags only
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "" || a[0] != '-' {
			if command {
				paths = append(paths, a)
			} else if command = a == "exec"; !command {
				return nil, false
			}
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || name == "" {
			return nil, false // a shorthand (-h), "-" or "--"
		}
		switch name {
		case "json", "allow-unisolated":
			if hasValue {
				return nil, false
			}
			if name == "json" {
				j.json = true
			} else {
				j.unisolated = true
			}
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				return nil, false
			}
			i++
			value = args[i]
		}
		var err error
		if !command && name != "db" {
			return nil, false
		}
		switch name {
		case "lang":
			lang = value
		case "timeout":
			j.lim.Wall, err = time.ParseDuration(value)
		case "cpu":
			j.lim.CPU, err = time.ParseDuration(value)
		case "memory":
			memory, err = strconv.ParseInt(value, 0, 64)
		case "max-disk":
			disk, err = strconv.ParseInt(value, 0, 64)
		case "db":
		default:
			return nil, false
		}
		if err != nil {
			return nil, false
		}
	}
	if !command || len(paths) != 1 || lang != "python" {
		return nil, false
	}
	j.path, j.lim.AddressSpace, j.lim.Disk = paths[0], memory<<20, disk<<20
	return j, true
}

// Run runs the exec command line args (gavel's, without the program name)
// and returns its exit code, or false when it leaves the command to the
// full CLI (before running anything, or after a run that failed for a
// reason the full command words).
func Run(args []string, stdout, stderr io.Writer) (int, bool) {
	j, ok := parse(args)
	if !ok {
		return 0, false
	}
	src, err := os.ReadFile(j.path)
	if err != nil {
		return 0, false
	}
	bexec.AllowUnisolated(j.unisolated)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	res, err := bexec.Python(ctx, string(src), j.lim)
	interrupted := ctx.Err() != nil
	stop()
	switch {
	case err != nil && interrupted:
		fmt.Fprintln(stderr, "gavel: interrupted; nothing half-written was kept")
		if j.json {
			b, _ := json.Marshal(map[string]any{"error": err.Error(), "exit_code": 1})
			fmt.Fprintf(stdout, "%s\n", b)
		}
		return 1, true
	case err != nil:
		return 0, false
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&struct {
		ResultVersion int `json:"result_version"`
		*bexec.Result
	}{resultVersion, res}); err != nil {
		fmt.Fprintf(stderr, "gavel: %v\n", err)
		return 1, true
	}
	if res.Status != bexec.Passed {
		fmt.Fprintf(stderr, "%s: %s %s\n", j.path, res.Status, res.Reason)
	}
	return 0, true
}
