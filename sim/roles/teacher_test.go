package roles_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/sim/roles"
	"github.com/gavelhq/gavel/teacher"
)

const core = `diff --git a/svc/orders/create.go b/svc/orders/create.go
--- a/svc/orders/create.go
+++ b/svc/orders/create.go
@@ -10,3 +10,6 @@
 func CreateOrder(ctx context.Context, o Order) (*Order, error) {
+	if len(o.Items) == 0 {
+		return nil, ErrEmptyOrder
+	}
 	o.Status = StatusNew
`

const discard = `diff --git a/svc/cache/evict.go b/svc/cache/evict.go
--- a/svc/cache/evict.go
+++ b/svc/cache/evict.go
@@ -40,3 +40,4 @@
 func (c *Cache) Evict(key string) error {
-	return c.backend.Delete(key)
+	_ = c.backend.Delete(key)
+	return nil
 }
`

const loop = `diff --git a/svc/inventory/total.go b/svc/inventory/total.go
--- a/svc/inventory/total.go
+++ b/svc/inventory/total.go
@@ -20,5 +20,5 @@
 	sum := 0
-	for i := 0; i < len(items); i++ {
+	for i := 0; i <= len(items); i++ {
 		sum += items[i].Qty
`

const todo = `diff --git a/svc/report/render.go b/svc/report/render.go
--- a/svc/report/render.go
+++ b/svc/report/render.go
@@ -5,2 +5,3 @@
 func Render(w io.Writer, r *Report) error {
+	// TODO: paginate long reports
 	return tmpl.Execute(w, r)
`

const nilMap = `diff --git a/svc/stats/count.go b/svc/stats/count.go
--- a/svc/stats/count.go
+++ b/svc/stats/count.go
@@ -3,3 +3,3 @@
 func CountWords(words []string) map[string]int {
-	counts := make(map[string]int, len(words))
+	var counts map[string]int
 	for _, w := range words {
`

const dropped = `diff --git a/svc/store/save.go b/svc/store/save.go
--- a/svc/store/save.go
+++ b/svc/store/save.go
@@ -1,6 +1,3 @@
 func (s *Store) Save(ctx context.Context, r Record) error {
 	data, err := json.Marshal(r)
-	if err != nil {
-		return fmt.Errorf("encode record %s: %w", r.ID, err)
-	}
 	return s.db.Put(ctx, r.ID, data)
`

const docs = `diff --git a/svc/geo/distance.go b/svc/geo/distance.go
--- a/svc/geo/distance.go
+++ b/svc/geo/distance.go
@@ -1,2 +1,4 @@
+// Distance returns the great-circle distance between a and b in
+// kilometres, by the haversine formula.
 func Distance(a, b Point) float64 {
 	return haversine(a, b)
`

const newTest = `diff --git a/svc/inventory/total_test.go b/svc/inventory/total_test.go
--- a/svc/inventory/total_test.go
+++ b/svc/inventory/total_test.go
@@ -5,0 +6,6 @@
+
+func TestTotalTwo(t *testing.T) {
+	if got := Total([]Item{{Qty: 2}, {Qty: 3}}); got != 5 {
+		t.Fatalf("got %d", got)
+	}
+}
`

type decision struct {
	Justification, Decision, Label string
}

