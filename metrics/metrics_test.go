package metrics_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/metrics"
)

const tol = 1e-6

func near(t *testing.T, name string, v metrics.Value, want float64) {
	t.Helper()
	if !v.Defined() {
		t.Errorf("%s undefined: %s", name, v.Undefined)
		return
	}
	if math.Abs(v.V-want) > tol {
		t.Errorf("%s = %.10f, want %.10f", name, v.V, want)
	}
}

func loadReference(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("testdata/reference_values.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// artsteinPoesio builds the 100 items of the example from its cross table:
// items 1-46 both stat; 47-52 a=ireq b=stat; 53-84 both ireq; 85-90 a=ireq
// b=chck; 91-100 both chck.
func artsteinPoesio() (a, b []string) {
	add := func(n int, x, y string) {
		for range n {
			a, b = append(a, x), append(b, y)
		}
	}
	add(46, "stat", "stat")
	add(6, "ireq", "stat")
	add(32, "ireq", "ireq")
	add(6, "ireq", "chck")
	add(10, "chck", "chck")
	return a, b
}

func TestArtsteinPoesio(t *testing.T) {
	var ref struct {
		ACounts    map[string]int `json:"coder_a_counts"`
		BCounts    map[string]int `json:"coder_b_counts"`
		Ao         float64        `json:"Ao"`
		S          float64        `json:"S"`
		ScottPi    float64        `json:"scott_pi"`
		CohenKappa float64        `json:"cohen_kappa"`
		Alpha      float64        `json:"krippendorff_alpha_nominal"`
	}
	if err := json.Unmarshal(loadReference(t)["artstein_poesio_2008_nltk_example"], &ref); err != nil {
		t.Fatal(err)
	}
	a, b := artsteinPoesio()
	// The constructed items match the published marginals.
	for label, n := range ref.ACounts {
		if c := count(a, label); c != n {
			t.Fatalf("coder a has %d %s, reference %d", c, label, n)
		}
	}
	for label, n := range ref.BCounts {
		if c := count(b, label); c != n {
			t.Fatalf("coder b has %d %s, reference %d", c, label, n)
		}
	}
	ai, bi, cats := metrics.Encode(a, b)
	tab := metrics.TableOf(ai, bi, len(cats))
	near(t, "Ao", tab.ObservedAgreement(), ref.Ao)
	near(t, "S", tab.BennettS(), ref.S)
	near(t, "Scott's pi", tab.ScottPi(), ref.ScottPi)
	near(t, "Cohen's kappa", tab.CohenKappa(), ref.CohenKappa)
	units := make([][]float64, len(ai))
	for i := range ai {
		units[i] = []float64{float64(ai[i]), float64(bi[i])}
	}
	near(t, "alpha (nominal)", metrics.Alpha(units, metrics.LevelNominal), ref.Alpha)
	if ref.ScottPi != 0.7995322418977615 {
		t.Fatalf("reference file changed: pi %v", ref.ScottPi)
	}
}

func count(xs []string, x string) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

func TestKrippendorffAlphaReference(t *testing.T) {
	refs := loadReference(t)
	for _, name := range []string{"fast_krippendorff_docstring_3coders_15units", "krippendorff2011_4coders_12units"} {
		var ex struct {
			Data  [][]*float64       `json:"data_rows_are_coders_None_is_missing"`
			Alpha map[string]float64 `json:"alpha"`
		}
		if err := json.Unmarshal(refs[name], &ex); err != nil {
			t.Fatal(err)
		}
		coders := make([][]float64, len(ex.Data))
		for i, row := range ex.Data {
			for _, v := range row {
				if v == nil {
					coders[i] = append(coders[i], math.NaN())
				} else {
					coders[i] = append(coders[i], *v)
				}
			}
		}
		units := metrics.CodersToUnits(coders)
		if len(ex.Alpha) != 4 {
			t.Fatalf("%s: %d levels in the reference", name, len(ex.Alpha))
		}
		for levelName, want := range ex.Alpha {
			level, err := metrics.ParseLevel(levelName)
			if err != nil {
				t.Fatal(err)
			}
			near(t, name+" "+levelName, metrics.Alpha(units, level), want)
		}
	}
}

// TestHandWorked2x2: rows are rater A, columns rater B. Po = 15/20; pooled
// shares 21/40 and 19/40 give Pe = 0.50125 and pi = 0.24875/0.49875; Cohen's
// Pe = 0.55*0.5 + 0.45*0.5 = 0.5 gives kappa 0.5.
func TestHandWorked2x2(t *testing.T) {
	tab := metrics.NewTable(2)
	for i, row := range [][]float64{{8, 3}, {2, 7}} {
		for j, n := range row {
			tab.Add(i, j, n)
		}
	}
	near(t, "pi", tab.ScottPi(), 0.498747)
	near(t, "pi exact", tab.ScottPi(), 0.24875/0.49875)
	near(t, "kappa", tab.CohenKappa(), 0.5)
	near(t, "Po", tab.ObservedAgreement(), 0.75)
}

// TestAlwaysPass: a judge that always says pass on data that is 90% pass is
// 90% accurate, yet agrees less than chance: pooled pass share 0.95 gives
// Pe = 0.905 and pi = (0.9 - 0.905) / 0.095 = -0.0526.
func TestAlwaysPass(t *testing.T) {
	ref := make([]int, 100)
	pred := make([]int, 100)
	for i := range ref {
		ref[i] = metrics.Pass
		if i < 10 {
			ref[i] = metrics.Fail
		}
		pred[i] = metrics.Pass
	}
	b := metrics.ComputeBinary(ref, pred, nil)
	near(t, "accuracy", b.Accuracy, 0.9)
	near(t, "pi", b.ScottPi, (0.9-0.905)/0.095)
	if b.ScottPi.V >= 0 {
		t.Fatalf("pi %v is not below zero", b.ScottPi.V)
	}
	near(t, "fail recall", b.FailRecall, 0)
	near(t, "pass recall", b.PassRecall, 1)
	if b.FailPrecision.Defined() || b.MCC.Defined() {
		t.Fatalf("fail precision and MCC should be undefined when the judge never fails: %v %v", b.FailPrecision, b.MCC)
	}
	if b.CohenKappa.V != 0 {
		t.Fatalf("kappa of a constant judge = %v, want 0", b.CohenKappa.V)
	}
}

func TestUndefined(t *testing.T) {
	tab := metrics.TableOf([]int{0, 0, 0}, []int{0, 0, 0}, 2)
	if v := tab.ScottPi(); v.Defined() || v.Undefined == "" {
		t.Fatalf("pi with one category: %+v", v)
	}
	if v := tab.CohenKappa(); v.Defined() {
		t.Fatalf("kappa with one category: %+v", v)
	}
	if v := metrics.NewTable(2).ObservedAgreement(); v.Defined() {
		t.Fatal("agreement of nothing is defined")
	}
	if v := metrics.Alpha([][]float64{{1}, {2}, {}}, metrics.LevelNominal); v.Defined() {
		t.Fatal("alpha with no pairable values is defined")
	}
	if v := metrics.Alpha([][]float64{{1, 1}, {1, 1}}, metrics.LevelInterval); v.Defined() {
		t.Fatal("alpha with one value only is defined")
	}
	if v := metrics.Pearson([]float64{1, 1, 1}, []float64{1, 2, 3}); v.Defined() {
		t.Fatal("Pearson of a constant is defined")
	}
	if v := metrics.Def(math.NaN()); v.Defined() {
		t.Fatal("NaN is a defined value")
	}
	b, _ := json.Marshal(struct{ V metrics.Value }{tab.ScottPi()})
	if string(b) != `{"V":null}` {
		t.Fatalf("undefined JSON: %s", b)
	}
}

func TestFleissKappa(t *testing.T) {
	// Fleiss (1971) as reproduced on Wikipedia: 10 subjects, 14 raters,
	// 5 categories; kappa 0.210.
	counts := [][]int{
		{0, 0, 0, 0, 14}, {0, 2, 6, 4, 2}, {0, 0, 3, 5, 6}, {0, 3, 9, 2, 0}, {2, 2, 8, 1, 1},
		{7, 7, 0, 0, 0}, {3, 2, 6, 3, 0}, {2, 5, 3, 2, 2}, {6, 5, 2, 1, 0}, {0, 2, 2, 3, 7},
	}
	v := metrics.FleissKappa(counts)
	if !v.Defined() || math.Abs(v.V-0.20993) > 1e-4 {
		t.Fatalf("Fleiss kappa %v, want 0.210", v)
	}
	// Two raters and two categories: Fleiss' kappa is Scott's pi.
	var c2 [][]int
	ai, bi := []int{0, 0, 1, 1, 1, 0, 1, 0}, []int{0, 1, 1, 1, 0, 0, 1, 0}
	for i := range ai {
		row := []int{0, 0}
		row[ai[i]]++
		row[bi[i]]++
		c2 = append(c2, row)
	}
	near(t, "Fleiss = pi for two raters", metrics.FleissKappa(c2), metrics.TableOf(ai, bi, 2).ScottPi().V)
	if v := metrics.FleissKappa([][]int{{2, 0}, {1, 2}}); v.Defined() {
		t.Fatal("unequal rater counts accepted")
	}
}

// TestPiKappaProperties: symmetric in the raters, invariant to renaming
// categories, over random tables.
func TestPiKappaProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		k := 2 + rng.IntN(4)
		n := 5 + rng.IntN(60)
		a, b := make([]int, n), make([]int, n)
		for i := range a {
			a[i] = rng.IntN(k)
			if rng.Float64() < 0.6 {
				b[i] = a[i]
			} else {
				b[i] = rng.IntN(k)
			}
		}
		ab, ba := metrics.TableOf(a, b, k), metrics.TableOf(b, a, k)
		perm := rng.Perm(k)
		pa, pb := make([]int, n), make([]int, n)
		for i := range a {
			pa[i], pb[i] = perm[a[i]], perm[b[i]]
		}
		pt := metrics.TableOf(pa, pb, k)
		for _, f := range []struct {
			name string
			f    func(*metrics.Table) metrics.Value
		}{{"pi", (*metrics.Table).ScottPi}, {"kappa", (*metrics.Table).CohenKappa}} {
			x, y, z := f.f(ab), f.f(ba), f.f(pt)
			if x.Defined() != y.Defined() || x.Defined() != z.Defined() {
				t.Fatalf("trial %d %s: definedness differs", trial, f.name)
			}
			if x.Defined() && (math.Abs(x.V-y.V) > 1e-12 || math.Abs(x.V-z.V) > 1e-12) {
				t.Fatalf("trial %d %s: %v, swapped %v, renamed %v", trial, f.name, x.V, y.V, z.V)
			}
		}
	}
}

