// Package report renders gavel's results for people: self-contained HTML
// pages (no scripts, no external files) with inline SVG charts, and
// Markdown. Charts are drawn here from numbers; nothing is fetched.
package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"

	"github.com/gavelhq/gavel/metrics"
)

// axis widens [lo, hi] to hold every finite value and rounds it out to a
// step from 1, 2, 2.5 and 5 times a power of ten, with at most eight
// intervals, so ticks are round numbers and 0 is one of them when the
// range crosses it.
func axis(lo, hi float64, values ...float64) (float64, float64, float64) {
	for _, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if hi <= lo {
		hi = lo + 1
	}
	span := hi - lo
	step := 1.0
	for _, mag := range []float64{0.01, 0.1, 1, 10, 100, 1000} {
		found := false
		for _, m := range []float64{1, 2, 2.5, 5} {
			if st := m * mag; span/st <= 8 {
				step, found = st, true
				break
			}
		}
		if found {
			break
		}
	}
	const eps = 1e-9
	return math.Floor(lo/step+eps) * step, math.Ceil(hi/step-eps) * step, step
}

// tickLabel writes a tick value with the decimals its step needs (0.25
// needs two: 0.75, not 0.8).
func tickLabel(v, step float64) string {
	d := 0
	for x := step; d < 4 && math.Abs(x-math.Round(x)) > 1e-9*math.Max(1, math.Abs(x)); x *= 10 {
		d++
	}
	if math.Abs(v) < step/1e6 {
		v = 0
	}
	return fmt.Sprintf("%.*f", d, v)
}

// Series is one line of a line chart.
type Series struct {
	Name   string
	Color  string
	Points []Point // Y NaN for a gap (an undefined value)
}

// Point is one point of a series.
type Point struct{ X, Y float64 }

// palette is used for series without a colour.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

func f(v float64) string { return fmt.Sprintf("%.1f", v) }

