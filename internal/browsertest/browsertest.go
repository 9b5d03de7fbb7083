// Package browsertest finds a Chromium for tests that check pages in a
// real browser.
package browsertest

import (
	"os"
	"os/exec"
	"testing"
)

// Chromium returns the path of a Chromium to drive: a failure under CI
// (which installs it), a skip elsewhere.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium found: CI must install it (apt-get install chromium)")
	}
	t.Skip("no Chromium installed")
	return ""
}
