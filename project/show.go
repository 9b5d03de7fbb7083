package project

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Shown is what `gavel config show [COMMAND]` prints: the project file,
// and each key's value for the command with where it came from.
type Shown struct {
	ResultVersion int       `json:"result_version"`
	File          string    `json:"file"`
	Command       string    `json:"command"`
	Settings      []Setting `json:"settings"`
}

// Show merges the file, the environment and the flags of command as
// Apply does, and says where each value came from.
func Show(f *File, command string, lookupFlag Lookup) (*Shown, error) {
	settings, err := Apply(f, command, lookupFlag)
	if err != nil {
		return nil, err
	}
	s := &Shown{ResultVersion: 1, Command: command, Settings: settings}
	if f != nil {
		s.File = f.Path
	}
	return s, nil
}

// WriteText writes a table of the keys, values and sources.
func (s *Shown) WriteText(w io.Writer) error {
	file := s.File
	if file == "" {
		file = "none (no " + FileName + " here, no --config, no " + EnvVar + ")"
	}
	if _, err := fmt.Fprintf(w, "project file: %s\nas %s would use them:\n", file, s.Command); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "key\tvalue\tsource\t")
	for _, st := range s.Settings {
		v, src := st.Value, st.Source
		if v == "" {
			v = "-"
		}
		if !st.Used && st.Source != "default" {
			src += " (no flag of " + s.Command + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", st.Key, v, src)
	}
	return tw.Flush()
}
