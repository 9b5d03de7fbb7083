package main

import (
	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/run"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise it comes from the module's build information.
var version = ""

func buildVersion() run.VersionInfo { return run.BuildVersion(version) }

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print gavel's version",
		Args:  args(cobra.NoArgs),
		RunE:  func(*cobra.Command, []string) error { return a.output(buildVersion()) },
	}
}
