package run_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/run"
)

// TestEvalResultJSON: the figures sit at the top level beside the other
// fields (eval's --json contract), text is not HTML-escaped, and the
// confusion matrix is labelled outcome first.
func TestEvalResultJSON(t *testing.T) {
	r := &run.EvalResult{ResultVersion: run.ResultVersion, Judge: "passfail", Prompt: "p<1>", Confusion: [2][2]int{{3, 1}, {2, 4}},
		ConfusionByLabel: run.Labelled([2][2]int{{3, 1}, {2, 4}}),
		Figures:          map[string]metrics.Figure{"scott_pi": {Value: metrics.Value{V: 0.4}}}}
	// As the commands print it: without HTML escaping.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if !strings.Contains(string(b), `"prompt":"p<1>"`) {
		t.Errorf("escaped or missing prompt: %s", b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["result_version"] != float64(1) || m["judge"] != "passfail" {
		t.Errorf("fields: %v", m)
	}
	pi, ok := m["scott_pi"].(map[string]any)
	if !ok || pi["value"] != 0.4 {
		t.Errorf("scott_pi not at the top level: %v", m["scott_pi"])
	}
	if _, ok := m["Figures"]; ok {
		t.Error("the figures map itself was marshalled")
	}
	// Outcome fail, verdict pass: row 0, column 1 of the matrix.
	byLabel := m["confusion_by_label"].(map[string]any)
	if byLabel["fail"].(map[string]any)["pass"] != float64(1) || byLabel["pass"].(map[string]any)["fail"] != float64(2) {
		t.Errorf("confusion by label: %v", byLabel)
	}
}
