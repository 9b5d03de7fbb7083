package metrics_test

import (
	"testing"

	"github.com/gavelhq/gavel/metrics"
)

// BenchmarkPairedBootstrap: 10,000 paired resamples of Scott's pi over
// 10,000 items, the size of a large calibration's test split. The baseline
// is the same number of unpaired resamples (one statistic per resample).
func BenchmarkPairedBootstrap(b *testing.B) {
	ref, predA, _ := judgeData(10_000, 1, 0.8)
	_, predB, groups := judgeData(10_000, 1, 0.9)
	pa, _ := metrics.BinaryStatistic("scott_pi", ref, predA)
	pb, _ := metrics.BinaryStatistic("scott_pi", ref, predB)
	opt := metrics.BootstrapOptions{Resamples: 10_000, Seed: 1}
	b.Run("unpaired", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			metrics.Bootstrap(len(ref), pa, opt)
		}
	})
	b.Run("paired", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			metrics.PairedBootstrap(len(ref), pb, pa, opt)
		}
	})
	b.Run("paired-grouped", func(b *testing.B) {
		g := opt
		g.Groups = groups
		b.ReportAllocs()
		for b.Loop() {
			metrics.PairedBootstrap(len(ref), pb, pa, g)
		}
	})
}
