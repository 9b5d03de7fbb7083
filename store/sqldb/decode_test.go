package sqldb

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/sim"
)

// TestStoredDecodesAsEncodingJSON: what decodeStored makes of a stored
// record or answer is what encoding/json makes of it, value for value:
// simulated records (with repository files), real model completions, and
// hand-made texts with escapes, surrogate pairs, invalid UTF-8, control
// characters, HTML and nested meta; answers with raw JSON kept byte for
// byte.
func TestStoredDecodesAsEncodingJSON(t *testing.T) {
	var bodies [][]byte
	add := func(r *record.Record) {
		b, err := json.Marshal(r) // as the store writes a record
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	for seed := uint64(1); seed <= 2; seed++ {
		rs, err := sim.Records(sim.WorldOptions{N: 300, Seed: seed, WithFiles: seed == 2})
		if err != nil {
			t.Fatal(err)
		}
		for i := range rs {
			add(&rs[i])
		}
	}
	f, err := os.Open("../../examples/codejudge/python_completions.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for n := 0; sc.Scan() && n < 200; n++ {
		var c map[string]any
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		add(&record.Record{ID: fmt.Sprint(c["task_id"], "/", c["completion_id"]), Task: fmt.Sprint(c["test_code"]), Candidate: fmt.Sprint(c["completion"]),
			Outcome: record.Outcome{Label: record.Pass, Status: record.StatusPassed, Source: record.SourceTests}, Meta: json.RawMessage(sc.Bytes())})
	}
	for _, text := range []string{"", "plain", "é ü 中文 😀", "\u2028\u2029 line separators", "<b>&amp;</b> \"quoted\" \\ back",
		"tab\tnew\nreturn\r nul\x00 bell\x07", "invalid \xff\xfe utf-8", "lone \xed\xa0\x80 surrogate", "a\x7fb"} {
		add(&record.Record{ID: text, Task: text, Candidate: text, Reference: text, Context: map[string]string{"log": text, text: "key"}, Group: text,
			Outcome: record.Outcome{Label: record.Fail, Status: record.StatusFailed, Source: record.SourceTests}})
	}
	// Escapes encoding/json does not write but another writer (PostgreSQL's
	// jsonb, a hand edit) may have.
	bodies = append(bodies, []byte(`{"id":"e","task":"\u00e9\ud83d\ude00\ud800x\/\b\f","candidate":"c","outcome":{"label":"pass","status":"passed","source":"tests"},"meta":{"b":[1,2.5e300,-0,true,null],"a":{"x":"\u0041"}}}`),
		[]byte(`{ "id" : "s", "task":"t" , "candidate":"c","outcome":{"label":"pass","status":"passed","source":"tests"},"meta": { "k" : [ 1 , 2 ] } }`))
	for _, b := range bodies {
		var want, got record.Record
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("encoding/json: %v: %s", err, b)
		}
		if err := decodeStored(b, &got); err != nil {
			t.Fatalf("decodeStored: %v: %s", err, b)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("decoded differently:\n%#v\n%#v\nfrom %s", want, got, b)
		}
	}
	answers := []llm.Response{
		{Text: `{"reasoning": "ok", "verdict": "pass"}`, JSON: json.RawMessage(`{"reasoning": "ok",` + "\n" + ` "verdict": "pass"}`), ModelVersion: "gpt-4o-2024-08-06",
			FinishReason: "stop", Usage: llm.Usage{InputTokens: 1234, OutputTokens: 56}, Latency: 1500 * time.Millisecond, Cost: 0.000123, Priced: true, Attempts: 2},
		{Text: "not json \u2028 <x>", Invalid: true, ParseError: "answer: not JSON"},
		{Text: "😀", JSON: json.RawMessage(`[1, {"a": "\u00e9"}, 3.0e-7]`)},
	}
	for _, a := range answers {
		b, err := json.Marshal(&a)
		if err != nil {
			t.Fatal(err)
		}
		var want, got llm.Response
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if err := decodeStored(b, &got); err != nil {
			t.Fatalf("decodeStored: %v: %s", err, b)
		}
		if !reflect.DeepEqual(want, got) || string(want.JSON) != string(got.JSON) {
			t.Fatalf("answer decoded differently:\n%#v\n%#v", want, got)
		}
	}
	if len(bodies) < 800 {
		t.Fatalf("only %d records compared", len(bodies))
	}
}
