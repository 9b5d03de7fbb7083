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
func namingPrompt(s *judge.Spec, world *sim.World, backwards bool) *judge.Spec {
	c := *s
	var b strings.Builder
	b.WriteString("\n\nWhat this team has learnt about its agents' changes:\n")
	for _, sig := range sim.Signals {
		fatal := world.Effect(sig) == sim.Fatal
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

// In each of three worlds: the built-in prompts agree a little with the
// outcomes, a prompt that names what is fatal in that world agrees well,
// and one that names it backwards worse than the built-in.
func TestSimulatedWorldRewardsBetterPrompts(t *testing.T) {
	for seed := uint64(11); seed <= 13; seed++ {
		rs := simRecords(t, 600, seed)
		for _, name := range []string{"passfail", "rubric5"} {
			s, err := judge.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			th := s.PassThreshold()
			base, inv := agreement(t, s, rs, th)
			good, _ := agreement(t, namingPrompt(s, sim.NewWorld(seed), false), rs, th)
			bad, _ := agreement(t, namingPrompt(s, sim.NewWorld(seed), true), rs, th)
			t.Logf("world %d %s: built-in pi %.3f (acc %.3f, invalid %d), naming right %.3f, backwards %.3f",
				seed, name, base.ScottPi.V, base.Accuracy.V, inv, good.ScottPi.V, bad.ScottPi.V)
			if base.ScottPi.V < 0.02 || base.ScottPi.V > 0.5 {
				t.Errorf("world %d %s built-in pi %.3f is outside 0.02..0.5", seed, name, base.ScottPi.V)
			}
			if good.ScottPi.V < 0.6 || good.ScottPi.V < base.ScottPi.V+0.3 {
				t.Errorf("world %d %s with the signals named right: pi %.3f, want at least 0.6 and 0.3 above the built-in %.3f", seed, name, good.ScottPi.V, base.ScottPi.V)
			}
			if bad.ScottPi.V >= base.ScottPi.V {
				t.Errorf("world %d %s with the signals named backwards: pi %.3f not below the built-in %.3f", seed, name, bad.ScottPi.V, base.ScottPi.V)
			}
			if inv == 0 {
				t.Errorf("world %d %s: no invalid answer: the invalid path is not exercised", seed, name)
			}
		}
	}
}
