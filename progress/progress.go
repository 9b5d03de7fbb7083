// Package progress shows how far a long stage of a command has come, on
// stderr: a live bar with the count, rate and time left when stderr is a
// terminal (schollz/progressbar), plain lines every few seconds when it is
// not (a log, CI).
package progress

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Bar is one stage's progress.
type Bar struct {
	w            io.Writer
	label        string
	total        int
	bar          *progressbar.ProgressBar
	start, last  time.Time
	n            int
	printedLines bool
}

// plainEvery is how often a progress line is printed when stderr is not a
// terminal.
var plainEvery = 5 * time.Second

// New starts showing a stage on w, as a live bar when terminal is set;
// total is the number of items, or 0 when unknown.
func New(w io.Writer, terminal bool, label string, total int) *Bar {
	p := &Bar{w: w, label: label, total: total, start: time.Now(), last: time.Now()}
	if terminal {
		max := int64(total)
		if total <= 0 {
			max = -1
		}
		p.bar = progressbar.NewOptions64(max, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(label),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("items"),
			progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish())
	}
	return p
}

// Update shows that n items are done.
func (p *Bar) Update(n int) {
	p.n = n
	if p.bar != nil {
		p.bar.Set(n)
		return
	}
	if time.Since(p.last) < plainEvery {
		return
	}
	p.last = time.Now()
	p.printedLines = true
	fmt.Fprintln(p.w, p.line())
}

// line is the plain progress line: count, share, rate and time left.
func (p *Bar) line() string {
	el := time.Since(p.start).Seconds()
	rate := float64(p.n) / max(el, 1e-9)
	s := fmt.Sprintf("%s: %d", p.label, p.n)
	if p.total > 0 {
		s += fmt.Sprintf(" of %d (%.0f%%)", p.total, 100*float64(p.n)/float64(p.total))
	}
	s += fmt.Sprintf(", %.1f a second", rate)
	if p.total > 0 && rate > 0 && p.n < p.total {
		s += fmt.Sprintf(", about %s left", (time.Duration(float64(p.total-p.n)/rate) * time.Second).Round(time.Second))
	}
	return s
}

// Done ends the stage's progress.
func (p *Bar) Done() {
	if p.bar != nil {
		p.bar.Finish()
		return
	}
	if p.printedLines {
		fmt.Fprintf(p.w, "%s: done, %d in %s\n", p.label, p.n, time.Since(p.start).Round(time.Second))
	}
}

// Stages shows a command's stages one after another, one bar each, titled
// "TITLE: STAGE": update tells how far a stage is (a new stage ends the
// one before), done ends the last.
func Stages(w io.Writer, terminal bool, title string) (update func(stage string, done, total int), done func()) {
	var cur *Bar
	var name string
	return func(stage string, n, total int) {
			if cur == nil || stage != name {
				if cur != nil {
					cur.Done()
				}
				cur, name = New(w, terminal, title+": "+stage, total), stage
			}
			cur.Update(n)
		}, func() {
			if cur != nil {
				cur.Done()
				cur = nil
			}
		}
}
