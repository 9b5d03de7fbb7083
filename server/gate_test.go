package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/llm/llmtest"
	"github.com/gavelhq/gavel/llm/openai"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/server"
	"github.com/gavelhq/gavel/sim"
	"github.com/gavelhq/gavel/store/sqlite"
)

// world imports a simulated world's records and splits them 40/30/30
// (drafts left out) under name; it returns the parts.
func (e *env) world(name string, opt sim.WorldOptions) refine.Data {
	e.t.Helper()
	ctx := context.Background()
	rs := simRecords(e.t, opt)
	var members []record.Member
	err := e.db.Import(ctx, func(w record.Writer) error {
		for i := range rs {
			if _, err := w.Put(ctx, &rs[i]); err != nil {
				return err
			}
			if rs[i].Outcome.Status != record.StatusDraft {
				members = append(members, record.MemberOf(&rs[i]))
			}
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	split, err := record.MakeSplit(members, record.SplitSpec{Name: name, Train: 0.4, Val: 0.3, Test: 0.3, Seed: 1,
		ExcludeStatus: []record.Status{record.StatusDraft}})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.SaveSplit(ctx, split, false); err != nil {
		e.t.Fatal(err)
	}
	var d refine.Data
	for _, part := range record.Parts {
		var out []*record.Record
		err := e.db.Records(ctx, record.Filter{Split: name, Part: part}, func(r *record.Record) error { out = append(out, r); return nil })
		if err != nil {
			e.t.Fatal(err)
		}
		switch part {
		case record.Train:
			d.Train = out
		case record.Val:
			d.Val = out
		default:
			d.Test = out
		}
	}
	return d
}

// neutral is the built-in passfail with a sentence that changes nothing
// a judge decides on: a version with no supported gain.
func (e *env) neutral() *judge.PromptVersion {
	e.t.Helper()
	s, _ := judge.Load("passfail")
	s.System += "\nWrite your reasoning in plain English.\n"
	pv := judge.VersionOf(s)
	if err := e.db.SavePrompt(context.Background(), pv); err != nil {
		e.t.Fatal(err)
	}
	return pv
}

// The gate refuses a version whose gain's interval reaches 0, and
// promotes a calibrated one whose interval lies above 0; a forced
// promotion needs a reason; every change is an audit entry; rollback goes
// back.
func TestPromotionGate(t *testing.T) {
	e := start(t, server.Config{Simulated: true}, simService)
	ctx := context.Background()
	// World 1: one whose calibration selects a version, as most do.
	data := e.world("main", sim.WorldOptions{N: 1200, Seed: 1})
	passfail, _ := judge.Load("passfail")
	res, err := refine.Calibrate(ctx, e.svc, e.db, data, refine.Config{Judge: passfail, Model: "sim", MaxIter: 5, Concurrency: 8,
		Boot: metrics.BootstrapOptions{Resamples: 500, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	selected := res.Versions[res.Selected].Hash
	if res.Selected == 0 {
		t.Fatalf("the calibration kept the original prompt; the gate test needs a calibrated version (gain %+v)", res.Gain["scott_pi"])
	}
	if err := e.db.SaveCalibration(ctx, "passfail", selected, "main", "sim", res); err != nil {
		t.Fatal(err)
	}
	// A first use activates the built-in.
	rs := simRecords(t, sim.WorldOptions{N: 3, Seed: 77})
	rs[0].ID = "pr-1"
	a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", &rs[0]))
	if a.code != 200 || a.body["version"] != passfail.Version() {
		t.Fatalf("first use: %d %s", a.code, a.raw)
	}

	// No supported gain: refused with the interval, nothing activated.
	neutral := e.neutral()
	refused := e.do("POST", "/v1/judges/passfail/promote", e.tok[deploy.ScopeAdmin], jsonBody(map[string]any{"version": neutral.Hash, "split": "main"}))
	if refused.code != 409 || refused.body["promoted"] != false || !strings.Contains(refused.body["error"].(string), "refused") {
		t.Fatalf("neutral version: %d %s", refused.code, refused.raw)
	}
	ev := refused.body["evidence"].(map[string]any)
	gain := ev["gain_scott_pi"].(map[string]any)
	lo := gain["ci"].(map[string]any)["lo"].(float64)
	if lo > 0 || ev["passed"] != false || ev["split"] != "main" || ev["part"] != "test" || ev["n"].(float64) != float64(len(data.Test)) {
		t.Fatalf("evidence of the refusal: %v", ev)
	}
	if act, _ := deploy.Active(ctx, e.db, "passfail"); act == nil || act.Version != passfail.Version() {
		t.Fatalf("active after a refusal: %+v", act)
	}

	// The calibrated version: its gain's lower bound is above 0.
	ok := e.do("POST", "/v1/judges/passfail/promote", e.tok[deploy.ScopeAdmin], jsonBody(map[string]any{"version": selected[:12]}))
	if ok.code != 200 || ok.body["promoted"] != true {
		t.Fatalf("calibrated version: %d %s", ok.code, ok.raw)
	}
	ev = ok.body["evidence"].(map[string]any)
	gain = ev["gain_scott_pi"].(map[string]any)
	if gain["ci"].(map[string]any)["lo"].(float64) <= 0 || ev["baseline"] != passfail.Version() || ev["candidate"] != selected {
		t.Fatalf("evidence of the promotion: %v", ev)
	}
	// The calibration measured the same gain on the same test part.
	if want := res.Gain["scott_pi"].Value.V; abs(gain["value"].(float64)-want) > 1e-9 {
		t.Fatalf("gate gain %v, calibration's %v", gain["value"], want)
	}
	// Judging now uses the promoted version.
	rs[1].ID = "pr-2"
	if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", &rs[1])); a.body["version"] != selected {
		t.Fatalf("after promotion: %s", a.raw)
	}
	// Forcing needs a reason; with one, the refused version goes in.
	if a := e.do("POST", "/v1/judges/passfail/promote", e.tok[deploy.ScopeAdmin], jsonBody(map[string]any{"version": neutral.Hash, "split": "main", "force": true})); a.code != 400 || !strings.Contains(a.raw, "reason") {
		t.Fatalf("force without reason: %d %s", a.code, a.raw)
	}
	forced := e.do("POST", "/v1/judges/passfail/promote", e.tok[deploy.ScopeAdmin],
		jsonBody(map[string]any{"version": neutral.Hash, "split": "main", "force": true, "reason": "wording policy"}))
	if forced.code != 200 || forced.body["activation"].(map[string]any)["action"] != "force" {
		t.Fatalf("forced: %d %s", forced.code, forced.raw)
	}
	rb := e.do("POST", "/v1/judges/passfail/rollback", e.tok[deploy.ScopeAdmin], `{"reason": "forced by mistake"}`)
	if rb.code != 200 || rb.body["activation"].(map[string]any)["version"] != selected {
		t.Fatalf("rollback: %d %s", rb.code, rb.raw)
	}
	acts, err := e.db.Activations(ctx, "passfail")
	if err != nil {
		t.Fatal(err)
	}
	var trail []string
	for _, a := range acts {
		trail = append(trail, a.Action+" "+a.Version[:8]+" by "+a.Actor+": "+a.Reason)
	}
	want := []string{
		"initial " + passfail.Version()[:8] + " by gavel: first use of the built-in judge",
		"promote " + selected[:8] + " by token ",
		"force " + neutral.Hash[:8] + " by token ",
		"rollback " + selected[:8] + " by token ",
	}
	if len(trail) != len(want) {
		t.Fatalf("audit trail:\n%s", strings.Join(trail, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(trail[i], want[i]) || i > 0 && !strings.Contains(trail[i], "(admin test)") {
			t.Fatalf("audit entry %d: %q, want %q...", i, trail[i], want[i])
		}
	}
	if !strings.HasSuffix(trail[2], ": wording policy") || !strings.HasSuffix(trail[3], ": forced by mistake") {
		t.Fatalf("reasons: %q", trail)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// The drift monitor: a promoted version judges a stream of changes from a
// world that decays (hidden failures rise); once the outcomes of the late
// months arrive, the monitor raises its alert, and not before.
func TestDriftAlertOnSimulatedDecay(t *testing.T) {
	e := start(t, server.Config{Simulated: true, Rate: -1}, simService)
	ctx := context.Background()
	// The baseline and the stream are records of one world (its truth),
	// drawn apart.
	world := sim.NewWorld(4) // it holds as well in worlds 1, 2, 5 and 11
	e.world("base", sim.WorldOptions{N: 600, Seed: 4, World: world})
	neutral := e.neutral()
	// The monitor compares with the interval measured at promotion.
	_, ev, err := deploy.Promote(ctx, e.db, e.svc, "sim", "passfail", neutral.Hash, deploy.PromoteOptions{Split: "base", Force: true,
		Reason: "baseline for the monitor", Actor: "test", Boot: metrics.BootstrapOptions{Resamples: 500, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	stream := simRecords(t, sim.WorldOptions{N: 2400, Seed: 11, World: world, Months: 12, HiddenFailEnd: 0.6,
		Start: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)})
	post := func(from, to time.Time) {
		t.Helper()
		for i := range stream {
			r := &stream[i]
			if r.Outcome.At.Before(from) || !r.Outcome.At.Before(to) {
				continue
			}
			r.ID = "stream-" + r.ID
			if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], judgeBody("passfail", r)); a.code != 200 {
				t.Fatalf("judge %s: %d %s", r.ID, a.code, a.raw)
			}
			body := jsonBody(map[string]any{"change_id": r.ID, "status": r.Outcome.Status, "at": r.Outcome.At.Format(time.RFC3339)})
			if a := e.do("POST", "/v1/outcomes", e.tok[deploy.ScopeFeedback], body); a.code != 201 {
				t.Fatalf("outcome %s: %d %s", r.ID, a.code, a.raw)
			}
		}
	}
	drift := func() *deploy.DriftReport {
		t.Helper()
		var rep deploy.DriftReport
		a := e.do("GET", "/v1/drift?judge=passfail&by=month", e.tok[deploy.ScopeReview], "")
		if a.code != 200 {
			t.Fatalf("drift: %d %s", a.code, a.raw)
		}
		if err := jsonUnmarshal(a.raw, &rep); err != nil {
			t.Fatal(err)
		}
		for _, w := range rep.Windows {
			t.Logf("%s n=%d pi=%v %v", w.Start.Format("2006-01"), w.N, w.Pi.Value, w.Pi.CI)
		}
		t.Log(rep.Status)
		return &rep
	}
	mid := time.Date(2025, 8, 1, 0, 0, 0, 0, time.UTC)
	post(time.Time{}, mid)
	early := drift()
	if early.Alert || len(early.Windows) != 2 || early.Baseline == nil || early.Baseline.CI.Lo != ev.CandidatePi.CI.Lo {
		t.Fatalf("early months: alert %v, %d windows, baseline %+v (gate %+v)", early.Alert, len(early.Windows), early.Baseline, ev.CandidatePi)
	}
	post(mid, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	late := drift()
	if !late.Alert || len(late.Windows) != 12 || !strings.HasPrefix(late.Status, "ALERT") {
		t.Fatalf("after the decay: alert %v, %d windows: %s", late.Alert, len(late.Windows), late.Status)
	}
	first, last := late.Windows[0].Pi.Value.V, late.Windows[11].Pi.Value.V
	if last >= first || last >= late.Baseline.CI.Lo {
		t.Fatalf("pi first month %.3f, last %.3f, baseline lower bound %.3f", first, last, late.Baseline.CI.Lo)
	}

	// The alert starts a recalibration on the outcomes that arrived; its
	// result is a candidate, and the active version stays.
	opt := deploy.RecalibrateOptions{By: "month"}
	mon := &deploy.Monitor{Store: e.db, Client: e.svc, Model: "sim", Boot: metrics.BootstrapOptions{Resamples: 500, Seed: 1}}
	rc, err := mon.Recalibrate(ctx, "passfail", opt)
	if err != nil || rc == nil {
		t.Fatalf("recalibrate: %+v %v", rc, err)
	}
	t.Logf("recalibration: %+v gain %v %v", rc, rc.Gain.Value, rc.Gain.CI)
	if rc.From != neutral.Hash || rc.Records != 2400-countDrafts(stream) || !strings.HasPrefix(rc.Split, "recal-passfail-") {
		t.Fatalf("recalibration %+v", rc)
	}
	if act, _ := deploy.Active(ctx, e.db, "passfail"); act.Version != neutral.Hash {
		t.Fatalf("the recalibration changed the active version to %.12s", act.Version)
	}
	cals, err := e.db.Calibrations(ctx, "passfail")
	if err != nil || len(cals) != 1 || cals[0].Split != rc.Split || cals[0].Selected != rc.Candidate {
		t.Fatalf("calibrations %+v %v", cals, err)
	}
	// Once per alert.
	if again, err := mon.Recalibrate(ctx, "passfail", opt); again != nil || err != nil {
		t.Fatalf("a second recalibration for the same alert: %+v %v", again, err)
	}
	// The candidate goes through the gate on the recalibration's test part.
	if rc.Candidate != rc.From {
		_, ev, err := deploy.Promote(ctx, e.db, e.svc, "sim", "passfail", rc.Candidate, deploy.PromoteOptions{Actor: "test",
			Boot: metrics.BootstrapOptions{Resamples: 500, Seed: 1}})
		if ev == nil || ev.Split != rc.Split || ev.Passed != (err == nil) {
			t.Fatalf("gate of the candidate: %+v %v", ev, err)
		}
		t.Logf("gate: %s (%v)", ev.Summary(), err)
	}
}

func countDrafts(rs []record.Record) int {
	n := 0
	for _, r := range rs {
		if r.Outcome.Status == record.StatusDraft {
			n++
		}
	}
	return n
}

// The gate through the OpenAI wire protocol: the judging it needs goes to
// the provider (a fake that answers by the prompt it is sent), once per
// record and version, and a second promotion sends nothing new.
func TestPromotionThroughOpenAIWire(t *testing.T) {
	fake := llmtest.NewOpenAI()
	defer fake.Close()
	const rule = "Fail any change that calls os.Exit outside package main."
	fake.Answer = func(c *llmtest.Call) string {
		if strings.Contains(c.System, rule) && strings.Contains(c.LastUser, "os.Exit") {
			return `{"reasoning": "It exits the process from a library.", "verdict": "fail"}`
		}
		return `{"reasoning": "Looks fine.", "verdict": "pass"}`
	}
	e := start(t, server.Config{Model: "openai:judge-model"}, func(db *sqlite.DB) *llm.Service {
		reg := llm.NewRegistry()
		reg.Register(openai.Info)
		return llm.NewService(reg, db.Cache(), llm.Options{
			Providers: map[string]llm.ProviderConfig{"openai": {BaseURL: fake.URL + "/v1", APIKey: "test-key"}}})
	})
	ctx := context.Background()
	var rs []*record.Record
	var members []record.Member
	err := e.db.Import(ctx, func(w record.Writer) error {
		for i := range 40 {
			r := &record.Record{ID: fmt.Sprintf("pr-%d", i), Task: "Handle a bad config.", Group: fmt.Sprintf("g%d", i)}
			if i%2 == 0 {
				r.Candidate, r.Outcome.Status = fmt.Sprintf("+\tlog.Print(err) // %d\n+\tos.Exit(1)\n", i), record.StatusFailed
			} else {
				r.Candidate, r.Outcome.Status = fmt.Sprintf("+\treturn fmt.Errorf(\"config %d: %%w\", err)\n", i), record.StatusPassed
			}
			if err := r.Normalize(); err != nil {
				return err
			}
			if _, err := w.Put(ctx, r); err != nil {
				return err
			}
			rs = append(rs, r)
			members = append(members, record.MemberOf(r))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	split, err := record.MakeSplit(members, record.SplitSpec{Name: "prs", Train: 0.25, Val: 0.25, Test: 0.5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.SaveSplit(ctx, split, false); err != nil {
		t.Fatal(err)
	}
	s, _ := judge.Load("passfail")
	s.System += "\n" + rule + "\n"
	cand := judge.VersionOf(s)
	if err := e.db.SavePrompt(ctx, cand); err != nil {
		t.Fatal(err)
	}
	// A first judging activates the built-in.
	if a := e.do("POST", "/v1/judge", e.tok[deploy.ScopeJudge], jsonBody(map[string]any{"judge": "passfail", "change_id": "new",
		"inputs": map[string]any{"task": "t", "candidate": "+x\n"}})); a.code != 200 || fake.Count() != 1 {
		t.Fatalf("judge: %d %s", a.code, a.raw)
	}
	a := e.do("POST", "/v1/judges/passfail/promote", e.tok[deploy.ScopeAdmin], jsonBody(map[string]any{"version": cand.Hash, "split": "prs"}))
	if a.code != 200 || a.body["promoted"] != true {
		t.Fatalf("promote: %d %s", a.code, a.raw)
	}
	ev := a.body["evidence"].(map[string]any)
	test := int(ev["n"].(float64))
	if test != 20 || fake.Count() != 1+2*test {
		t.Fatalf("%d test records, %d calls to the provider (want one per record and version)", test, fake.Count())
	}
	if pi := ev["candidate_scott_pi"].(map[string]any)["value"].(float64); pi != 1 {
		t.Fatalf("candidate pi %v, want 1 (it fails exactly the os.Exit changes)", pi)
	}
	// Back, and promote again: every verdict is known, nothing is sent.
	if a := e.do("POST", "/v1/judges/passfail/rollback", e.tok[deploy.ScopeAdmin], `{}`); a.code != 200 {
		t.Fatalf("rollback: %d %s", a.code, a.raw)
	}
	if a := e.do("POST", "/v1/judges/passfail/promote", e.tok[deploy.ScopeAdmin], jsonBody(map[string]any{"version": cand.Hash, "split": "prs"})); a.code != 200 || fake.Count() != 1+2*test {
		t.Fatalf("promote again: %d, %d calls", a.code, fake.Count())
	}
}
