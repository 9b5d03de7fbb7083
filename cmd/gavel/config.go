package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/project"
)

// applyProject fills cmd's flags from the project file, where neither
// the flag nor its environment variable was given.
func (a *app) applyProject(cmd *cobra.Command) error {
	if cmd.Name() == "init" {
		return nil // it writes the file, whatever the one there says
	}
	f, err := project.Open(a.configPath)
	if err == nil {
		_, err = project.Apply(f, commandName(cmd), flagLookup(cmd))
	}
	return err
}

func commandName(cmd *cobra.Command) string { return strings.TrimPrefix(cmd.CommandPath(), "gavel ") }

// flagLookup finds a command's flag, its own or inherited, for the
// project file.
func flagLookup(cmd *cobra.Command) project.Lookup {
	return func(name string) *project.Flag {
		fl := cmd.Flag(name) // the command's own or inherited
		if fl == nil {
			return nil
		}
		return &project.Flag{Changed: fl.Changed, Value: fl.Value.String(), Default: fl.DefValue, Set: fl.Value.Set}
	}
}

func (a *app) configCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "The project file (gavel.yaml)", Args: args(cobra.NoArgs)}
	cmd.AddCommand(&cobra.Command{
		Use:   "show [COMMAND...]",
		Short: "Each setting a command would use (default: every key) and where it came from: a flag, the environment, the project file's line, or the default",
		RunE: func(cmd *cobra.Command, argv []string) error {
			target := cmd
			if len(argv) > 0 {
				if t, _, err := cmd.Root().Find(argv); err == nil && t != cmd.Root() {
					target = t
				} else {
					return usagef("config show: no command %q", strings.Join(argv, " "))
				}
			}
			f, err := project.Open(a.configPath)
			if err != nil {
				return err
			}
			s, err := project.Show(f, commandName(target), flagLookup(target))
			if err != nil {
				return err
			}
			return a.output(s)
		},
	})
	return cmd
}

func (a *app) initCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a commented project file, gavel.yaml (or --config FILE), to fill in",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := a.configPath
			if path == "" {
				path = project.FileName
			}
			if _, err := os.Stat(path); err == nil && !force {
				return usagef("%s exists: give --force to replace it", path)
			}
			if err := a.writeFile(path, func(w io.Writer) error { _, err := w.Write(project.Template()); return err }); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "wrote %s: fill in the models; 'gavel config show eval' shows what eval would use\n", path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing file")
	return cmd
}
