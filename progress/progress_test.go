package progress

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
	p := New(&b, false, "judge passfail: records", 200)
	p.start = time.Now().Add(-10 * time.Second)
	p.last = time.Now().Add(-plainEvery)
	p.Update(50)
	p.Update(60) // too soon after the last line: not printed
	p.Done()
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

// Each stage has its own bar; a new stage closes the one before, and done
// closes the last, once.
func TestStages(t *testing.T) {
	defer func(d time.Duration) { plainEvery = d }(plainEvery)
	plainEvery = 0 // a line at every update
	var b bytes.Buffer
	update, done := Stages(&b, false, "calibrate")
	update("teacher", 4, 10)
	update("judge", 3, 5)
	done()
	done()
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		got = append(got, strings.SplitN(l, ",", 2)[0])
	}
	want := []string{"calibrate: teacher: 4 of 10 (40%)", "calibrate: teacher: done", "calibrate: judge: 3 of 5 (60%)", "calibrate: judge: done"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