func TestClassification(t *testing.T) {
	// Reference fail,fail,fail,pass,pass; predicted fail,pass,fail,pass,
	// fail, and one invalid. With failure positive: TP 2, FN 1, FP 1, TN 1.
	classes := []string{"fail", "pass"}
	ref := []int{0, 0, 0, 1, 1, 1}
	pred := []int{0, 1, 0, 1, 0, -1}
	c := metrics.Classify(ref, pred, classes)
	if c.N != 5 || c.Invalid != 1 || c.Confusion[0][0] != 2 || c.Confusion[0][1] != 1 || c.Confusion[1][0] != 1 || c.Confusion[1][1] != 1 {
		t.Fatalf("confusion %+v", c)
	}
	near(t, "invalid rate", c.InvalidRate, 1.0/6)
	near(t, "accuracy", c.Accuracy, 3.0/5)
	near(t, "fail precision", c.Class("fail").Precision, 2.0/3)
	near(t, "fail recall", c.Class("fail").Recall, 2.0/3)
	near(t, "pass F1", c.Class("pass").F1, 0.5)
	// MCC = (2*1 - 1*1) / sqrt(3*3*2*2) = 1/6.
	near(t, "MCC", c.MCC, 1.0/6)
	bin := metrics.ComputeBinary(ref, pred, nil)
	near(t, "binary MCC agrees", bin.MCC, 1.0/6)
	near(t, "binary fail F1", bin.FailF1, c.Class("fail").F1.V)
	if bin.Invalid != 1 || bin.N != 5 {
		t.Fatalf("binary counts %+v", bin)
	}
}

