package run

import (
	"context"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
)

// DriftConfig configures the agreement of prompt versions by time window.
type DriftConfig struct {
	// Versions are stored prompt versions (hashes or unique prefixes).
	Versions    []string
	Model       string
	Records     []*record.Record
	By          string
	Resamples   int
	Concurrency int
	Simulated   bool
}

// DriftResult is each version's agreement per window; marshalled, it is
// drift's --json output.
type DriftResult struct {
	ResultVersion int             `json:"result_version"`
	Windows       []refine.Window `json:"windows"`
	Versions      []string        `json:"versions"`
	// By is the window: month or week.
	By        string `json:"by"`
	Simulated bool   `json:"simulated"`
	// Specs are the versions' judges, in Versions' order.
	Specs []*judge.Spec `json:"-"`
}

// ReadVersions reads stored prompt versions' specs.
func ReadVersions(ctx context.Context, st Store, versions []string) ([]*judge.Spec, error) {
	if len(versions) == 0 {
		return nil, deploy.FieldErrorf("judge_versions", "give the prompt versions to compare (hashes from 'gavel prompts list')")
	}
	var specs []*judge.Spec
	for _, v := range versions {
		p, err := st.Prompt(ctx, v)
		if err != nil {
			return nil, versionError("judge_versions", err)
		}
		specs = append(specs, p.Spec)
	}
	return specs, nil
}

// Drift judges the records with every version (all of them before it
// stops with requests pending) and measures each per time window.
func Drift(ctx context.Context, env *Env, cfg DriftConfig) (*DriftResult, error) {
	if err := refine.CheckWindow(cfg.By); err != nil {
		return nil, deploy.FieldErrorf("by", "%v", err)
	}
	specs, err := ReadVersions(ctx, env.Store, cfg.Versions)
	if err != nil {
		return nil, err
	}
	all := map[string]map[string]judge.Verdict{}
	var st stages
	for _, s := range specs {
		vs, err := st.judge(ctx, env, s, cfg.Model, cfg.Records, cfg.Concurrency)
		if err != nil {
			return nil, err
		}
		all[s.Version()] = vs
	}
	if err := st.err(); err != nil {
		return nil, err
	}
	ws, err := refine.Drift(specs, cfg.Model, cfg.Records, cfg.By, all, metrics.BootstrapOptions{Resamples: cfg.Resamples})
	if err != nil {
		return nil, err
	}
	return &DriftResult{ResultVersion: ResultVersion, Windows: ws, Versions: cfg.Versions, By: cfg.By, Simulated: cfg.Simulated, Specs: specs}, nil
}
