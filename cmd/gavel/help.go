package main

import (
	"embed"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"
)

// The long help of the commands is in help/, a file a command named by its
// path (help/acr-check.txt is gavel acr check's, help/gavel.txt gavel's), kept apart from the
// wiring so that it reads, and is reviewed, as the documentation it is.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpName is the name of a command's help file.
func helpName(cmd *cobra.Command) string {
	return strings.ReplaceAll(strings.TrimPrefix(cmd.CommandPath(), "gavel "), " ", "-")
}

// setHelp gives cmd and every command below it the long help of its file,
// if it has one.
func setHelp(cmd *cobra.Command) {
	if b, err := fs.ReadFile(helpFiles, "help/"+helpName(cmd)+".txt"); err == nil {
		cmd.Long = strings.TrimSuffix(string(b), "\n")
	}
	for _, c := range cmd.Commands() {
		setHelp(c)
	}
}
