package project

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// UsageError is a project file's mistake (a bad key or value, a missing
// file): the command's exit code 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// ForCommand reads the project file (configFlag, GAVEL_CONFIG or the
// working folder's) and fills cmd's flags from it.
func ForCommand(cmd *cobra.Command, configFlag string) error {
	f, err := Open(configFlag)
	if err != nil {
		return err
	}
	_, err = Apply(f, CommandName(cmd), FlagLookup(cmd))
	return usage(err)
}

// ShowFor is `config show [COMMAND...]`: what the command named by argv
// (from cmd's root; none: cmd itself) would use.
func ShowFor(cmd *cobra.Command, argv []string, configFlag string) (*Shown, error) {
	target := cmd
	if len(argv) > 0 {
		var err error
		if target, _, err = cmd.Root().Find(argv); err != nil || target == cmd.Root() {
			return nil, UsageError{fmt.Errorf("config show: no command %q", strings.Join(argv, " "))}
		}
	}
	f, err := Open(configFlag)
	if err != nil {
		return nil, err
	}
	s, err := Show(f, CommandName(target), FlagLookup(target))
	return s, usage(err)
}

// Open reads the project file, when there is one (nil when there is
// none).
func Open(configFlag string) (*File, error) {
	path, err := Find(configFlag)
	if err != nil || path == "" {
		return nil, usage(err)
	}
	f, err := Load(path)
	return f, usage(err)
}

// CommandName is a command's path below the root ("eval", "cache clear").
func CommandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// FlagLookup finds a command's flag, its own or inherited.
func FlagLookup(cmd *cobra.Command) func(string) *pflag.Flag {
	return func(name string) *pflag.Flag {
		if fl := cmd.Flags().Lookup(name); fl != nil {
			return fl
		}
		return cmd.InheritedFlags().Lookup(name)
	}
}

func usage(err error) error {
	if err != nil {
		return UsageError{err}
	}
	return nil
}