func TestCorrelation(t *testing.T) {
	// SciPy's documented examples: spearmanr([1,2,3,4,5],[5,6,7,8,7]) and
	// kendalltau([12,2,1,12,2],[1,4,7,1,0]) (tau-b).
	near(t, "Spearman", metrics.Spearman([]float64{1, 2, 3, 4, 5}, []float64{5, 6, 7, 8, 7}), 0.8207826816681233)
	near(t, "Kendall tau-b", metrics.KendallTauB([]float64{12, 2, 1, 12, 2}, []float64{1, 4, 7, 1, 0}), -0.47140452079103173)
	near(t, "Pearson", metrics.Pearson([]float64{1, 2, 3}, []float64{2, 4, 7}), 0.99339926779878)
	near(t, "MAE", metrics.MAE([]float64{0, 3, 5}, []float64{1, 3, 2}), 4.0/3)
	near(t, "exact", metrics.WithinAccuracy([]float64{0, 3, 5, 4}, []float64{1, 3, 2, 4}, 0), 0.5)
	near(t, "within one", metrics.WithinAccuracy([]float64{0, 3, 5, 4}, []float64{1, 3, 2, 4}, 1), 0.75)
}

// TestKendallTableMatchesPairs: the joint-table count equals brute-force
// pair counting, on 0..5 scores and on many distinct values.
func TestKendallTableMatchesPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		n := 3 + rng.IntN(80)
		x, y := make([]float64, n), make([]float64, n)
		levels := 6
		if trial%5 == 0 {
			levels = 1000
		}
		for i := range x {
			x[i] = float64(rng.IntN(levels))
			y[i] = float64(rng.IntN(levels))
		}
		got := metrics.KendallTauB(x, y)
		want := bruteTauB(x, y)
		if got.Defined() != !math.IsNaN(want) || (got.Defined() && math.Abs(got.V-want) > 1e-12) {
			t.Fatalf("trial %d: %v, brute force %v", trial, got, want)
		}
	}
}

