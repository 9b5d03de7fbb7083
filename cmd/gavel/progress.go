package main

import "github.com/gavelhq/gavel/progress"

// newProgress starts showing a stage on stderr; total is the number of
// items, or 0 when unknown.
func (a *app) newProgress(label string, total int) *progress.Bar {
	return progress.New(a.stderr, a.progress, label, total)
}

// stageProgress shows a command's stages on stderr, one bar each.
func (a *app) stageProgress(title string) (func(stage string, done, total int), func()) {
	return progress.Stages(a.stderr, a.progress, title)
}
