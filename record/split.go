package record

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// Part is one part of a split.
type Part string

// The parts of a split. Calibration learns on train, picks among prompt
// versions on val (never filtered), and reports on test.
const (
	Train Part = "train"
	Val   Part = "val"
	Test  Part = "test"
)

// Parts lists the parts in order.
var Parts = []Part{Train, Val, Test}

// ParsePart reads a part name.
func ParsePart(s string) (Part, error) {
	switch p := Part(strings.ToLower(strings.TrimSpace(s))); p {
	case Train, Val, Test:
		return p, nil
	case "validation":
		return Val, nil
	}
	return "", fmt.Errorf("unknown split part %q (want train, val or test)", s)
}

// SplitSpec says how a split is made. It is stored with the split.
type SplitSpec struct {
	Name string `json:"name"`
	// Fractions of records per part; they sum to 1.
	Train float64 `json:"train"`
	Val   float64 `json:"val"`
	Test  float64 `json:"test"`
	Seed  uint64  `json:"seed"`
	// ByTime puts the oldest records in train and the newest in test,
	// instead of a seeded stratified draw.
	ByTime bool `json:"by_time,omitempty"`
	// ExcludeStatus lists statuses whose records are left out of the split.
	ExcludeStatus []Status `json:"exclude_status,omitempty"`
}

// Fraction returns the fraction of a part.
func (s SplitSpec) Fraction(p Part) float64 {
	switch p {
	case Train:
		return s.Train
	case Val:
		return s.Val
	}
	return s.Test
}

// Validate checks the name and fractions.
func (s SplitSpec) Validate() error {
	if err := ValidateName(s.Name); err != nil {
		return err
	}
	sum := 0.0
	for _, p := range Parts {
		f := s.Fraction(p)
		if f < 0 || f > 1 || math.IsNaN(f) {
			return fmt.Errorf("--%s %v: want a fraction between 0 and 1", p, f)
		}
		sum += f
	}
	if math.Abs(sum-1) > 1e-6 {
		return fmt.Errorf("fractions sum to %v: train, val and test must sum to 1", sum)
	}
	return nil
}

// ValidateName checks the name of a split: letters, digits, '-', '_' and '.'.
func ValidateName(name string) error {
	if name == "" {
		return errors.New("split name is empty")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("split name %q: use letters, digits, '-', '_' and '.'", name)
		}
	}
	return nil
}

// Member is what splitting needs to know of a record.
type Member struct {
	ID    string
	Group string
	Label Label
	At    time.Time
}

// MemberOf returns the split member of a record.
func MemberOf(r *Record) Member {
	return Member{ID: r.ID, Group: r.Group, Label: r.Outcome.Label, At: r.Outcome.At}
}

// Split assigns records to parts.
type Split struct {
	Spec   SplitSpec       `json:"spec"`
	Assign map[string]Part `json:"-"`
}

// unit is a group, or a record without one: the indivisible thing that is
// assigned to a part.
type unit struct {
	key     string
	ids     []string
	pass    int
	minTime time.Time
	noTime  string // an ID without a time, if any
}

func (u *unit) size() int { return len(u.ids) }

// stratum is the unit's majority label (ties count as fail, the rarer and
// more informative class in most workflows).
func (u *unit) stratum() Label {
	if 2*u.pass > u.size() {
		return Pass
	}
	return Fail
}

// MakeSplit assigns members to parts as spec says. It is a deterministic
// function of the members (in any order) and the spec.
//
// A group is never divided between parts. Without ByTime, units (groups, or
// single records without a group) are stratified by their majority label,
// shuffled with the seed, and dealt largest first to the part furthest below
// its share of that stratum's records; so each part's count of each stratum
// is within one unit of its share. With ByTime, units are ordered by their
// oldest outcome time and cut into train, val and test in that order; every
// record then needs outcome.at.
func MakeSplit(members []Member, spec SplitSpec) (*Split, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if len(members) == 0 {
		return nil, errors.New("no records to split")
	}
	units, err := makeUnits(members)
	if err != nil {
		return nil, err
	}
	s := &Split{Spec: spec, Assign: make(map[string]Part, len(members))}
	if spec.ByTime {
		if err := splitByTime(units, spec, s.Assign); err != nil {
			return nil, err
		}
		return s, nil
	}
	rng := rand.New(rand.NewPCG(spec.Seed, 0x6761_7665_6c5f_7370)) // "gavel_sp"
	strata := map[Label][]*unit{}
	for _, u := range units {
		strata[u.stratum()] = append(strata[u.stratum()], u)
	}
	for _, l := range []Label{Fail, Pass} {
		deal(strata[l], spec, rng, s.Assign)
	}
	return s, nil
}

