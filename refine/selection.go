package refine

import (
	"fmt"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
)

// The selection rules.
const (
	// SelectLowerBound replaces the original only with a version whose
	// paired gain over it on validation has a lower bound above 0 (at
	// Level); among those the highest lower bound wins.
	SelectLowerBound = "lower-bound"
	// SelectPoint is AutoRefine's rule: the best validation pi.
	SelectPoint = "point"
)

// DefaultSelectLevel is the lower-bound rule's interval level.
const DefaultSelectLevel = 0.8

// Selection is how a calibration picks its final version, and (in a
// result) why it picked it.
type Selection struct {
	Rule  string  `json:"rule"`
	Level float64 `json:"level"`
	// MinFailRecall and MinPassRecall, when above 0, make a version whose
	// validation recall of that class is lower unselectable (a team's
	// deployment target).
	MinFailRecall float64 `json:"min_fail_recall,omitempty"`
	MinPassRecall float64 `json:"min_pass_recall,omitempty"`
	Why           string  `json:"why,omitempty"`
}

func (s Selection) withDefaults() Selection {
	if s.Rule == "" {
		s.Rule = SelectLowerBound
	}
	if s.Level <= 0 || s.Level >= 1 {
		s.Level = DefaultSelectLevel
	}
	return s
}

// Check says what is wrong with a selection's settings.
func (s Selection) Check() error {
	switch {
	case s.Rule != "" && s.Rule != SelectLowerBound && s.Rule != SelectPoint:
		return fmt.Errorf("%q: the rules are %s and %s", s.Rule, SelectLowerBound, SelectPoint)
	case s.Level < 0 || s.Level >= 1:
		return fmt.Errorf("level %g: give a level between 0 and 1, such as 0.8", s.Level)
	case s.MinFailRecall < 0 || s.MinFailRecall > 1 || s.MinPassRecall < 0 || s.MinPassRecall > 1:
		return fmt.Errorf("a minimum recall is a share between 0 and 1")
	}
	return nil
}

// valGain is a version's paired gain in pi over the original on the same
// validation records, with its interval at level (a cluster bootstrap
// over the records' groups).
func valGain(v, orig *judge.Evaluation, boot metrics.BootstrapOptions, level float64) metrics.Figure {
	boot.Level = level
	f, err := v.Gain(orig, "scott_pi", boot)
	if err != nil {
		return metrics.Figure{Value: metrics.Undef("%v", err), Undefined: err.Error()}
	}
	return f
}

// recallShort says why a version misses a recall target, or "".
func (s Selection) recallShort(v *Version) string {
	check := func(name string, r metrics.Value, min float64) string {
		if min <= 0 {
			return ""
		}
		if !r.Defined() {
			return fmt.Sprintf("%s undefined (target %.2f)", name, min)
		}
		if r.V < min {
			return fmt.Sprintf("%s %.2f below the target %.2f", name, r.V, min)
		}
		return ""
	}
	if w := check("validation fail recall", v.ValFailRecall, s.MinFailRecall); w != "" {
		return w
	}
	return check("validation pass recall", v.ValPassRecall, s.MinPassRecall)
}

// Pick returns the index of the selected version and why. Versions that
// miss a recall target are marked unselectable. Under the point rule the
// best validation pi wins (ties and undefined values go to the earlier);
// under the lower-bound rule a version replaces the original only when the
// lower bound of its paired gain is above 0, the highest lower bound
// winning. When no version qualifies, the original stays.
func (s Selection) Pick(vs []*Version) (int, string) {
	s = s.withDefaults()
	for _, v := range vs {
		v.Unselectable = s.recallShort(v)
	}
	best := -1
	for i, v := range vs {
		if v.Unselectable != "" {
			continue
		}
		switch s.Rule {
		case SelectPoint:
			if !v.ValPi.Defined() {
				continue
			}
			if best < 0 || v.ValPi.V > vs[best].ValPi.V+1e-12 {
				best = i
			}
		default:
			if i == 0 {
				continue
			}
			ci := v.ValGain.CI
			if ci == nil || !ci.Defined() || ci.Lo <= 0 {
				v.Unselectable = fmt.Sprintf("the lower bound of its validation gain (at %.2f) is not above 0", s.Level)
				continue
			}
			if best < 0 || ci.Lo > vs[best].ValGain.CI.Lo+1e-12 {
				best = i
			}
		}
	}
	switch {
	case best > 0 && s.Rule == SelectPoint:
		return best, "the best validation pi"
	case best > 0:
		return best, fmt.Sprintf("the highest lower bound of the paired validation gain over the original at %.2f (%+.3f)", s.Level, vs[best].ValGain.CI.Lo)
	case best == 0:
		return 0, "no version has a better validation pi than the original"
	case len(vs) > 0 && vs[0].Unselectable != "" && s.Rule == SelectPoint:
		return 0, "no version reaches the recall targets; the original stays (" + vs[0].Unselectable + ")"
	case s.Rule == SelectPoint:
		return 0, "no version reaches the recall targets; the original stays"
	case len(vs) == 1:
		return 0, "the original is the only version"
	}
	if vs[0].Unselectable != "" {
		return 0, "no version gains with a lower bound above 0 while reaching the recall targets; the original stays, though it misses them (" + vs[0].Unselectable + ")"
	}
	return 0, fmt.Sprintf("no version's paired validation gain over the original has a lower bound above 0 at %.2f; the original stays", s.Level)
}

// Select returns the index of the version with the best validation pi;
// ties (and undefined values) go to the earlier version (the point rule).
func Select(vs []*Version) int {
	i, _ := Selection{Rule: SelectPoint}.Pick(vs)
	return i
}