func ask(t *testing.T, model string, spec *judge.Spec, r *record.Record) decision {
	t.Helper()
	req, err := teacher.Request(spec, "sim:"+model, r)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := roles.ParseConfig(model)
	if err != nil {
		t.Fatal(err)
	}
	text, ok := roles.Answer(cfg, req)
	if !ok {
		t.Fatal("the teacher did not answer")
	}
	var d decision
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func rec(id, candidate string, status record.Status, reason string) *record.Record {
	r := &record.Record{ID: id, Task: "Reject orders with no items (" + id + ")", Candidate: candidate, Reference: core,
		Outcome: record.Outcome{Status: status, Reason: reason}}
	if err := r.Normalize(); err != nil {
		panic(err)
	}
	return r
}

// The teacher uses the outcome it is told: it explains a failure by the
// most suspicious thing it sees in the change, quoting the line it
// blames; abstains on a failure it can point to no cause for and on a
// reason outside the code; keeps a pass, saying what it saw did no harm
// here, unless it holds something surely a defect (then it abstains); and
// corrects a pass only on overwhelming evidence: three sure defects.
func TestTeacherExplainsFromTheText(t *testing.T) {
	spec, _ := judge.Load("passfail")
	d := ask(t, "teacher-error=0", spec, rec("a", core+discard, record.StatusFailed, ""))
	if d.Decision != "keep" || !strings.Contains(d.Justification, "`_ = c.backend.Delete(key)`") {
		t.Fatalf("a discarded error that failed: %+v", d)
	}
	if d := ask(t, "teacher-error=0", spec, rec("b", core, record.StatusFailed, "")); d.Decision != "abstain" {
		t.Fatalf("a clean change that failed: %+v", d)
	}
	if d := ask(t, "teacher-error=0", spec, rec("c", core+discard, record.StatusAbandoned, "superseded")); d.Decision != "abstain" || !strings.Contains(d.Justification, "outside the code") {
		t.Fatalf("superseded: %+v", d)
	}
	// Told it passed, the teacher takes the discarded error for harmless
	// here: a world's local truth, learnt from its outcome.
	if d := ask(t, "teacher-error=0", spec, rec("d", core+discard, record.StatusPassed, "")); d.Decision != "keep" || d.Label != "pass" ||
		!strings.Contains(d.Justification, "only discards a value that is not needed") {
		t.Fatalf("a discarded error that passed: %+v", d)
	}
	if d := ask(t, "teacher-error=0", spec, rec("e", core+discard+loop, record.StatusPassed, "")); d.Decision != "abstain" || d.Label != "pass" {
		t.Fatalf("a sure defect that passed: %+v", d)
	}
	if d := ask(t, "teacher-error=0", spec, rec("f", core+loop+nilMap+dropped, record.StatusPassed, "")); d.Decision != "correct" || d.Label != "fail" {
		t.Fatalf("three sure defects that passed: %+v", d)
	}
	if d := ask(t, "teacher-error=0", spec, rec("g", core+todo, record.StatusPassed, "")); d.Decision != "keep" || !strings.Contains(d.Justification, "TODO") {
		t.Fatalf("a TODO that passed: %+v", d)
	}
	// A new test or doc comments are no cause it can point to; a
	// teacher that always misjudges blames them.
	if d := ask(t, "teacher-error=0", spec, rec("h", core+newTest, record.StatusFailed, "")); d.Decision != "abstain" {
		t.Fatalf("a failure with only a new test: %+v", d)
	}
	if d := ask(t, "teacher-error=0", spec, rec("i", core+docs, record.StatusFailed, "")); d.Decision != "abstain" {
		t.Fatalf("a failure with only doc comments: %+v", d)
	}
	if d := ask(t, "teacher-error=1", spec, rec("j", core+docs, record.StatusFailed, "")); d.Decision != "keep" || !strings.Contains(d.Justification, "great-circle") {
		t.Fatalf("an always-wrong teacher on doc comments that failed: %+v", d)
	}
}

// Without the reference the teacher notices a subtle defect less often,
// so it abstains more on failures; with it, the hunk outside the
// reference's scope is read closely and the defect is always seen.
func TestTeacherSeesLessWithoutTheReference(t *testing.T) {
	spec, _ := judge.Load("passfail")
	noRef, _ := spec.WithInputs([]string{"task", "candidate"})
	keptWith, keptWithout, n := 0, 0, 200
	for i := range n {
		r := rec(fmt.Sprintf("r%d", i), core+loop, record.StatusFailed, "")
		if ask(t, "teacher-error=0", spec, r).Decision == "keep" {
			keptWith++
		}
		if ask(t, "teacher-error=0", noRef, r).Decision == "keep" {
			keptWithout++
		}
	}
	if keptWith != n {
		t.Errorf("with the reference the teacher kept %d of %d off-by-one failures, want all", keptWith, n)
	}
	// A plain read notices this trait half the time (its obviousness, 0.5).
	if keptWithout < n/4 || keptWithout > 3*n/4 {
		t.Errorf("without the reference the teacher kept %d of %d, want about half", keptWithout, n)
	}
}

func proposals(t *testing.T, model, teacherText string, label record.Label, verdict string) []refine.Proposal {
	t.Helper()
	spec, _ := judge.Load("passfail")
	r := rec("p", core+discard, record.StatusFailed, "")
	r.Outcome.Label = label
	v := &judge.Verdict{Outcome: judge.Outcome(verdict), Reasoning: "[simulated] Nothing in the change stands out as wrong; " + verdict + "."}
	req, err := refine.ProposerRequest(spec, "sim:"+model, r, v, 0, teacherText)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := roles.ParseConfig(model)
	text, ok := roles.Answer(cfg, req)
	if !ok {
		t.Fatal("no answer")
	}
	return refine.ParseProposals(&llm.Response{Text: text})
}

// The proposer writes a general rule in its own words from the teacher's
// explanation: no identifier of this change, the direction from the
// disagreement.
func TestProposerGeneralises(t *testing.T) {
	ps := proposals(t, "", "[simulated] `_ = c.backend.Delete(key)` throws the error away instead of returning it.", record.Fail, "pass")
	if len(ps) == 0 || ps[0].Kind != refine.FailReason {
		t.Fatalf("%+v", ps)
	}
	for _, p := range ps {
		if strings.Contains(p.Text, "backend") || strings.Contains(p.Text, "Evict") {
			t.Errorf("the rule names this change's identifiers: %q", p.Text)
		}
	}
	if ps := proposals(t, "", "[simulated] The change is a sound, complete solution to the task.", record.Fail, "pass"); len(ps) != 0 {
		t.Errorf("nothing to generalise from, yet %+v", ps)
	}
	// The random-rules control proposes review advice whatever it is shown.
	for i := range 20 {
		for _, p := range proposals(t, "random-rules", fmt.Sprintf("[simulated] explanation %d", i), record.Fail, "pass") {
			if p.Kind != refine.FailReason && p.Kind != refine.PassReason {
				t.Errorf("random rule of kind %s", p.Kind)
			}
		}
	}
}

// The applier's first revision carries every edit whatever its length;
// told it is over the cap, it keeps the edits that fit.
func TestApplierOverrunsThenFits(t *testing.T) {
	spec, _ := judge.Load("passfail")
	var edits []refine.Proposal
	for i := range 30 {
		edits = append(edits, refine.Proposal{Kind: refine.FailReason, Text: fmt.Sprintf("Fail a change that breaks rule number %d of the house style guide.", i)})
	}
	limit := refine.PromptSize(spec) + 500
	req, err := refine.ApplierRequest(spec, "sim", edits, limit)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := roles.Answer(roles.Config{}, req)
	_, err = refine.Revise(spec, &llm.Response{Text: text}, limit)
	if err == nil || !strings.Contains(err.Error(), "over the cap") {
		t.Fatalf("first revision: %v", err)
	}
	retry := *req
	retry.Messages = append(append([]llm.Message(nil), req.Messages...), llm.Message{Role: llm.Assistant, Content: text},
		llm.Message{Role: llm.User, Content: "That revision cannot be used: " + err.Error() + ". Revise the prompt again, keeping to every rule."})
	text, _ = roles.Answer(roles.Config{}, &retry)
	revised, err := refine.Revise(spec, &llm.Response{Text: text}, limit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(revised.System, edits[0].Text) || strings.Contains(revised.System, edits[29].Text) {
		t.Fatal("the retry should keep the first edits and drop the last")
	}
}
