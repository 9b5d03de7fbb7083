package run

import (
	"fmt"
	"math"
	"strconv"

	"github.com/gavelhq/gavel/metrics"
)

// AgreementConfig configures the agreement of raters in a table file.
type AgreementConfig struct {
	// File is a CSV (with a header) or JSONL table; Raters its columns.
	File   string
	Raters []string
	// Pair compares exactly two raters (all the pairwise figures and a
	// classification report); else Krippendorff's alpha over them all.
	Pair bool
	// Group is a column whose values cluster the items for intervals.
	Group string
	Level metrics.Level
	Boot  metrics.BootstrapOptions
}

// AgreementResult is the agreement of raters in a table; marshalled, it is
// agreement's --json output (field names are a contract).
type AgreementResult struct {
	ResultVersion int      `json:"result_version"`
	File          string   `json:"file"`
	Raters        []string `json:"raters"`
	Items         int      `json:"items"`
	Skipped       int      `json:"skipped_missing"`
	Categories    []string `json:"categories,omitempty"`

	ObservedAgreement *metrics.Figure `json:"observed_agreement,omitempty"`
	ScottPi           *metrics.Figure `json:"scott_pi,omitempty"`
	CohenKappa        *metrics.Figure `json:"cohen_kappa,omitempty"`
	BennettS          *metrics.Figure `json:"bennett_s,omitempty"`
	Alpha             *AlphaFigure    `json:"krippendorff_alpha"`

	Classification *metrics.Classification `json:"classification,omitempty"`
}

// AlphaFigure is Krippendorff's alpha at its level of measurement.
type AlphaFigure struct {
	metrics.Figure
	Level string `json:"level"`
}

// Agreement reads the table and measures the raters' agreement.
func Agreement(cfg AgreementConfig) (*AgreementResult, error) {
	need := append([]string(nil), cfg.Raters...)
	if cfg.Group != "" {
		need = append(need, cfg.Group)
	}
	rows, err := ReadTable(cfg.File, need)
	if err != nil {
		return nil, err
	}
	var sum *AgreementResult
	if cfg.Pair {
		sum, err = pairAgreement(rows, cfg, cfg.Level, cfg.Boot)
	} else {
		sum, err = coderAgreement(cfg.File, rows, cfg, cfg.Level, cfg.Boot)
	}
	if err != nil {
		return nil, err
	}
	sum.ResultVersion, sum.File = ResultVersion, cfg.File
	return sum, nil
}

// estimate computes a statistic with its interval (none when resamples is 0).
func estimate(n int, stat metrics.Statistic, opt metrics.BootstrapOptions) *metrics.Figure {
	if opt.Resamples == 0 {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		v := stat(all)
		return &metrics.Figure{Value: v, Undefined: v.Undefined}
	}
	e := metrics.WithCI(n, stat, opt)
	return &e
}

// estimateEach computes k figures with their intervals from one pass of
// resamples (no intervals when resamples is 0).
func estimateEach(n, k int, stats metrics.Statistics, opt metrics.BootstrapOptions) []*metrics.Figure {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	vals := make([]metrics.Value, k)
	stats(all, vals)
	figs := make([]*metrics.Figure, k)
	var ivs []metrics.Interval
	if opt.Resamples != 0 {
		ivs = metrics.BootstrapEach(n, k, stats, opt)
	}
	for j, v := range vals {
		figs[j] = &metrics.Figure{Value: v, Undefined: v.Undefined}
		if ivs != nil {
			figs[j].CI = &ivs[j]
		}
	}
	return figs
}

