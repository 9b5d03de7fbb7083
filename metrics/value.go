package metrics

import (
	"encoding/json"
	"fmt"
	"math"
)

// Value is a metric that may be undefined. When Undefined is not empty, V is
// meaningless and Undefined says why.
type Value struct {
	V         float64
	Undefined string
}

// Def returns a defined value. A NaN or infinite v becomes undefined, so
// that no NaN ever leaves the package.
func Def(v float64) Value {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Value{Undefined: "not a finite number"}
	}
	return Value{V: v}
}

// Undef returns an undefined value with its reason.
func Undef(format string, args ...any) Value {
	return Value{Undefined: fmt.Sprintf(format, args...)}
}

// Defined reports whether the value is defined.
func (v Value) Defined() bool { return v.Undefined == "" }

// String prints the value with four decimals, or "undefined (reason)".
func (v Value) String() string {
	if !v.Defined() {
		return "undefined (" + v.Undefined + ")"
	}
	return fmt.Sprintf("%.4f", v.V)
}

// MarshalJSON writes a number, or null for an undefined value (the reason
// goes in the enclosing object's "undefined" field where there is one).
func (v Value) MarshalJSON() ([]byte, error) {
	if !v.Defined() {
		return []byte("null"), nil
	}
	return json.Marshal(v.V)
}

// UnmarshalJSON reads what MarshalJSON wrote: a number, or null for an
// undefined value (whose reason, if any, was written beside it).
func (v *Value) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*v = Value{Undefined: "undefined"}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*v = Def(f)
	return nil
}

// ratio returns num/den, undefined with reason when den is zero.
func ratio(num, den float64, reason string) Value {
	if den == 0 {
		return Value{Undefined: reason}
	}
	return Def(num / den)
}
