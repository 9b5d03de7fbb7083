package main

import (
	"fmt"
	"time"
)

// progress prints a counter on stderr at most a few times a second, and
// only when stderr is a terminal.
type progress struct {
	a     *app
	label string
	last  time.Time
	shown bool
}

func (a *app) newProgress(label string) *progress { return &progress{a: a, label: label} }

// update shows n if enough time has passed since the last update.
func (p *progress) update(n int) {
	if !p.a.progress || time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.shown = true
	fmt.Fprintf(p.a.stderr, "\r%s: %d", p.label, n)
}

// done ends the progress line.
func (p *progress) done() {
	if p.shown {
		fmt.Fprintln(p.a.stderr)
	}
}