func pairAgreement(rows []Row, f AgreementConfig, level metrics.Level, opt metrics.BootstrapOptions) (*AgreementResult, error) {
	var av, bv, groups []string
	fa, fb := f.Raters[0], f.Raters[1]
	sum := &AgreementResult{Raters: []string{fa, fb}}
	for _, r := range rows {
		x, okA := r.Cells[fa]
		y, okB := r.Cells[fb]
		if !okA || !okB {
			sum.Skipped++
			continue
		}
		av, bv = append(av, x), append(bv, y)
		if f.Group != "" {
			groups = append(groups, r.Cells[f.Group])
		}
	}
	if len(av) == 0 {
		return nil, fmt.Errorf("no row has both %s and %s", fa, fb)
	}
	ai, bi, cats := metrics.Encode(av, bv)
	n, k := len(ai), len(cats)
	sum.Items, sum.Categories = n, cats
	opt.Groups = groups
	// Alpha at the chosen level: categories are their own codes for the
	// nominal level, numbers otherwise.
	codes, numErr := categoryCodes(cats, level)
	var alpha *metrics.AlphaUnits
	if numErr == "" {
		units := make([][]float64, n)
		for i := range units {
			units[i] = []float64{codes[ai[i]], codes[bi[i]]}
		}
		alpha = metrics.NewAlphaUnits(units, level)
	}
	// One pass: each resample fills one table, and every figure is read
	// from it (alpha from the same resampled units).
	tab := metrics.NewTable(k)
	figs := estimateEach(n, 5, func(idx []int, out []metrics.Value) {
		tab.Reset()
		for _, i := range idx {
			tab.Add(ai[i], bi[i], 1)
		}
		out[0], out[1], out[2], out[3] = tab.ObservedAgreement(), tab.ScottPi(), tab.CohenKappa(), tab.BennettS()
		if numErr != "" {
			out[4] = metrics.Undef("%s", numErr)
		} else {
			out[4] = alpha.OfTable(tab, codes) // the same units, counted in the table
		}
	}, opt)
	sum.ObservedAgreement, sum.ScottPi, sum.CohenKappa, sum.BennettS = figs[0], figs[1], figs[2], figs[3]
	sum.Alpha = &AlphaFigure{Figure: *figs[4], Level: level.String()}
	pred := make([]int, n)
	copy(pred, bi)
	sum.Classification = metrics.Classify(ai, pred, cats)
	return sum, nil
}

// categoryCodes gives each category its value for Krippendorff's alpha:
// its index at the nominal level, its number at the others.
func categoryCodes(cats []string, level metrics.Level) ([]float64, string) {
	codes := make([]float64, len(cats))
	for i, c := range cats {
		if level == metrics.LevelNominal {
			codes[i] = float64(i)
			continue
		}
		v, err := strconv.ParseFloat(c, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Sprintf("the %s level needs numbers, and %q is not one", level, c)
		}
		codes[i] = v
	}
	return codes, ""
}

func coderAgreement(file string, rows []Row, f AgreementConfig, level metrics.Level, opt metrics.BootstrapOptions) (*AgreementResult, error) {
	sum := &AgreementResult{Raters: f.Raters}
	// Nominal values may be any labels; the other levels need numbers.
	labels := map[string]float64{}
	var units [][]float64
	var groups []string
	for _, r := range rows {
		var u []float64
		for _, c := range f.Raters {
			s, ok := r.Cells[c]
			if !ok {
				continue
			}
			if level == metrics.LevelNominal {
				code, seen := labels[s]
				if !seen {
					code = float64(len(labels))
					labels[s] = code
				}
				u = append(u, code)
				continue
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s:%d: field %s: %q is not a number (the %s level needs numbers)", file, r.Line, c, s, level)
			}
			u = append(u, v)
		}
		if len(u) < 2 {
			sum.Skipped++
		}
		units = append(units, u)
		if f.Group != "" {
			groups = append(groups, r.Cells[f.Group])
		}
	}
	sum.Items = len(units) - sum.Skipped
	opt.Groups = groups
	alpha := metrics.NewAlphaUnits(units, level)
	sum.Alpha = &AlphaFigure{Figure: *estimate(len(units), alpha.Of, opt), Level: level.String()}
	return sum, nil
}
