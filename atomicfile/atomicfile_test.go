package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// A failed write leaves nothing behind, an earlier file included; a
// successful one replaces the file whole.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(name, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(name, io.Discard, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if b, _ := os.ReadFile(name); string(b) != "old\n" {
		t.Fatalf("after a failed write the file holds %q", b)
	}
	if err := Write(name, io.Discard, func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(name); string(b) != "new\n" {
		t.Fatalf("the file holds %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("the folder holds %d entries, want only the file", len(entries))
	}
	if fi, _ := os.Stat(name); fi.Mode().Perm()&0o044 == 0 {
		t.Fatalf("mode %v: others cannot read the file", fi.Mode())
	}
}
