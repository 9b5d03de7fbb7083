package run

import (
	"io"
	"runtime"
	"runtime/debug"
)

// VersionInfo is gavel's build (version); marshalled, version's --json
// output.
type VersionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// BuildVersion is the build's version: set, when given (a release's
// -ldflags -X), else the module's, with the commit it was built from.
func BuildVersion(set string) VersionInfo {
	v := VersionInfo{Version: set, Go: runtime.Version()}
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

// WriteText writes "gavel VERSION (commit C, modified) GO".
func (v VersionInfo) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.f("gavel %s", v.Version)
	if v.Commit != "" {
		p.f(" (commit %.12s", v.Commit)
		if v.Modified {
			p.f(", modified")
		}
		p.f(")")
	}
	p.f(" %s\n", v.Go)
	return p.err
}
