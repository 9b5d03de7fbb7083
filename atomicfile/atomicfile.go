// Package atomicfile writes a file whole or not at all: through a
// temporary file in the same folder (renameio), put in place only when the
// writer succeeds, so that a failed or interrupted write leaves the old
// file, never a partial one.
package atomicfile

import (
	"bufio"
	"io"

	"github.com/google/renameio/v2"
)

// Write writes name through fn. The name "-" writes to stdout instead.
func Write(name string, stdout io.Writer, fn func(io.Writer) error) error {
	if name == "-" {
		return buffered(stdout, fn)
	}
	pf, err := renameio.NewPendingFile(name, renameio.WithPermissions(0o644))
	if err != nil {
		return err
	}
	defer pf.Cleanup() // after the rename it does nothing
	if err := buffered(pf, fn); err != nil {
		return err
	}
	return pf.CloseAtomicallyReplace()
}

func buffered(w io.Writer, fn func(io.Writer) error) error {
	bw := bufio.NewWriter(w)
	if err := fn(bw); err != nil {
		return err
	}
	return bw.Flush()
}
