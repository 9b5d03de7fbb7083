package sim

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/repoctx"
)

// WorldOptions shape the synthetic records. Zero values take the defaults.
type WorldOptions struct {
	N    int    // records (default 600)
	Seed uint64 // the world's seed
	// Start and Months span the records' outcome times (default 2025-01-01
	// and 6 months); the signal mix drifts over that span.
	Start  time.Time
	Months int
	// HiddenFailEnd, when positive, makes the world decay: the rate of
	// hidden failures (clean-looking changes that fail, e.g. on a new
	// integration suite the diff cannot show) rises linearly from
	// HiddenFailRate at the start of the span to HiddenFailEnd at its
	// end. A judge reading diffs cannot see the cause, so its agreement
	// with the outcomes falls: the drift a monitor must catch.
	HiddenFailEnd float64
	// World is the world's truth (which signals are fatal); nil: the
	// world of Seed (NewWorld).
	World *World
	// WithFiles gives each record context.files: the files its change
	// touches as they were before it (what ingest --repo adds).
	WithFiles bool
}

// signal rates: the probability that a patch shows the signal at the
// start and at the end of the span (linear in between), so the mix drifts.
var rates = map[*Signal][2]float64{
	DroppedErrorCheck:  {0.015, 0.06},
	OffByOne:           {0.06, 0.02},
	DeletedTest:        {0.05, 0.02},
	RenamedExportedAPI: {0.03, 0.03},
	SwallowedError:     {0.015, 0.055},
	NilMapWrite:        {0.03, 0.02},
	HardcodedResult:    {0.04, 0.02},
	IgnoredContext:     {0.01, 0.05},
	UnlockedAccess:     {0.03, 0.03},
	CosmeticReformat:   {0.10, 0.22},
	AddedLogging:       {0.20, 0.20},
	DependencyBump:     {0.08, 0.12},
	AddedComments:      {0.18, 0.18},
	TodoLeft:           {0.10, 0.14},
	NewTest:            {0.30, 0.25},
}

// The outcome model: a fatal signal fails the change with FatalFailRate;
// a clean change fails anyway (a hidden failure, no visible cause) with
// HiddenFailRate, about a tenth of all failures; in review, a clean change
// is abandoned for reasons outside the code (duplicate, superseded) with
// NonCodeRate, and left a draft with DraftRate.
const (
	FatalFailRate  = 0.95
	HiddenFailRate = 0.045
	NonCodeRate    = 0.06
	DraftRate      = 0.03
)

// Truth is the simulated world's ground truth about a record, kept in its
// meta under "sim".
type Truth struct {
	Simulated bool     `json:"simulated"`
	Signals   []string `json:"signals"`
	Fatal     bool     `json:"fatal"`
	Hidden    bool     `json:"hidden_failure,omitempty"`
	NonCode   bool     `json:"non_code,omitempty"`
	Agent     string   `json:"agent"`
}

// IsSimulated reports whether a record was made by the simulated world
// (its meta carries the world's truth, marked simulated).
func IsSimulated(r *record.Record) bool {
	var m struct {
		Sim struct {
			Simulated bool `json:"simulated"`
		} `json:"sim"`
	}
	return json.Unmarshal(r.Meta, &m) == nil && m.Sim.Simulated
}