func bruteTauB(x, y []float64) float64 {
	var c, d, tx, ty float64
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			s := (x[i] - x[j]) * (y[i] - y[j])
			if s > 0 {
				c++
			} else if s < 0 {
				d++
			}
			if x[i] == x[j] {
				tx++
			}
			if y[i] == y[j] {
				ty++
			}
		}
	}
	n0 := float64(len(x)*(len(x)-1)) / 2
	den := math.Sqrt((n0 - tx) * (n0 - ty))
	if den == 0 {
		return math.NaN()
	}
	return (c - d) / den
}

func judgeData(n int, seed uint64, acc float64) (ref, pred []int, groups []string) {
	rng := rand.New(rand.NewPCG(seed, 9))
	for i := range n {
		r := metrics.Fail
		if rng.Float64() < 0.4 {
			r = metrics.Pass
		}
		p := r
		if rng.Float64() > acc {
			p = 1 - r
		}
		ref, pred = append(ref, r), append(pred, p)
		groups = append(groups, fmt.Sprint("g", i/3))
	}
	return
}

func TestBootstrap(t *testing.T) {
	ref, pred, groups := judgeData(300, 1, 0.8)
	pi, err := metrics.BinaryStatistic("scott_pi", ref, pred)
	if err != nil {
		t.Fatal(err)
	}
	opt := metrics.BootstrapOptions{Resamples: 2000, Seed: 7}
	a := metrics.Bootstrap(len(ref), pi, opt)
	b := metrics.Bootstrap(len(ref), pi, opt)
	if a != b {
		t.Fatalf("same seed, different intervals: %v %v", a, b)
	}
	full := metrics.ComputeBinary(ref, pred, nil).ScottPi.V
	if !(a.Lo < full && full < a.Hi) || a.Hi-a.Lo > 0.3 || a.Dropped != 0 || a.Level != 0.95 {
		t.Fatalf("interval %v around %v", a, full)
	}
	opt.Seed = 8
	if c := metrics.Bootstrap(len(ref), pi, opt); c == a {
		t.Fatal("another seed gave the same interval")
	}
	// Cluster bootstrap over groups of three.
	opt.Groups = groups
	g := metrics.Bootstrap(len(ref), pi, opt)
	if g.Groups != 100 || !(g.Lo < full && full < g.Hi) {
		t.Fatalf("grouped interval %v", g)
	}
	// A judge against itself: the paired interval of the difference is [0, 0].
	self := metrics.PairedBootstrap(len(ref), pi, pi, metrics.BootstrapOptions{Resamples: 1000, Seed: 3})
	if self.Lo != 0 || self.Hi != 0 || !self.Defined() {
		t.Fatalf("self-difference interval %v", self)
	}
	// A better judge: the paired interval of the gain lies above zero.
	_, better, _ := judgeData(300, 1, 0.95)
	pi2, _ := metrics.BinaryStatistic("scott_pi", ref, better)
	gain := metrics.PairedBootstrap(len(ref), pi2, pi, metrics.BootstrapOptions{Resamples: 2000, Seed: 3})
	if gain.Lo <= 0 {
		t.Fatalf("gain interval %v should exclude zero", gain)
	}
	// Resamples where the figure is undefined are dropped and counted:
	// with two failures among 200 passes, many resamples hold no failure.
	r2 := make([]int, 202)
	p2 := make([]int, 202)
	for i := range r2 {
		r2[i], p2[i] = metrics.Pass, metrics.Pass
	}
	r2[0], p2[0] = metrics.Fail, metrics.Fail
	rec, _ := metrics.BinaryStatistic("fail_recall", r2, p2)
	d := metrics.Bootstrap(len(r2), rec, metrics.BootstrapOptions{Resamples: 1000, Seed: 1})
	if d.Dropped < 200 || d.Dropped > 500 || !d.Defined() {
		t.Fatalf("dropped %d of 1000 (expected about 1000*(1-1/202)^202 = 368)", d.Dropped)
	}
}

