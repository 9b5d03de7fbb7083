package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// Off a terminal, progress is plain lines with the count, the share, the
// rate and the time left, and a closing line.
func TestPlainProgressLines(t *testing.T) {
	var b bytes.Buffer
	a := &app{stderr: &b}
	p := a.newProgress("judge passfail: records", 200)
	p.start = time.Now().Add(-10 * time.Second)
	p.last = time.Now().Add(-plainEvery)
	p.update(50)
	p.update(60) // too soon after the last line: not printed
	p.done()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a progress line and a closing line, got %q", b.String())
	}
	// 50 of 200 in 10 s: 5 a second, 150 left at that rate is 30 s.
	for _, want := range []string{"judge passfail: records: 50 of 200 (25%)", "5.0 a second", "about 30s left"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("progress line %q lacks %q", lines[0], want)
		}
	}
	if !strings.HasPrefix(lines[1], "judge passfail: records: done, 60 in") {
		t.Errorf("closing line %q", lines[1])
	}
}
