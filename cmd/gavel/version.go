package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise it comes from the module's build information.
var version = ""

type versionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

func buildVersion() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	return v
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print gavel's version",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			v := buildVersion()
			if a.json {
				return a.writeJSON(v)
			}
			fmt.Fprintf(a.stdout, "gavel %s", v.Version)
			if v.Commit != "" {
				fmt.Fprintf(a.stdout, " (commit %.12s", v.Commit)
				if v.Modified {
					fmt.Fprint(a.stdout, ", modified")
				}
				fmt.Fprint(a.stdout, ")")
			}
			fmt.Fprintf(a.stdout, " %s\n", v.Go)
			return nil
		},
	}
}
