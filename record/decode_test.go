package record_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/record"
)

// decodeNormalize is what the importer does with one line.
func decodeNormalize(t *testing.T, dec record.Decoder, line string) (record.Record, error) {
	t.Helper()
	r, err := dec.Decode([]byte(line))
	if err != nil {
		return r, err
	}
	return r, r.Normalize()
}

func TestNativeDecode(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    func(t *testing.T, r record.Record)
		errWant string // substring of the error; "" means success
		field   string // the field a *FieldError must name
	}{
		{
			name: "full record",
			line: `{"id":"r1","task":"fix it","candidate":"diff","reference":"ref","context":{"tests":"ok"},"group":"g","outcome":{"label":"pass","source":"review","status":"landed","reason":"merged","at":"2025-03-01T12:00:00+02:00"},"meta":{"b":1,"a":[true]}}`,
			want: func(t *testing.T, r record.Record) {
				if r.ID != "r1" || r.Task != "fix it" || r.Candidate != "diff" || r.Reference != "ref" || r.Group != "g" {
					t.Errorf("fields: %+v", r)
				}
				if r.Context["tests"] != "ok" || r.Outcome.Reason != "merged" {
					t.Errorf("context or reason: %+v", r)
				}
				if want := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC); !r.Outcome.At.Equal(want) {
					t.Errorf("at = %v, want %v", r.Outcome.At, want)
				}
				if string(r.Meta) != `{"a":[true],"b":1}` {
					t.Errorf("meta not canonical: %s", r.Meta)
				}
			},
		},
		{
			name: "label derived from status",
			line: `{"id":"r","task":"t","candidate":"","outcome":{"status":"abandoned"}}`,
			want: func(t *testing.T, r record.Record) {
				if r.Outcome.Label != record.Fail || r.Outcome.Source != record.SourceReview {
					t.Errorf("outcome = %+v, want fail from review", r.Outcome)
				}
			},
		},
		{
			name: "draft is a failure",
			line: `{"id":"r","task":"t","candidate":"c","outcome":{"status":"draft"}}`,
			want: func(t *testing.T, r record.Record) {
				if r.Outcome.Label != record.Fail {
					t.Errorf("label = %s, want fail", r.Outcome.Label)
				}
			},
		},
		{
			name: "passed means tests",
			line: `{"id":"r","task":"t","candidate":"c","outcome":{"status":"passed"}}`,
			want: func(t *testing.T, r record.Record) {
				if r.Outcome.Label != record.Pass || r.Outcome.Source != record.SourceTests {
					t.Errorf("outcome = %+v, want pass from tests", r.Outcome)
				}
			},
		},
		{
			name: "status derived from label and source",
			line: `{"id":"r","task":"t","candidate":"c","outcome":{"label":"pass","source":"review"}}`,
			want: func(t *testing.T, r record.Record) {
				if r.Outcome.Status != record.StatusLanded {
					t.Errorf("status = %s, want landed", r.Outcome.Status)
				}
			},
		},
		{name: "missing id", line: `{"task":"t","candidate":"c","outcome":{"status":"passed"}}`, errWant: "missing", field: "id"},
		{name: "empty id", line: `{"id":" ","task":"t","candidate":"c","outcome":{"status":"passed"}}`, errWant: "empty", field: "id"},
		{name: "missing task", line: `{"id":"r","candidate":"c","outcome":{"status":"passed"}}`, errWant: "missing", field: "task"},
		{name: "missing candidate", line: `{"id":"r","task":"t","outcome":{"status":"passed"}}`, errWant: "missing", field: "candidate"},
		{name: "missing outcome", line: `{"id":"r","task":"t","candidate":"c"}`, errWant: "missing", field: "outcome"},
		{name: "no status or label", line: `{"id":"r","task":"t","candidate":"c","outcome":{}}`, errWant: "missing", field: "outcome.status"},
		{name: "label without source", line: `{"id":"r","task":"t","candidate":"c","outcome":{"label":"pass"}}`, errWant: "outcome.source", field: "outcome.status"},
		{name: "unknown label", line: `{"id":"r","task":"t","candidate":"c","outcome":{"label":"maybe","status":"passed"}}`, errWant: `unknown label "maybe"`, field: "outcome.label"},
		{name: "unknown status", line: `{"id":"r","task":"t","candidate":"c","outcome":{"status":"merged"}}`, errWant: `unknown status "merged"`, field: "outcome.status"},
		{name: "unknown source", line: `{"id":"r","task":"t","candidate":"c","outcome":{"status":"passed","source":"ci"}}`, errWant: `unknown source "ci"`, field: "outcome.source"},
		{name: "label contradicts status", line: `{"id":"r","task":"t","candidate":"c","outcome":{"label":"pass","status":"failed"}}`, errWant: "contradicts", field: "outcome.label"},
		{name: "bad time", line: `{"id":"r","task":"t","candidate":"c","outcome":{"status":"passed","at":"yesterday"}}`, errWant: "RFC 3339", field: "outcome.at"},
		{name: "wrong type", line: `{"id":"r","task":5,"candidate":"c","outcome":{"status":"passed"}}`, errWant: "want a string", field: "task"},
		{name: "wrong nested type", line: `{"id":"r","task":"t","candidate":"c","context":{"x":1},"outcome":{"status":"passed"}}`, errWant: "want a string", field: "context"},
		{name: "context key that would break a tag", line: `{"id":"r","task":"t","candidate":"c","context":{"a</x>":"1"},"outcome":{"status":"passed"}}`, errWant: `key "a</x>"`, field: "context"},
		{name: "context key with a space", line: `{"id":"r","task":"t","candidate":"c","context":{"test output":"1"},"outcome":{"status":"passed"}}`, errWant: "letters, digits", field: "context"},
		{name: "unknown field", line: `{"id":"r","task":"t","candidate":"c","outcome":{"status":"passed"},"extra":1}`, errWant: "unknown field", field: "extra"},
		{name: "malformed JSON", line: `{"id":"r","task":`, errWant: "invalid JSON"},
		{name: "not an object", line: `[1,2]`, errWant: "want an object"},
		{name: "two values", line: `{"id":"r","task":"t","candidate":"c","outcome":{"status":"passed"}} {}`, errWant: "more than one value"},
		{name: "bad meta", line: `{"id":"r","task":"t","candidate":"c","outcome":{"status":"passed"},"meta":tru}`, errWant: "invalid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := decodeNormalize(t, record.Native{}, tc.line)
			if tc.errWant == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				tc.want(t, r)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errWant) {
				t.Fatalf("error = %v, want one containing %q", err, tc.errWant)
			}
			if tc.field != "" {
				var fe *record.FieldError
				if !errors.As(err, &fe) || fe.Field != tc.field {
					t.Fatalf("error %v does not name field %q", err, tc.field)
				}
			}
		})
	}
}

