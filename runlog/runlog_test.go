package runlog_test

import (
	"strings"
	"testing"

	"github.com/gavelhq/gavel/runlog"
)

func TestRedactHidesSecrets(t *testing.T) {
	args := []string{"--db", "postgres://gavel:s3cret@db.example.com/gavel", "eval", "--token", "gvl_abc123",
		"--github-webhook-secret=whsec", "--api-key", "sk-live-1", "--base-url", "https://user:pw@proxy.example.com/v1",
		"--judge", "passfail", "--db=postgresql://u:p4ss@h/d?sslmode=disable", "--reference", "key.txt"}
	got := runlog.Redact(args)
	joined := strings.Join(got, " ")
	for _, secret := range []string{"s3cret", "gvl_abc123", "whsec", "sk-live-1", ":pw@", "p4ss"} {
		if strings.Contains(joined, secret) {
			t.Errorf("%q is still in %s", secret, joined)
		}
	}
	for _, kept := range []string{"eval", "passfail", "--judge", "db.example.com/gavel", "proxy.example.com/v1", "--reference key.txt", "gavel:REDACTED@"} {
		if !strings.Contains(joined, kept) {
			t.Errorf("%q is missing from %s", kept, joined)
		}
	}
	if len(got) != len(args) {
		t.Errorf("%d arguments, want %d", len(got), len(args))
	}
	if args[1] != "postgres://gavel:s3cret@db.example.com/gavel" {
		t.Error("Redact changed its argument")
	}
}