func makeUnits(members []Member) ([]*unit, error) {
	byKey := map[string]*unit{}
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		if seen[m.ID] {
			return nil, fmt.Errorf("record %q listed twice", m.ID)
		}
		seen[m.ID] = true
		key := "r\x00" + m.ID
		if m.Group != "" {
			key = "g\x00" + m.Group
		}
		u := byKey[key]
		if u == nil {
			u = &unit{key: key}
			byKey[key] = u
		}
		u.ids = append(u.ids, m.ID)
		if m.Label == Pass {
			u.pass++
		}
		if m.At.IsZero() {
			if u.noTime == "" {
				u.noTime = m.ID
			}
		} else if u.minTime.IsZero() || m.At.Before(u.minTime) {
			u.minTime = m.At
		}
	}
	units := make([]*unit, 0, len(byKey))
	for _, u := range byKey {
		sort.Strings(u.ids)
		units = append(units, u)
	}
	sort.Slice(units, func(i, j int) bool { return units[i].key < units[j].key })
	return units, nil
}

// deal assigns one stratum's units.
func deal(units []*unit, spec SplitSpec, rng *rand.Rand, assign map[string]Part) {
	// Fisher-Yates by hand: the order must not change with Go's library.
	for i := len(units) - 1; i > 0; i-- {
		j := int(rng.Uint64N(uint64(i + 1)))
		units[i], units[j] = units[j], units[i]
	}
	sort.SliceStable(units, func(i, j int) bool { return units[i].size() > units[j].size() })
	total := 0
	for _, u := range units {
		total += u.size()
	}
	var got [3]int
	for _, u := range units {
		best, bestDeficit := -1, math.Inf(-1)
		for i, p := range Parts {
			f := spec.Fraction(p)
			if f == 0 {
				continue
			}
			d := f*float64(total) - float64(got[i])
			if d > bestDeficit+1e-9 {
				best, bestDeficit = i, d
			}
		}
		got[best] += u.size()
		for _, id := range u.ids {
			assign[id] = Parts[best]
		}
	}
}

func splitByTime(units []*unit, spec SplitSpec, assign map[string]Part) error {
	for _, u := range units {
		if u.noTime != "" {
			return fmt.Errorf("record %q has no outcome.at: a split by time needs a time on every record", u.noTime)
		}
	}
	sort.SliceStable(units, func(i, j int) bool { return units[i].minTime.Before(units[j].minTime) })
	total := 0
	for _, u := range units {
		total += u.size()
	}
	cut1 := spec.Train * float64(total)
	cut2 := (spec.Train + spec.Val) * float64(total)
	done := 0
	for _, u := range units {
		mid := float64(done) + float64(u.size())/2
		p := Test
		switch {
		case mid < cut1:
			p = Train
		case mid < cut2:
			p = Val
		}
		for _, id := range u.ids {
			assign[id] = p
		}
		done += u.size()
	}
	return nil
}

// Counts returns, for each part, the number of records by label.
func (s *Split) Counts(labels map[string]Label) map[Part]map[Label]int {
	c := map[Part]map[Label]int{}
	for _, p := range Parts {
		c[p] = map[Label]int{Pass: 0, Fail: 0}
	}
	for id, p := range s.Assign {
		c[p][labels[id]]++
	}
	return c
}

// Sample is a seeded sample of about n of the records, stratified by label
// (each label's share as in rs) with groups kept whole, in rs's order: a
// quick first try that looks like the whole (--limit). A stratum takes
// whole groups, shuffled with the seed, until it reaches its share, so the
// sample may hold a few more than n. All of rs when n <= 0 or n >= len(rs).
func Sample(rs []*Record, n int, seed uint64) []*Record {
	if n <= 0 || n >= len(rs) {
		return rs
	}
	members := make([]Member, len(rs))
	for i, r := range rs {
		members[i] = MemberOf(r)
	}
	keep := SampleMembers(members, n, seed)
	var out []*Record
	for _, r := range rs {
		if keep[r.ID] {
			out = append(out, r)
		}
	}
	return out
}

// SampleMembers is Sample over the members of records alone (what a store
// can list without reading the records): the ids it keeps.
func SampleMembers(members []Member, n int, seed uint64) map[string]bool {
	keep := map[string]bool{}
	if n <= 0 || n >= len(members) {
		for _, m := range members {
			keep[m.ID] = true
		}
		return keep
	}
	units, err := makeUnits(members)
	if err != nil {
		for _, m := range members[:n] { // ids listed twice: no sample can keep groups whole
			keep[m.ID] = true
		}
		return keep
	}
	rng := rand.New(rand.NewPCG(seed, 0x6761_7665_6c5f_736d)) // "gavel_sm"
	strata := map[Label][]*unit{}
	count := map[Label]int{}
	for _, u := range units {
		strata[u.stratum()] = append(strata[u.stratum()], u)
		count[u.stratum()] += u.size()
	}
	for _, l := range []Label{Fail, Pass} {
		us := strata[l]
		if len(us) == 0 {
			continue
		}
		target := max(1, int(math.Round(float64(n)*float64(count[l])/float64(len(members)))))
		rng.Shuffle(len(us), func(i, j int) { us[i], us[j] = us[j], us[i] })
		for taken, i := 0, 0; taken < target && i < len(us); i++ {
			for _, id := range us[i].ids {
				keep[id] = true
			}
			taken += us[i].size()
		}
	}
	return keep
}
