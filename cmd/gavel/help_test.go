package main

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every help file is some command's long help, and every command with
// subcommands or flags of its own that has a file shows it.
func TestHelpFiles(t *testing.T) {
	root := (&app{}).rootCmd()
	byName := map[string]*cobra.Command{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		byName[helpName(c)] = c
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	files, err := fs.Glob(helpFiles, "help/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("help files: %v, %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "help/"), ".txt")
		c := byName[name]
		if c == nil {
			t.Errorf("%s is no command's help", f)
			continue
		}
		b, _ := fs.ReadFile(helpFiles, f)
		if c.Long == "" || c.Long != strings.TrimSuffix(string(b), "\n") {
			t.Errorf("gavel %s does not show %s", c.CommandPath(), f)
		}
	}
	for _, want := range []string{"gavel", "calibrate", "acr-check", "import-github", "sim-records"} {
		if byName[want] == nil || byName[want].Long == "" {
			t.Errorf("%s has no long help", want)
		}
	}
}
