package record_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gavelhq/gavel/record"
)

// genReader produces n JSONL lines of about 2 KB each without holding them,
// like a large file on disk.
type genReader struct {
	n, i int
	buf  []byte
}

func (g *genReader) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		if g.i == g.n {
			return 0, io.EOF
		}
		g.buf = fmt.Appendf(nil, `{"task_id":"Python/%d","completion_id":%d,"prompt":"def f(x):\n    %0*d","generation":"    return x\n","passed":%t,"result":"passed"}`+"\n",
			g.i/3, g.i%3, 1900, g.i, g.i%2 == 0)
		g.i++
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

type countWriter struct{ n int }

func (c *countWriter) Put(context.Context, *record.Record) (record.PutResult, error) {
	c.n++
	return record.Inserted, nil
}

// BenchmarkImportFieldMap measures decoding through a field map, the cost
// of `gavel ingest --map` before the store. Allocation per line must not
// grow with the number of lines: the file is streamed.
func BenchmarkImportFieldMap(b *testing.B) {
	for _, lines := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("lines=%d", lines), func(b *testing.B) {
			fm, err := record.ParseFieldMap("task=prompt,candidate=generation,label=passed,group=task_id,id=task_id+completion_id")
			if err != nil {
				b.Fatal(err)
			}
			fm.Source = record.SourceTests
			dir := b.TempDir()
			name := filepath.Join(dir, "in.jsonl")
			f, _ := os.Create(name)
			size, _ := io.Copy(f, &genReader{n: lines})
			f.Close()
			b.SetBytes(size)
			b.ReportAllocs()
			var peak uint64
			for b.Loop() {
				w := &countWriter{}
				res, err := record.Import(context.Background(), w, fm, []string{name}, record.ImportOptions{
					Progress: func(n int) {
						if n%10_000 == 0 {
							var ms runtime.MemStats
							runtime.ReadMemStats(&ms)
							peak = max(peak, ms.HeapInuse)
						}
					},
				})
				if err != nil || res.Inserted != lines {
					b.Fatalf("%v %+v", err, res)
				}
			}
			if peak > 0 {
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			}
		})
	}
}