func TestSweep(t *testing.T) {
	// Rubric scores 0..5 (checks passed); the reference passes when the
	// score is 5 or 4 with a small error.
	scores := []float64{5, 5, 4, 4, 3, 2, 5, 1, 0, 4}
	ref := []int{1, 1, 1, 0, 0, 0, 1, 0, 0, 1}
	pts := metrics.Sweep(ref, scores, nil)
	if len(pts) != 7 || pts[0].Threshold != 0 || pts[6].Threshold != 6 {
		t.Fatalf("thresholds %v", pts)
	}
	// At threshold 4: predicted pass for 5,5,4,4,5,4: TP(fail) = 4 (3,2,1,0),
	// one fail (the 4 at index 3) called pass; all 5 passes called pass.
	at4 := pts[4].Metrics
	if at4.Confusion != [2][2]int{{4, 1}, {0, 5}} {
		t.Fatalf("confusion at 4: %v", at4.Confusion)
	}
	best, err := metrics.BestThreshold(pts, "scott_pi")
	if err != nil || best.Threshold != 4 {
		t.Fatalf("best %v %v", best.Threshold, err)
	}
	// Everything passes at 0 and nothing at 6: pi is below zero or
	// undefined there.
	if v := pts[6].Metrics.ScottPi; v.Defined() && v.V > 0 {
		t.Fatalf("pi when nothing passes: %v", v)
	}
	if _, err := metrics.BestThreshold(pts, "nonsense"); err == nil {
		t.Fatal("unknown metric accepted")
	}
}

// A cluster bootstrap over fewer than ten groups warns, says what it
// resampled and gives the item-level interval beside it (issue 13, defect
// 6: pi 0.5515 [0.5476, 0.5515] from 2 groups looked precise).
func TestFewGroupsWarn(t *testing.T) {
	n := 200
	x := make([]float64, n)
	groups := make([]string, n)
	for i := range n {
		x[i] = float64(i % 7)
		groups[i] = fmt.Sprint("g", i%2)
	}
	mean := func(idx []int) metrics.Value {
		s := 0.0
		for _, i := range idx {
			s += x[i]
		}
		return metrics.Def(s / float64(len(idx)))
	}
	iv := metrics.Bootstrap(n, mean, metrics.BootstrapOptions{Resamples: 2000, Seed: 1, Groups: groups})
	if iv.Resampled != "groups" || iv.Groups != 2 || iv.Warning == "" || !strings.Contains(iv.Warning, "only 2 groups") ||
		iv.ItemCI == nil || !iv.ItemCI.Defined() || iv.ItemCI.Resampled != "items" || !strings.Contains(iv.String(), "warning") {
		t.Fatalf("two groups: %+v", iv)
	}
	// The two groups have almost the same mean, so the cluster interval is
	// deceptively narrow; resampling items shows the spread.
	if iv.ItemCI.Hi-iv.ItemCI.Lo <= iv.Hi-iv.Lo {
		t.Fatalf("item-level %v is not wider than the 2-group %v", iv.ItemCI, iv)
	}
	for i := range groups {
		groups[i] = fmt.Sprint("g", i%12)
	}
	iv = metrics.Bootstrap(n, mean, metrics.BootstrapOptions{Resamples: 500, Seed: 1, Groups: groups})
	if iv.Warning != "" || iv.ItemCI != nil || iv.Groups != 12 {
		t.Fatalf("twelve groups: %+v", iv)
	}
	if iv := metrics.Bootstrap(n, mean, metrics.BootstrapOptions{Resamples: 200, Seed: 1}); iv.Resampled != "items" || iv.Warning != "" {
		t.Fatalf("items: %+v", iv)
	}
}

// Wilson's interval against published values: 81 of 263 at 95% is
// [0.2553, 0.3662] (Newcombe 1998, example (i), method 3); 0 of 10 is
// [0, 0.2775].
func TestWilson(t *testing.T) {
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{{81, 263, 0.2553, 0.3662}, {0, 10, 0, 0.2775}, {15, 148, 0.0624, 0.1605}} {
		iv := metrics.Wilson(c.k, c.n, 0.95)
		if math.Abs(iv.Lo-c.lo) > 5e-4 || math.Abs(iv.Hi-c.hi) > 5e-4 {
			t.Errorf("Wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", c.k, c.n, iv.Lo, iv.Hi, c.lo, c.hi)
		}
	}
	if iv := metrics.Wilson(0, 0, 0.95); iv.Defined() {
		t.Error("no trials must have no interval")
	}
}
