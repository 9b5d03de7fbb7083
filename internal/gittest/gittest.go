// Package gittest makes git repositories for tests: git run in a folder
// with a fixed author and no user or system configuration.
package gittest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Git runs git in dir and returns its output, trimmed; a failure fails
// the test.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Init makes an empty repository on branch main in a new temporary folder.
func Init(t testing.TB) string {
	dir := t.TempDir()
	Git(t, dir, "init", "-q", "-b", "main")
	return dir
}
