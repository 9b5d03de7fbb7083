package judge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/sim"
)

func simService() *llm.Service {
	reg := llm.NewRegistry()
	reg.Register(sim.Info)
	return llm.NewService(reg, nil, llm.Options{})
}

func simRecords(t testing.TB, n int, seed uint64) []*record.Record {
	rs, err := sim.Records(sim.WorldOptions{N: n, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	var out []*record.Record
	for i := range rs {
		if rs[i].Outcome.Status == record.StatusDraft {
			continue
		}
		out = append(out, &rs[i])
	}
	return out
}

// namingPrompt adds to a spec's system prompt a line per signal: fatal ones
// as reasons to fail and benign ones as harmless, or the other way round.
func namingPrompt(s *judge.Spec, backwards bool) *judge.Spec {
	c := *s
	var b strings.Builder
	b.WriteString("\n\nWhat this team has learnt about its agents' changes:\n")
	for _, sig := range sim.Signals {
		fatal := sig.Effect == sim.Fatal
		if backwards {
			fatal = !fatal
		}
		if fatal {
			b.WriteString("- Fail a change that " + sig.Phrase + ".\n")
		} else {
			b.WriteString("- A change that " + sig.Phrase + " is harmless: not a reason to fail.\n")
		}
	}
	c.System += b.String()
	return &c
}

// simVerdicts judges records with the simulated model, by record ID.
func simVerdicts(t testing.TB, s *judge.Spec, rs []*record.Record) map[string]judge.Verdict {
	t.Helper()
	res, err := judge.Run(context.Background(), simService(), s, "sim", rs, judge.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]judge.Verdict{}
	for _, v := range res.Verdicts {
		byID[v.RecordID] = v
	}
	return byID
}

func agreement(t testing.TB, s *judge.Spec, rs []*record.Record, threshold int) (*metrics.Binary, int) {
	byID := simVerdicts(t, s, rs)
	var ref, pred []int
	invalid := 0
	for _, r := range rs {
		l := metrics.Fail
		if r.Outcome.Label == record.Pass {
			l = metrics.Pass
		}
		v := byID[r.ID]
		p := metrics.Invalid
		switch v.Decide(s.Kind, threshold) {
		case judge.Pass:
			p = metrics.Pass
		case judge.Fail:
			p = metrics.Fail
		default:
			invalid++
		}
		ref, pred = append(ref, l), append(pred, p)
	}
	return metrics.ComputeBinary(ref, pred, nil), invalid
}

func TestSimulatedWorldRewardsBetterPrompts(t *testing.T) {
	rs := simRecords(t, 600, 11)
	for _, name := range []string{"passfail", "rubric5"} {
		s, err := judge.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		th := s.PassThreshold()
		base, inv := agreement(t, s, rs, th)
		good, _ := agreement(t, namingPrompt(s, false), rs, th)
		bad, _ := agreement(t, namingPrompt(s, true), rs, th)
		t.Logf("%s: built-in pi %.3f (acc %.3f, invalid %d), naming right %.3f, backwards %.3f",
			name, base.ScottPi.V, base.Accuracy.V, inv, good.ScottPi.V, bad.ScottPi.V)
		if base.ScottPi.V < 0.1 || base.ScottPi.V > 0.45 {
			t.Errorf("%s built-in pi %.3f is outside 0.1..0.45", name, base.ScottPi.V)
		}
		if good.ScottPi.V < 0.7 {
			t.Errorf("%s with the signals named right: pi %.3f < 0.7", name, good.ScottPi.V)
		}
		if bad.ScottPi.V >= base.ScottPi.V {
			t.Errorf("%s with the signals named backwards: pi %.3f not below the built-in %.3f", name, bad.ScottPi.V, base.ScottPi.V)
		}
		if inv == 0 {
			t.Errorf("%s: no invalid answer: the invalid path is not exercised", name)
		}
	}
}
