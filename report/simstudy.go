package report

import (
	"html/template"
	"io"
	"sync"
)

// SimStudyReport is the page of `gavel sim study --report`: each
// configuration's gain over the worlds, and every world with its truth,
// its teacher's figures and its calibrations (each a run of the world's
// kept store, opened to its records with gavel view).
type SimStudyReport struct {
	Title              string
	Records            int
	Gains, Differences []Interval
	Worlds             []StudyWorld
}

// StudyWorld is one world's row.
type StudyWorld struct {
	Seed                              uint64
	Surprises, Noise, Injected, Store string
	Kept, Abstained, Corrected        int
	Gains                             []StudyGain
}

// StudyGain is one calibration's test gain in a world, and its run.
type StudyGain struct{ Name, Value, Run string }

var simStudyTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("study").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.8em 0; display: block; max-width: 100%; overflow-x: auto; } td, th { padding: 3px 9px; text-align: left; border-bottom: 1px solid #eee; vertical-align: top; }
.sim { background: #fff3cd; border: 1px solid #e0c060; padding: 0.6em 1em; } .charts { display: flex; flex-wrap: wrap; gap: 1em; } svg { max-width: 100%; height: auto; } code { font-size: 0.9em; }</style>
</head><body>
<h1>{{.Title}}</h1>
<p class="sim"><strong>Simulated.</strong> Every figure here comes from gavel's simulated world (<code>--model sim</code>), each world drawing which signals are fatal: a test of the machinery, not evidence about any real model.</p>
<p>{{len .Worlds}} worlds of {{.Records}} records. The charts give each configuration's test gain in Scott's pi over the original prompt, its mean over the worlds with a 95% interval from resampling the worlds.</p>
<div class="charts">{{.GainChart}}{{.DifferenceChart}}</div>
<h2>The worlds</h2>
<table><tr><th>seed</th><th>surprises (signals whose effect here is not the usual one)</th><th>teacher kept / abstained / corrected</th><th>label noise vs the code's truth</th><th>injected noise (25% flipped)</th><th>test gains [95% interval]</th></tr>
{{range .Worlds}}<tr><td>{{.Seed}}</td><td>{{.Surprises}}</td><td>{{.Kept}} / {{.Abstained}} / {{.Corrected}}</td><td>{{.Noise}}</td><td>{{.Injected}}</td><td>{{range .Gains}}{{.Name}}: {{.Value}}{{if .Run}} (run <code>{{.Run}}</code>){{end}}<br>{{end}}{{if .Store}}Open its calibrations down to the record: <code>GAVEL_DB={{.Store}} gavel view</code>{{else}}Give <code>--keep DIR</code> to keep this world's store and open its calibrations.{{end}}</td></tr>
{{end}}</table>
</body></html>
`))
})

// WriteSimStudy renders the study's page.
func WriteSimStudy(w io.Writer, r *SimStudyReport) error {
	return simStudyTmpl().Execute(w, struct {
		*SimStudyReport
		GainChart, DifferenceChart template.HTML
	}{r, IntervalChart("Test gain over worlds, mean [95%]", r.Gains, -0.5, 1), IntervalChart("Honest minus control, mean [95%]", r.Differences, -0.5, 1)})
}
