package metrics

import (
	"encoding/json"
	"testing"
)

// A figure written as JSON reads back the same; an undefined one stays
// undefined.
func TestValueJSONRoundTrip(t *testing.T) {
	for _, v := range []Value{Def(0.4375), Def(-1), Undef("one class only")} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var back Value
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.Defined() != v.Defined() || v.Defined() && back.V != v.V {
			t.Fatalf("%v -> %s -> %v", v, b, back)
		}
	}
	var v Value
	if err := json.Unmarshal([]byte(`"high"`), &v); err == nil {
		t.Fatal("a string read as a value")
	}
}