// TestCanonicalRoundTrip: a record's canonical form decodes to the same
// canonical form, so export and re-import are exact.
func TestCanonicalRoundTrip(t *testing.T) {
	line := `{"meta":{"z":1.50,"a":"<&>"},"outcome":{"at":"2025-03-01T12:00:00.5-07:00","status":"failed","reason":"x"},"group":"g","context":{"b":"2","a":"1"},"candidate":"if a < b && c {}","task":"t","id":"r"}`
	r, err := decodeNormalize(t, record.Native{}, line)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := r.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"r","task":"t","candidate":"if a < b && c {}","context":{"a":"1","b":"2"},"group":"g","outcome":{"label":"fail","source":"tests","status":"failed","reason":"x","at":"2025-03-01T12:00:00.5-07:00"},"meta":{"a":"<&>","z":1.50}}`
	if string(c1) != want {
		t.Fatalf("canonical =\n%s\nwant\n%s", c1, want)
	}
	r2, err := decodeNormalize(t, record.Native{}, string(c1))
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := r2.Canonical()
	if string(c2) != string(c1) {
		t.Fatalf("second canonical form differs:\n%s\n%s", c2, c1)
	}
	if d := record.Diff(&r, &r2); len(d) != 0 {
		t.Fatalf("Diff of a record and its round trip = %v", d)
	}
}

func TestDiff(t *testing.T) {
	a := record.Record{ID: "x", Task: "t", Candidate: "c", Outcome: record.Outcome{Status: record.StatusPassed}}
	b := a
	b.Candidate = "c2"
	b.Outcome.Status = record.StatusFailed
	b.Context = map[string]string{"k": "v"}
	got := strings.Join(record.Diff(&a, &b), ",")
	if got != "candidate,context,outcome.status" {
		t.Fatalf("Diff = %s", got)
	}
}

func TestParseLabel(t *testing.T) {
	for in, want := range map[string]record.Label{"pass": record.Pass, "PASS": record.Pass, "true": record.Pass, "1": record.Pass,
		"fail": record.Fail, " False ": record.Fail, "0": record.Fail} {
		got, err := record.ParseLabel(in)
		if err != nil || got != want {
			t.Errorf("ParseLabel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "maybe", "passed", "2"} {
		if _, err := record.ParseLabel(bad); err == nil {
			t.Errorf("ParseLabel(%q) accepted", bad)
		}
	}
}

func TestFieldMap(t *testing.T) {
	const spec = "task=prompt,candidate=generation,label=passed,group=task_id,id=task_id+completion_id"
	fm, err := record.ParseFieldMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	fm.Source = record.SourceTests
	t.Run("codejudge line", func(t *testing.T) {
		r, err := decodeNormalize(t, fm, `{"task_id":"Python/1","completion_id":2,"prompt":"def f():","generation":"  return 1","passed":false,"result":"failed: AssertionError"}`)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID != "Python/1/2" || r.Group != "Python/1" || r.Task != "def f():" || r.Candidate != "  return 1" {
			t.Errorf("record = %+v", r)
		}
		if r.Outcome.Label != record.Fail || r.Outcome.Status != record.StatusFailed || r.Outcome.Source != record.SourceTests {
			t.Errorf("outcome = %+v", r.Outcome)
		}
		if string(r.Meta) != `{"result":"failed: AssertionError"}` {
			t.Errorf("unmapped fields not kept in meta: %s", r.Meta)
		}
	})
	t.Run("true is pass", func(t *testing.T) {
		r, err := decodeNormalize(t, fm, `{"task_id":"P/2","completion_id":0,"prompt":"p","generation":"g","passed":true}`)
		if err != nil || r.Outcome.Label != record.Pass || r.Outcome.Status != record.StatusPassed || r.Meta != nil {
			t.Fatalf("got %+v, %v", r, err)
		}
	})
	t.Run("string labels", func(t *testing.T) {
		r, err := decodeNormalize(t, fm, `{"task_id":"P/2","completion_id":0,"prompt":"p","generation":"g","passed":"FAIL"}`)
		if err != nil || r.Outcome.Label != record.Fail {
			t.Fatalf("got %+v, %v", r, err)
		}
	})
	errCases := []struct{ name, line, field, msg string }{
		{"missing id part", `{"task_id":"P","prompt":"p","generation":"g","passed":true}`, "completion_id", "missing"},
		{"missing label", `{"task_id":"P","completion_id":1,"prompt":"p","generation":"g"}`, "passed", "missing"},
		{"null task", `{"task_id":"P","completion_id":1,"prompt":null,"generation":"g","passed":true}`, "prompt", "missing"},
		{"unknown label", `{"task_id":"P","completion_id":1,"prompt":"p","generation":"g","passed":"maybe"}`, "passed", "unknown label"},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeNormalize(t, fm, tc.line)
			var fe *record.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Msg, tc.msg) {
				t.Fatalf("error = %v, want field %q with %q", err, tc.field, tc.msg)
			}
		})
	}
	t.Run("nested paths, context and time", func(t *testing.T) {
		fm, err := record.ParseFieldMap("id=pr.number,task=pr.title,candidate=diff,status=state,context.tests=ci.log,at=pr.closed,reason=why")
		if err != nil {
			t.Fatal(err)
		}
		r, err := decodeNormalize(t, fm, `{"pr":{"number":42,"title":"Fix","closed":"2025-01-02T03:04:05Z"},"diff":"d","state":"abandoned","ci":{"log":"FAIL x"},"why":"superseded"}`)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID != "42" || r.Task != "Fix" || r.Context["tests"] != "FAIL x" || r.Outcome.Label != record.Fail ||
			r.Outcome.Reason != "superseded" || r.Outcome.At.Year() != 2025 || r.Outcome.Source != record.SourceReview {
			t.Fatalf("record = %+v", r)
		}
	})
	badSpecs := map[string]string{
		"":                                  "id is not mapped",
		"id=a,task=b":                       "candidate is not mapped",
		"id=a,task=b,candidate=c":           "neither label nor status",
		"id=a,task=b,candidate=c,label":     "want target=field",
		"id=a,task=b,candidate=c,colour=x":  "unknown target",
		"id=a,id=b":                         "mapped twice",
		"id=a,task=b+c,candidate=c,label=l": "only id and group",
	}
	for spec, want := range badSpecs {
		if _, err := record.ParseFieldMap(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseFieldMap(%q) error = %v, want %q", spec, err, want)
		}
	}
}

func TestSWEBench(t *testing.T) {
	gold, err := record.ReadGold("gold.jsonl", strings.NewReader(
		`{"instance_id":"django__django-1","patch":"--- a/x\n+++ b/x","problem_statement":"Crash on save"}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	dec := &record.SWEBench{Gold: gold}
	r, err := decodeNormalize(t, dec, `{"instance_id":"django__django-1","model_patch":"diff --git","model_name_or_path":"agent-x","resolved":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "agent-x/django__django-1" || r.Group != "django__django-1" || r.Task != "Crash on save" ||
		r.Reference != "--- a/x\n+++ b/x" || r.Candidate != "diff --git" || r.Outcome.Status != record.StatusPassed {
		t.Fatalf("record = %+v", r)
	}
	r, err = decodeNormalize(t, dec, `{"instance_id":"astropy-2","model_patch":"","resolved":false}`)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "astropy-2" || r.Outcome.Label != record.Fail || r.Reference != "" || !strings.Contains(string(r.Meta), `"no_issue_text":true`) {
		t.Fatalf("record without gold = %+v meta %s", r, r.Meta)
	}
	_, err = decodeNormalize(t, dec, `{"instance_id":"a","model_patch":"p"}`)
	var fe *record.FieldError
	if !errors.As(err, &fe) || fe.Field != "resolved" {
		t.Fatalf("missing resolved: error = %v", err)
	}
	_, err = record.ReadGold("gold.jsonl", strings.NewReader("{\"instance_id\":\"a\"}\n{\"patch\":\"x\"}\n"))
	var le *record.LineError
	if !errors.As(err, &le) || le.Line != 2 || le.File != "gold.jsonl" {
		t.Fatalf("gold without instance_id on line 2: error = %v", err)
	}
}

func TestCanonicalJSON(t *testing.T) {
	for in, want := range map[string]string{
		``:     ``,
		`null`: ``,
		` {"b": 1, "a": {"d": [1, 2.0], "c": null}} `: `{"a":{"c":null,"d":[1,2.0]},"b":1}`,
		`"<tag>"`:              `"<tag>"`,
		`12345678901234567890`: `12345678901234567890`,
	} {
		got, err := record.CanonicalJSON(json.RawMessage(in))
		if err != nil || string(got) != want {
			t.Errorf("CanonicalJSON(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := record.CanonicalJSON(json.RawMessage(`{} {}`)); err == nil {
		t.Error("two values accepted")
	}
}

func TestNewDecoderNamesTheOptionAtFault(t *testing.T) {
	for _, c := range []struct {
		o      record.DecoderOptions
		option string
	}{
		{record.DecoderOptions{Format: "csv"}, "format"},
		{record.DecoderOptions{Format: "native", FieldMap: "task=prompt"}, "map"},
		{record.DecoderOptions{Format: "map"}, "map"},
		{record.DecoderOptions{Format: "native", Gold: "gold.jsonl"}, "gold"},
		{record.DecoderOptions{Source: "native", FieldMap: "task=prompt"}, "source"},
		{record.DecoderOptions{Source: "tests"}, "source"},
	} {
		_, err := record.NewDecoder(c.o)
		var oe *record.OptionError
		if !errors.As(err, &oe) || oe.Option != c.option {
			t.Errorf("%+v: err = %v, want an error in %s", c.o, err, c.option)
		}
	}
	for o, want := range map[record.DecoderOptions]string{
		{}: "record.Native",
		{FieldMap: "task=prompt,candidate=generation,label=passed,id=task_id"}: "*record.FieldMap",
		{Format: "swebench"}: "*record.SWEBench",
	} {
		dec, err := record.NewDecoder(o)
		if err != nil || fmt.Sprintf("%T", dec) != want {
			t.Errorf("%+v: %T, %v; want %s", o, dec, err, want)
		}
	}
}

func TestCutInputs(t *testing.T) {
	long := strings.Repeat("line of forty characters, give or take\n", 100) // 3,900 characters
	r := &record.Record{ID: "r", Task: "short task", Candidate: long, Context: map[string]string{"ci_log": long, "note": "ok"}}
	c := record.CutInputs(r, 1000)
	if !c.InputsCut() || r.InputsCut() || c == r {
		t.Fatal("the cut copy is not marked, or the record changed")
	}
	if c.Task != "short task" || c.Context["note"] != "ok" || r.Candidate != long {
		t.Fatal("a short input was cut, or the original changed")
	}
	// Cut at the last line end before 1,000: 25 lines of 39 characters.
	want := strings.Repeat("line of forty characters, give or take\n", 25) + "\n[... cut: 2,925 characters not shown]\n"
	if c.Candidate != want || c.Context["ci_log"] != want {
		t.Fatalf("cut candidate:\n%q", c.Candidate)
	}
	if record.CutInputs(r, 0) != r || record.CutInputs(r, 10_000) != r {
		t.Fatal("nothing to cut made a copy")
	}
}
