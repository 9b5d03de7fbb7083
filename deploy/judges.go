package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
)

// Active returns a judge's active version, or nil when it has none.
func Active(ctx context.Context, st Store, judgeName string) (*Activation, error) {
	as, err := st.Activations(ctx, judgeName)
	if err != nil || len(as) == 0 {
		return nil, err
	}
	return &as[len(as)-1], nil
}

// EnsureActive returns a judge's active activation. A built-in judge that
// was never activated starts with its built-in prompt (an "initial"
// activation, recorded); any other judge needs a promotion.
func EnsureActive(ctx context.Context, st Store, name string) (*Activation, error) {
	for range 2 {
		a, err := Active(ctx, st, name)
		if err != nil || a != nil {
			return a, err
		}
		if !slices.Contains(judge.Builtins(), name) {
			if ps, _ := st.Prompts(ctx, name); len(ps) > 0 {
				return nil, Errorf(Conflict, "judge %s has no active version yet: promote one with 'gavel promote %s VERSION'", name, name)
			}
			return nil, &Error{Code: NotFound, Field: "judge",
				Msg: fmt.Sprintf("field judge: no judge %q (built-in judges: %v; calibrated judges become available once promoted)", name, judge.Builtins())}
		}
		spec, err := judge.Load(name)
		if err != nil {
			return nil, err
		}
		pv := judge.VersionOf(spec)
		if err := st.SavePrompt(ctx, pv); err != nil {
			return nil, err
		}
		a = &Activation{Judge: name, Version: pv.Hash, Action: ActionInitial, Actor: "gavel", Reason: "first use of the built-in judge"}
		err = st.Activate(ctx, a)
		if err == nil {
			return a, nil
		}
		if !errors.Is(err, ErrActiveChanged) {
			return nil, err
		}
		// Another request activated it meanwhile: read again.
	}
	return nil, fmt.Errorf("judge %s: its active version keeps changing", name)
}

// JudgeInfo is a judge as GET /v1/judges shows it.
type JudgeInfo struct {
	Name        string         `json:"name"`
	Builtin     bool           `json:"builtin"`
	Active      string         `json:"active,omitempty"`
	Versions    []VersionInfo  `json:"versions"`
	Activations []Activation   `json:"activations"`
	Metrics     *ActiveFigures `json:"metrics,omitempty"`
}

// VersionInfo is one prompt version of a judge.
type VersionInfo struct {
	Hash      string             `json:"hash"`
	Parent    string             `json:"parent,omitempty"`
	Iteration int                `json:"iteration"`
	Note      string             `json:"note,omitempty"`
	Edits     []string           `json:"edits,omitempty"`
	Metrics   map[string]float64 `json:"metrics,omitempty"`
	CreatedAt string             `json:"created_at,omitempty"`
	Active    bool               `json:"active"`
}

// ActiveFigures are the active version's figures: from the gate that
// promoted it, and live, against the outcomes that arrived.
type ActiveFigures struct {
	Gate *Evidence   `json:"gate,omitempty"`
	Live *LiveFigure `json:"live,omitempty"`
}

// Judges lists every judge the store knows (with versions or
// activations) and the built-ins.
func Judges(ctx context.Context, st Store) ([]string, error) {
	names := append([]string(nil), judge.Builtins()...)
	ps, err := st.Prompts(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if !slices.Contains(names, p.Judge) {
			names = append(names, p.Judge)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Info describes a judge: versions, the active one, the audit trail and
// the active version's figures (with live=true, its agreement with the
// outcomes that arrived, which takes a bootstrap).
//
// With live, the active version's agreement with the outcomes that
// arrived is computed through cache (which may be nil).
func Info(ctx context.Context, st Store, name, model string, live bool, boot metrics.BootstrapOptions, cache *LiveCache) (*JudgeInfo, error) {
	ps, err := st.Prompts(ctx, name)
	if err != nil {
		return nil, err
	}
	as, err := st.Activations(ctx, name)
	if err != nil {
		return nil, err
	}
	info := &JudgeInfo{Name: name, Builtin: slices.Contains(judge.Builtins(), name), Activations: as}
	if len(ps) == 0 && len(as) == 0 && !info.Builtin {
		return nil, Errorf(NotFound, "no judge %q", name)
	}
	if len(as) > 0 {
		a := as[len(as)-1]
		info.Active = a.Version
		info.Metrics = &ActiveFigures{Gate: a.Evidence}
		if live {
			info.Metrics.Live, err = cache.Agreement(ctx, st, name, a.Version, model, boot)
			if err != nil {
				return nil, err
			}
		}
	}
	for _, p := range ps {
		info.Versions = append(info.Versions, VersionInfo{Hash: p.Hash, Parent: p.Parent, Iteration: p.Iteration, Note: p.Note,
			Edits: p.Edits, Metrics: p.Metrics, CreatedAt: p.CreatedAt, Active: p.Hash == info.Active})
	}
	return info, nil
}
