package run

import (
	"context"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/teacher"
)

// TeachConfig configures the informed teacher on a split part's records.
type TeachConfig struct {
	// Judge is the judge whose inputs the teacher sees.
	Judge        *judge.Spec
	TeacherModel string
	Records      []*record.Record
	Concurrency  int
	Simulated    bool
	// Stage names the records in a dry run's plan; Part (NAME:PART) in
	// the run's log.
	Stage string
	Part  string
}

// TeachResult is what the teacher decided; marshalled, it is teach's
// --json output.
type TeachResult struct {
	ResultVersion int           `json:"result_version"`
	Teacher       teacher.Stats `json:"teacher"`
	Model         string        `json:"model"`
	Simulated     bool          `json:"simulated"`
	Calls         llm.RunStats  `json:"calls"`
	// Decisions are the teacher's, one a record, on Taught (of Part).
	Decisions []teacher.Decision `json:"-"`
	Taught    []*record.Record   `json:"-"`
	Part      string             `json:"-"`
	Judge     *judge.Spec        `json:"-"`
}

// PlanTeach adds the teacher's calls to a dry run's plan.
func PlanTeach(ctx context.Context, p *llm.Plan, c llm.Cache, cfg TeachConfig) error {
	var reqs []*llm.Request
	for _, r := range cfg.Records {
		req, err := teacher.Request(cfg.Judge, cfg.TeacherModel, r)
		if err != nil {
			return err
		}
		reqs = append(reqs, req)
	}
	return p.Exact(ctx, c, "teacher", cfg.Stage, reqs)
}

// Teach asks the informed teacher about every record, stores its
// decisions (those made, even when it stops), and summarises them.
func Teach(ctx context.Context, env *Env, st interface {
	SaveDecisions(context.Context, []teacher.Decision) error
}, cfg TeachConfig) (*TeachResult, error) {
	prog := env.progress("teacher: records", len(cfg.Records))
	ds, pending, err := teacher.Run(ctx, env.Client, cfg.Judge, cfg.TeacherModel, cfg.Records, cfg.Concurrency, prog.Update)
	prog.Done()
	if len(ds) > 0 {
		if err := st.SaveDecisions(context.WithoutCancel(ctx), ds); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	if pending > 0 {
		return nil, &llm.PendingError{N: pending}
	}
	return &TeachResult{ResultVersion: ResultVersion, Teacher: teacher.Summarise(cfg.Records, ds), Model: cfg.TeacherModel,
		Simulated: cfg.Simulated, Calls: env.stats(), Decisions: ds, Taught: cfg.Records, Part: cfg.Part, Judge: cfg.Judge}, nil
}
