package exec

import (
	"os"
	"path/filepath"
	"testing"
)

// The launcher's program is looked up in the absolute folders of the
// program's PATH; a relative folder (which would mean gavel's folder here
// and the working folder there) is passed over, and a name with a slash is
// the launcher's to exec as it is.
func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prog"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(mustGetwd(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path, want string }{
		{"prog", rel + ":" + dir, filepath.Join(dir, "prog")},
		{"prog", rel, "prog"},
		{"prog", ":" + dir, filepath.Join(dir, "prog")},
		{"./prog", dir, "./prog"},
		{"missing", dir, "missing"},
	} {
		if got := lookPath(c.name, []string{"PATH=" + c.path}); got != c.want {
			t.Errorf("lookPath(%q, PATH=%s) = %q, want %q", c.name, c.path, got, c.want)
		}
	}
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
