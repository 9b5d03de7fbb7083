package main

import (
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows how far a long stage has come on stderr: a live bar with
// the count, rate and time left when stderr is a terminal
// (schollz/progressbar), plain lines every few seconds when it is not (a
// log, CI).
type progress struct {
	a            *app
	label        string
	total        int
	bar          *progressbar.ProgressBar
	start, last  time.Time
	n            int
	printedLines bool
}

// plainEvery is how often a progress line is printed when stderr is not a
// terminal.
const plainEvery = 5 * time.Second

// newProgress starts showing a stage; total is the number of items, or 0
// when unknown.
func (a *app) newProgress(label string, total int) *progress {
	p := &progress{a: a, label: label, total: total, start: time.Now(), last: time.Now()}
	if a.progress {
		max := int64(total)
		if total <= 0 {
			max = -1
		}
		p.bar = progressbar.NewOptions64(max, progressbar.OptionSetWriter(a.stderr), progressbar.OptionSetDescription(label),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("items"),
			progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish())
	}
	return p
}

// update shows that n items are done.
func (p *progress) update(n int) {
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
	fmt.Fprintln(p.a.stderr, p.line())
}

// line is the plain progress line: count, share, rate and time left.
func (p *progress) line() string {
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

// done ends the stage's progress.
func (p *progress) done() {
	if p.bar != nil {
		p.bar.Finish()
		return
	}
	if p.printedLines {
		fmt.Fprintf(p.a.stderr, "%s: done, %d in %s\n", p.label, p.n, time.Since(p.start).Round(time.Second))
	}
}

// Update implements run.Progress.
func (p *progress) Update(n int) { p.update(n) }

// Done implements run.Progress.
func (p *progress) Done() { p.done() }
