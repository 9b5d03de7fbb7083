package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/gavelhq/gavel/acr"
	bexec "github.com/gavelhq/gavel/bench/exec"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
)

// JudgeSource is a judge spec as text, so that a worker loads the judge the
// command loaded without reading its file.
type JudgeSource struct {
	Name string `json:"name"`
	YAML string `json:"yaml"`
}

// LoadJudgeSource reads a built-in judge or a spec file as a JudgeSource.
func LoadJudgeSource(nameOrPath string) (JudgeSource, error) {
	name, b, err := judge.LoadSource(nameOrPath)
	return JudgeSource{Name: name, YAML: string(b)}, err
}

// ACRArgs is one unit of an ACR round: one instruction's samples, their
// runs in the sandbox, their scores, the comparison with the reference and
// the critique, with the round's settings.
type ACRArgs struct {
	Instruction *acr.Instruction `json:"instruction"`
	Round       int              `json:"round"`
	Generator   string           `json:"generator"`
	JudgeModel  string           `json:"judge_model"`
	CriticModel string           `json:"critic_model"`
	// BaseURLs are the models' servers ("provider:name" -> URL), where given.
	BaseURLs    map[string]string  `json:"base_urls,omitempty"`
	System      string             `json:"system"`
	N           int                `json:"n"`
	Temperature float64            `json:"temperature"`
	MaxTokens   int                `json:"max_tokens"`
	Pointwise   JudgeSource        `json:"pointwise"`
	Pairwise    JudgeSource        `json:"pairwise"`
	Weights     map[string]float64 `json:"weights"`
	ExecWeight  float64            `json:"exec_weight"`
	Ties        string             `json:"ties"`
	Wall        time.Duration      `json:"wall"`
}

// Kind implements river.JobArgs.
func (ACRArgs) Kind() string { return "gavel_acr_instruction" }

// ACRUnits makes the units of a round: cfg as the command made it, the
// judges' sources, the models' servers and the sandbox's wall-clock limit.
func ACRUnits(cfg acr.Config, ins []*acr.Instruction, pointwise, pairwise JudgeSource, baseURLs map[string]string, wall time.Duration) []ACRArgs {
	var units []ACRArgs
	for _, in := range ins {
		units = append(units, ACRArgs{Instruction: in, Round: cfg.Round, Generator: cfg.Generator, JudgeModel: cfg.JudgeModel,
			CriticModel: cfg.CriticModel, BaseURLs: baseURLs, System: cfg.System, N: cfg.N, Temperature: cfg.Temperature,
			MaxTokens: cfg.MaxTokens, Pointwise: pointwise, Pairwise: pairwise, Weights: cfg.Weights, ExecWeight: cfg.ExecWeight,
			Ties: string(cfg.Ties), Wall: wall})
	}
	return units
}

// EnqueueACR inserts the units and returns their ids.
func EnqueueACR(ctx context.Context, c *Client, units []ACRArgs) ([]int64, error) {
	args := make([]river.JobArgs, len(units))
	for i, u := range units {
		args[i] = u
	}
	return enqueue(ctx, c, args)
}

type acrWorker struct {
	river.WorkerDefaults[ACRArgs]
	env *Env
}

// byModel sends each request to its model's client.
type byModel struct {
	env  *Env
	urls map[string]string
}

func (b byModel) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	c, err := b.env.Model(req.Model, b.urls[req.Model])
	if err != nil {
		return nil, err
	}
	return c.Complete(ctx, req)
}

func (w *acrWorker) Work(ctx context.Context, job *river.Job[ACRArgs]) error {
	a := job.Args
	if a.Instruction == nil {
		return river.JobCancel(fmt.Errorf("an ACR unit without its instruction"))
	}
	pw, err := judge.Parse(a.Pointwise.Name, []byte(a.Pointwise.YAML))
	if err != nil {
		return river.JobCancel(err)
	}
	pp, err := judge.Parse(a.Pairwise.Name, []byte(a.Pairwise.YAML))
	if err != nil {
		return river.JobCancel(err)
	}
	cfg := acr.Config{Round: a.Round, Generator: a.Generator, JudgeModel: a.JudgeModel, CriticModel: a.CriticModel,
		System: a.System, N: a.N, Temperature: a.Temperature, MaxTokens: a.MaxTokens, Pointwise: pw, Pairwise: pp,
		Weights: a.Weights, ExecWeight: a.ExecWeight, Ties: acr.Side(a.Ties), Concurrency: a.N, Executions: 1}
	lim := bexec.Limits{Wall: a.Wall}
	ex := &acr.Cached{Exec: w.env.sandbox(a.Wall), Cache: w.env.Executions, Limits: lim}
	round, err := acr.NewRound(cfg, byModel{env: w.env, urls: a.BaseURLs}, ex, []*acr.Instruction{a.Instruction})
	if err != nil {
		return river.JobCancel(err)
	}
	// The round fills the model and execution caches; the command's own
	// pass over all instructions then reads everything from them.
	return round.Run(ctx)
}
