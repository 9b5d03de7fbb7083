package refine

import (
	"errors"
	"fmt"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
)

// DefaultValidateSample is how many other kept training records an edit
// is tried on (--validate-edits).
const DefaultValidateSample = 40

// editUnits groups accepted edits into what is validated as one: a new
// reason to fail with the reason to pass it is balanced with (Balance
// puts them side by side), or a rewording or removal alone.
func editUnits(accepted []Proposal) [][]Proposal {
	var out [][]Proposal
	for i := 0; i < len(accepted); i++ {
		if accepted[i].Kind == FailReason && i+1 < len(accepted) && accepted[i+1].Kind == PassReason {
			out = append(out, accepted[i:i+2])
			i++
			continue
		}
		out = append(out, accepted[i:i+1])
	}
	return out
}

// validateEdits keeps the edit units that, applied alone to the current
// prompt, fix at least as many verdicts as they break on a sample of the
// kept training records that motivated none of them (an edit written to
// fit its own records and harmful elsewhere goes). Each unit costs one
// applier call (two when the first revision is refused) and the sample's
// judge calls, all cached.
func (c *calibration) validateEdits(it int, cur *Version, kept []*record.Record, curTrain map[string]judge.Verdict, accepted []Proposal) ([]Proposal, []DroppedEdit, error) {
	sg := &stage{name: fmt.Sprintf("iteration %d: validating edits", it)}
	var keep []Proposal
	var dropped []DroppedEdit
	for _, unit := range editUnits(accepted) {
		motivated := motivatedBy(nil, unit)
		var others []*record.Record
		for _, r := range kept {
			if !motivated[r.ID] {
				others = append(others, r)
			}
		}
		sample := judge.RetestRecords(others, c.cfg.ValidateSample)
		ap, err := applyEdits(c.ctx, c.client, cur.Spec, c.cfg.EditorModel, unit, c.cfg.MaxPromptChars, c.cfg.MinKept, c.cfg.sample)
		if errors.Is(err, llm.ErrPending) {
			sg.pending++
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if ap.rev == nil || len(sample) == 0 {
			why := "validation: the prompt with this edit alone was refused (" + ap.note + ")"
			if len(sample) == 0 {
				why = "validation: no other kept training record to try it on"
			}
			for _, p := range unit {
				dropped = append(dropped, DroppedEdit{p, why})
			}
			continue
		}
		vs, err := c.judgeSet(sg, ap.rev.Spec, sample, "validation of an edit")
		if err != nil {
			return nil, nil, err
		}
		if vs == nil {
			continue // pending
		}
		fixed, broken := 0, 0
		for _, r := range sample {
			before, ok := curTrain[r.ID]
			after, ok2 := vs[r.ID]
			if !ok || !ok2 {
				continue
			}
			b, a := before.Decide(cur.Spec.Kind, cur.Spec.PassThreshold()), after.Decide(ap.rev.Spec.Kind, ap.rev.Spec.PassThreshold())
			switch label := judge.Outcome(r.Outcome.Label); {
			case b != label && a == label && a != judge.Invalid:
				fixed++
			case b == label && a != label:
				broken++
			}
		}
		if fixed >= broken {
			keep = append(keep, unit...)
			continue
		}
		for _, p := range unit {
			dropped = append(dropped, DroppedEdit{p, fmt.Sprintf("validation: alone it fixes %d and breaks %d of %d other kept training records", fixed, broken, len(sample))})
		}
	}
	if err := sg.err(); err != nil {
		return nil, nil, err
	}
	return keep, dropped, nil
}