// LineChart draws series over a shared x axis, y from yMin to yMax, with a
// legend. xLabel names the x axis.
func LineChart(title, xLabel string, series []Series, yMin, yMax float64) template.HTML {
	const w, h, left, right, top, bottom = 560.0, 300.0, 50.0, 150.0, 30.0, 40.0
	pw, ph := w-left-right, h-top-bottom
	xMin, xMax := math.Inf(1), math.Inf(-1)
	var ys []float64
	for _, s := range series {
		for _, p := range s.Points {
			xMin, xMax = math.Min(xMin, p.X), math.Max(xMax, p.X)
			ys = append(ys, p.Y)
		}
	}
	yMin, yMax, yStep := axis(yMin, yMax, ys...)
	if math.IsInf(xMin, 0) {
		xMin, xMax = 0, 1
	}
	if xMax == xMin {
		xMax = xMin + 1
	}
	sx := func(x float64) float64 { return left + (x-xMin)/(xMax-xMin)*pw }
	sy := func(y float64) float64 { return top + (yMax-math.Max(yMin, math.Min(yMax, y)))/(yMax-yMin)*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="%s">`, f(w), f(h), f(w), f(h), html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="%s" y="18" font-size="13" font-weight="bold">%s</text>`, f(left), html.EscapeString(title))
	// Axes and grid: round ticks, the zero line darker.
	for y := yMin; y <= yMax+yStep/2; y += yStep {
		stroke := "#ddd"
		if math.Abs(y) < yStep/1e6 {
			stroke = "#888"
		}
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, f(left), f(sy(y)), f(left+pw), f(sy(y)), stroke)
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="10" text-anchor="end">%s</text>`, f(left-4), f(sy(y)+3), tickLabel(y, yStep))
	}
	xs := map[float64]bool{}
	for _, s := range series {
		for _, p := range s.Points {
			if !xs[p.X] {
				xs[p.X] = true
				fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="10" text-anchor="middle">%g</text>`, f(sx(p.X)), f(top+ph+14), p.X)
			}
		}
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" text-anchor="middle">%s</text>`, f(left+pw/2), f(h-6), html.EscapeString(xLabel))
	for i, s := range series {
		color := s.Color
		if color == "" {
			color = palette[i%len(palette)]
		}
		var path strings.Builder
		pen := false
		for _, p := range s.Points {
			if math.IsNaN(p.Y) {
				pen = false
				continue
			}
			cmd := "L"
			if !pen {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%s %s ", cmd, f(sx(p.X)), f(sy(p.Y)))
			pen = true
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"><title>%s at %g: %.3f</title></circle>`, f(sx(p.X)), f(sy(p.Y)), color, html.EscapeString(s.Name), p.X, p.Y)
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`, strings.TrimSpace(path.String()), color)
		ly := top + 12 + float64(i)*16
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="10" height="10" fill="%s"/><text x="%s" y="%s" font-size="11">%s</text>`,
			f(left+pw+12), f(ly-9), color, f(left+pw+26), f(ly), html.EscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// Confusion draws a confusion matrix as a heat map: rows are the reference
// classes (rowLabel names them, e.g. "outcome"), columns the predictions
// (colLabel, e.g. "judge says").
func Confusion(title, rowLabel, colLabel string, classes []string, m [][]int) template.HTML {
	const cell, left, top = 70.0, 110.0, 50.0
	n := len(classes)
	w, h := left+cell*float64(n)+20, top+cell*float64(n)+30
	maxV := 1
	for _, row := range m {
		for _, v := range row {
			maxV = max(maxV, v)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="%s">`, f(w), f(h), f(w), f(h), html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="4" y="16" font-size="13" font-weight="bold">%s</text>`, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="%s" y="34" font-size="11" text-anchor="middle">%s</text>`, f(left+cell*float64(n)/2), html.EscapeString(colLabel))
	fmt.Fprintf(&b, `<text x="4" y="%s" font-size="11">%s</text>`, f(top-4), html.EscapeString(rowLabel))
	for j, c := range classes {
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" text-anchor="middle">%s</text>`, f(left+cell*float64(j)+cell/2), f(top-4), html.EscapeString(c))
	}
	for i, row := range m {
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" text-anchor="end">%s</text>`, f(left-8), f(top+cell*float64(i)+cell/2+4), html.EscapeString(classes[i]))
		for j, v := range row {
			shade := 0.1 + 0.8*float64(v)/float64(maxV)
			fill := fmt.Sprintf("rgba(31,119,180,%.2f)", shade)
			if i != j {
				fill = fmt.Sprintf("rgba(214,39,40,%.2f)", shade)
			}
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="#fff"/>`, f(left+cell*float64(j)), f(top+cell*float64(i)), f(cell), f(cell), fill)
			fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="16" text-anchor="middle">%d</text>`, f(left+cell*float64(j)+cell/2), f(top+cell*float64(i)+cell/2+6), v)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// Interval is one bar of an interval chart: a value with its interval.
type Interval struct {
	Name          string
	Value, Lo, Hi float64
	Defined       bool
}

// ciText writes an interval as [lo, hi] with the given decimals, marked
// when it cannot be trusted (a cluster bootstrap over too few groups),
// with the item-level interval beside it.
func ciText(iv *metrics.Interval, decimals int) string {
	if iv == nil {
		return ""
	}
	if !iv.Defined() {
		return "none (" + iv.Undefined + ")"
	}
	s := fmt.Sprintf("[%.*f, %.*f]", decimals, iv.Lo, decimals, iv.Hi)
	if iv.Warning != "" {
		s += fmt.Sprintf(" ⚠ only %d groups resampled: not trustworthy", iv.Groups)
		if iv.ItemCI != nil && iv.ItemCI.Defined() {
			s += fmt.Sprintf("; item-level [%.*f, %.*f]", decimals, iv.ItemCI.Lo, decimals, iv.ItemCI.Hi)
		}
	}
	return s
}

// IntervalChart draws values as dots with their intervals as whiskers, on
// a shared axis from lo to hi.
func IntervalChart(title string, rows []Interval, lo, hi float64) template.HTML {
	const right, rowH, top = 30.0, 24.0, 30.0
	// Room on the left for the longest name (about 6.5 px a character at
	// 11 px), at least 150 px.
	left := 150.0
	for _, r := range rows {
		left = math.Max(left, 16+6.5*float64(len([]rune(r.Name))))
	}
	w := left + 380 + right
	h := top + rowH*float64(len(rows)) + 30
	pw := w - left - right
	var vals []float64
	for _, r := range rows {
		if r.Defined {
			vals = append(vals, r.Value, r.Lo, r.Hi)
		}
	}
	lo, hi, step := axis(lo, hi, vals...)
	sx := func(x float64) float64 { return left + (math.Max(lo, math.Min(hi, x))-lo)/(hi-lo)*pw }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="%s">`, f(w), f(h), f(w), f(h), html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="4" y="16" font-size="13" font-weight="bold">%s</text>`, html.EscapeString(title))
	for x := lo; x <= hi+step/2; x += step {
		stroke := "#ddd"
		if math.Abs(x) < step/1e6 {
			stroke = "#888" // the zero line
		}
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, f(sx(x)), f(top), f(sx(x)), f(h-24), stroke)
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="10" text-anchor="middle">%s</text>`, f(sx(x)), f(h-10), tickLabel(x, step))
	}
	for i, r := range rows {
		y := top + rowH*float64(i) + rowH/2
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" text-anchor="end">%s</text>`, f(left-8), f(y+4), html.EscapeString(r.Name))
		if !r.Defined {
			fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" fill="#888">undefined</text>`, f(left+4), f(y+4))
			continue
		}
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#1f77b4" stroke-width="2"/>`, f(sx(r.Lo)), f(y), f(sx(r.Hi)), f(y))
		fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="4" fill="#1f77b4"><title>%s: %.3f [%.3f, %.3f]</title></circle>`, f(sx(r.Value)), f(y), html.EscapeString(r.Name), r.Value, r.Lo, r.Hi)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// HistSeries is one distribution of a histogram.
type HistSeries struct {
	Name   string
	Color  string
	Values []float64
}

// Histogram draws distributions of values in [lo, hi] as grouped bars over
// bins of equal width, each series as shares of its own count, so series
// of different sizes compare.
func Histogram(title, xLabel string, series []HistSeries, bins int, lo, hi float64) template.HTML {
	const w, h, left, right, top, bottom = 620.0, 260.0, 50.0, 210.0, 30.0, 40.0
	pw, ph := w-left-right, h-top-bottom
	shares := make([][]float64, len(series))
	maxShare := 0.0
	for i, s := range series {
		counts := make([]float64, bins)
		for _, v := range s.Values {
			k := int((v - lo) / (hi - lo) * float64(bins))
			counts[min(bins-1, max(0, k))]++
		}
		for k := range counts {
			if len(s.Values) > 0 {
				counts[k] /= float64(len(s.Values))
			}
			maxShare = math.Max(maxShare, counts[k])
		}
		shares[i] = counts
	}
	if maxShare == 0 {
		maxShare = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="%s">`, f(w), f(h), f(w), f(h), html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="4" y="16" font-size="13" font-weight="bold">%s</text>`, html.EscapeString(title))
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888"/>`, f(left), f(top+ph), f(left+pw), f(top+ph))
	for i := 0; i <= 4; i++ {
		y := top + ph - ph*float64(i)/4
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="10" text-anchor="end">%.0f%%</text>`, f(left-4), f(y+3), 100*maxShare*float64(i)/4)
	}
	for k := 0; k <= bins; k++ {
		x := left + pw*float64(k)/float64(bins)
		if k%max(1, bins/5) == 0 || k == bins {
			fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="10" text-anchor="middle">%.2g</text>`, f(x), f(top+ph+14), lo+(hi-lo)*float64(k)/float64(bins))
		}
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="11" text-anchor="middle">%s</text>`, f(left+pw/2), f(h-6), html.EscapeString(xLabel))
	binW := pw / float64(bins)
	barW := binW * 0.85 / float64(max(1, len(series)))
	for i, s := range series {
		color := s.Color
		if color == "" {
			color = palette[i%len(palette)]
		}
		for k, sh := range shares[i] {
			if sh == 0 {
				continue
			}
			bh := sh / maxShare * ph
			x := left + binW*float64(k) + binW*0.075 + barW*float64(i)
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s: %.1f%% in [%.2f, %.2f)</title></rect>`,
				f(x), f(top+ph-bh), f(barW), f(bh), color, html.EscapeString(s.Name), 100*sh, lo+(hi-lo)*float64(k)/float64(bins), lo+(hi-lo)*float64(k+1)/float64(bins))
		}
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="10" height="10" fill="%s"/><text x="%s" y="%s" font-size="11">%s (%d)</text>`,
			f(left+pw+12), f(top+float64(i)*16), color, f(left+pw+26), f(top+float64(i)*16+9), html.EscapeString(s.Name), len(s.Values))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
