package refine

import (
	"context"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/teacher"
)

// Plan tallies the model calls a calibration would make, without making
// any (--dry-run). Its first stage is exact: the teacher (each teacher of
// a panel) on train and the
// original prompt on train, val and test, each checked against the cache.
// The rest depends on answers, so it is an upper bound: per iteration, the
// proposer on every kept training record the version gets wrong (at most
// all of train), the applier (two calls when the first revision is
// refused), the new version on the kept training records and on val; and
// at the end the selected version on test. With ValidateEdits, each edit
// unit alone: an applier call (two when refused) and the judge on a
// sample of other training records, at most one unit per disagreement.
func Plan(ctx context.Context, plan *llm.Plan, cache llm.Cache, data Data, cfg Config) error {
	cfg = cfg.withDefaults()
	orig := cfg.Judge
	for _, model := range cfg.TeacherModels {
		var teach []*llm.Request
		for _, r := range data.Train {
			req, err := teacher.Request(orig, model, r)
			if err != nil {
				return err
			}
			teach = append(teach, req)
		}
		what := "teacher on train"
		if len(cfg.TeacherModels) > 1 {
			what = "teacher " + model + " on train"
		}
		if err := plan.Exact(ctx, cache, "teacher", what, teach); err != nil {
			return err
		}
		if cfg.LabelBlind {
			var blind []*llm.Request
			for _, r := range data.Train {
				req, err := teacher.BlindRequest(orig, model, r)
				if err != nil {
					return err
				}
				blind = append(blind, req)
			}
			if err := plan.Exact(ctx, cache, "teacher", "label-blind "+what, blind); err != nil {
				return err
			}
		}
	}
	for _, part := range []struct {
		name string
		rs   []*record.Record
	}{{"train", data.Train}, {"val", data.Val}, {"test", data.Test}} {
		if err := judge.PlanRun(ctx, plan, cache, orig, cfg.Model, part.rs, "original prompt on "+part.name); err != nil {
			return err
		}
	}
	if len(data.Train) == 0 || len(data.Val) == 0 {
		return nil
	}
	// Bounds. Each record's requests are built as they will be, with
	// what cannot be known yet at its largest: a revised prompt grown to
	// the cap; a proposer's request carrying the judge's reasoning and the
	// teacher's explanation, each at its answer's bound.
	growth := int64(cfg.MaxPromptChars-PromptSize(orig)) / 4
	var judgeTrain, judgeVal, judgeTest, prop int64
	var judgeLike, propLike *llm.Request
	for _, part := range []struct {
		rs  []*record.Record
		sum *int64
	}{{data.Train, &judgeTrain}, {data.Val, &judgeVal}, {data.Test, &judgeTest}} {
		for _, r := range part.rs {
			req, err := orig.Request(cfg.Model, judge.InputOf(r))
			if err != nil {
				return err
			}
			in, _ := tokens(req)
			*part.sum += in + growth
			judgeLike = req
		}
	}
	teachReq, err := teacher.Request(orig, cfg.TeacherModel, data.Train[0])
	if err != nil {
		return err
	}
	_, teachOut := tokens(teachReq)
	_, judgeOut := tokens(judgeLike)
	for _, r := range data.Train {
		req, err := ProposerRequest(orig, cfg.EditorModel, r, &judge.Verdict{}, orig.PassThreshold(), "")
		if err != nil {
			return err
		}
		in, _ := tokens(req)
		prop += in + growth + judgeOut + teachOut
		propLike = req
	}
	applier, err := ApplierRequest(orig, cfg.EditorModel, nil, cfg.MaxPromptChars)
	if err != nil {
		return err
	}
	applierIn, _ := tokens(applier)
	// Repeated runs share the first stage (the cache answers it again)
	// and each make the rest.
	runs := max(1, cfg.Repeats)
	iters := cfg.MaxIter * runs
	n := int64(iters)
	plan.Bound("proposer", "iterations: proposals from disagreements", propLike, iters*len(data.Train), n*prop)
	plan.Bound("applier", "iterations: prompt revisions", applier, 2*iters, 2*n*(applierIn+int64(cfg.MaxPromptChars)/4))
	plan.Bound("judge", "iterations: new versions on train (kept) and val", judgeLike, iters*(len(data.Train)+len(data.Val)), n*(judgeTrain+judgeVal))
	if cfg.ValidateEdits {
		// Each edit unit alone: at most one per disagreement, each an
		// applier call (two when refused) and the sample's judge calls.
		units := iters * len(data.Train)
		sample := min(cfg.ValidateSample, len(data.Train))
		perJudge := judgeTrain / int64(max(1, len(data.Train)))
		plan.Bound("applier", "iterations: --validate-edits, each edit alone", applier, 2*units, 2*int64(units)*(applierIn+int64(cfg.MaxPromptChars)/4))
		plan.Bound("judge", "iterations: --validate-edits, each edit alone on other training records", judgeLike, units*sample, int64(units*sample)*perJudge)
	}
	plan.Bound("judge", "selected version on test", judgeLike, runs*len(data.Test), int64(runs)*judgeTest)
	return nil
}

func tokens(req *llm.Request) (int64, int64) {
	out := int64(req.MaxTokens)
	if out <= 0 {
		out = llm.DefaultMaxTokens
	}
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content)
	}
	return int64(chars / 4), out
}