// Records generates the synthetic records of a simulated world. The same
// options give the same records.
func Records(opt WorldOptions) ([]record.Record, error) {
	if opt.N <= 0 {
		opt.N = 600
	}
	if opt.Start.IsZero() {
		opt.Start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if opt.Months <= 0 {
		opt.Months = 6
	}
	if opt.World == nil {
		opt.World = NewWorld(opt.Seed)
	}
	if opt.World == nil {
		opt.World = NewWorld(opt.Seed)
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x73696d)) // "sim"
	span := opt.Start.AddDate(0, opt.Months, 0).Sub(opt.Start)
	out := make([]record.Record, 0, opt.N)
	// About three records per task instance, as when an agent's attempts
	// at one issue are recorded; instances cycle through the task kinds.
	instances := max(len(Tasks), opt.N/3)
	for i := range opt.N {
		// Each record draws from a stream of its own, so its patch does
		// not depend on earlier records' outcomes: the same seed under
		// another truth gives the same patches.
		own := rand.New(rand.NewPCG(opt.Seed^uint64(i)<<20, 0x73696d+uint64(i)))
		r, err := oneRecord(own, opt.World, i, rng.IntN(instances), opt.Start, span, opt.HiddenFailEnd, opt.WithFiles)
		if err != nil {
			return nil, err
		}
		if err := r.Normalize(); err != nil {
			return nil, fmt.Errorf("sim record %d: %w", i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func oneRecord(rng *rand.Rand, world *World, i, instance int, start time.Time, span time.Duration, hiddenEnd float64, withFiles bool) (record.Record, error) {
	phase := rng.Float64()
	at := start.Add(time.Duration(phase * float64(span))).Truncate(time.Minute)
	task := Tasks[instance%len(Tasks)]
	service := fmt.Sprintf("svc%02d", instance/len(Tasks))
	agent := []string{"agent-a", "agent-b", "agent-c"}[rng.IntN(3)]
	truth := Truth{Simulated: true, Agent: agent, Signals: []string{}}

	var sigs []*Signal
	for _, s := range Signals {
		r := rates[s]
		if rng.Float64() < r[0]+(r[1]-r[0])*phase {
			sigs = append(sigs, s)
			truth.Signals = append(truth.Signals, s.Name)
			if world.Effect(s) == Fatal {
				truth.Fatal = true
			}
		}
	}
	file := service + "/" + task.Reference.File
	reference, err := FileDiff(file, task.Reference.Before, task.Reference.After, offsetOf(file))
	if err != nil {
		return record.Record{}, err
	}
	coreAfter := task.Reference.After
	if rng.IntN(2) == 0 {
		coreAfter = task.Alternative
	}
	core, err := FileDiff(file, task.Reference.Before, coreAfter, offsetOf(file))
	if err != nil {
		return record.Record{}, err
	}
	parts := []string{core}
	befores := map[string]string{file: task.Reference.Before}
	for _, k := range rng.Perm(len(sigs)) {
		s := sigs[k]
		sn := s.Snippets[rng.IntN(len(s.Snippets))]
		sf := service + "/" + sn.File
		if sn.File == "go.mod" {
			sf = "go.mod"
		}
		d, err := FileDiff(sf, sn.Before, sn.After, offsetOf(sf))
		if err != nil {
			return record.Record{}, err
		}
		parts = append(parts, d)
		if _, seen := befores[sf]; !seen {
			befores[sf] = sn.Before
		}
	}

	r := record.Record{
		ID:        fmt.Sprintf("sim-%05d", i),
		Task:      fmt.Sprintf("%s (service %s)\n\n%s", task.Title, service, task.Issue),
		Candidate: strings.Join(parts, ""),
		Reference: reference,
		Group:     fmt.Sprintf("%s-%s", task.ID, service),
	}
	fail := truth.Fatal && rng.Float64() < FatalFailRate
	hidden := HiddenFailRate
	if hiddenEnd > 0 {
		hidden += (hiddenEnd - HiddenFailRate) * phase
	}
	if !fail && rng.Float64() < hidden {
		fail, truth.Hidden = true, true
	}
	if rng.IntN(2) == 0 {
		r.Outcome = record.Outcome{Source: record.SourceTests, Status: record.StatusPassed}
		r.Context = map[string]string{"test_output": testOutput(rng, task, fail)}
		if fail {
			r.Outcome.Status = record.StatusFailed
		}
	} else {
		r.Outcome = record.Outcome{Source: record.SourceReview, Status: record.StatusLanded}
		switch {
		case fail:
			// A hidden failure is rejected in the words of any other.
			r.Outcome.Status = record.StatusAbandoned
			r.Outcome.Reason = "changes requested"
		case rng.Float64() < NonCodeRate:
			r.Outcome.Status = record.StatusAbandoned
			r.Outcome.Reason = []string{"duplicate", "superseded"}[rng.IntN(2)]
			truth.NonCode = true
		case rng.Float64() < DraftRate:
			r.Outcome.Status = record.StatusDraft
		}
	}
	r.Outcome.At = at
	if withFiles {
		if r.Context == nil {
			r.Context = map[string]string{}
		}
		r.Context[repoctx.ContextKey] = filesBefore(r.Candidate, befores)
	}
	meta, err := json.Marshal(map[string]any{"sim": truth})
	if err != nil {
		return record.Record{}, err
	}
	r.Meta = meta
	return r, nil
}

// filesBefore is a record's context.files as ingest --repo would write it
// from a clone of the simulated service: each touched file before the
// change, its snippet at the snippet's line, the lines around it code the
// change does not touch. (The simulated roles do not read the files: an
// ablation on them shows the machinery, not an effect.)
func filesBefore(candidate string, befores map[string]string) string {
	var files []repoctx.File
	for _, t := range repoctx.Files(candidate) {
		before, ok := befores[t.Path]
		if !ok {
			continue
		}
		pad := strings.Repeat("\t// (code the change does not touch)\n", offsetOf(t.Path))
		files = append(files, repoctx.File{Touched: t, Content: pad + before})
	}
	return repoctx.Render(files, "sim-base", 4000)
}

// offsetOf places a file's snippet at a stable line of the file.
func offsetOf(file string) int {
	h := fnv.New32a()
	h.Write([]byte(file))
	return 10 + int(h.Sum32()%180)
}

// testOutput is the CI log of a tests-sourced record. A failure's log is
// drawn from one pool whatever its cause, so the log tells a fatal
// signal's failure from a hidden one no better than chance: a real CI log
// names the test that failed, which rarely names the defect.
func testOutput(rng *rand.Rand, task *Task, fail bool) string {
	pkg := "example.com/shop/" + strings.Split(task.Reference.File, "/")[0]
	if !fail {
		return "ok  \t" + pkg + "\t0.412s"
	}
	switch rng.IntN(3) {
	case 0:
		return "--- FAIL: TestIntegrationCheckout (3.02s)\n    checkout_test.go:88: unexpected order state\nFAIL\nFAIL\texample.com/shop/e2e\t3.118s"
	case 1:
		return "--- FAIL: TestEndToEnd (1.47s)\n    e2e_test.go:41: request failed: status 500\nFAIL\nFAIL\texample.com/shop/e2e\t1.502s"
	}
	return "--- FAIL: TestAcceptance (0.91s)\n    accept_test.go:63: got a different result than expected\nFAIL\nFAIL\t" + pkg + "\t0.944s"
}

func exportName(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
