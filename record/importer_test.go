package record_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/record"
)

func TestLineReader(t *testing.T) {
	in := "\xef\xbb\xbfone\r\n\n  \ntwo\n" + strings.Repeat("x", 40) + "\nthree\nbad\xffbyte\nlast"
	lr := record.NewLineReader(strings.NewReader(in), 16)
	type got struct {
		line string
		n    int
		err  error
	}
	var out []got
	for {
		line, n, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		out = append(out, got{string(line), n, err})
	}
	want := []struct {
		line string
		n    int
		err  error
	}{
		{"one", 1, nil}, {"two", 4, nil}, {"", 5, record.ErrLineTooLong}, {"three", 6, nil},
		{"", 7, record.ErrInvalidUTF8}, {"last", 8, nil},
	}
	if len(out) != len(want) {
		t.Fatalf("got %d lines %+v, want %d", len(out), out, len(want))
	}
	for i, w := range want {
		g := out[i]
		if g.n != w.n || (w.err == nil && (g.err != nil || g.line != w.line)) || (w.err != nil && !errors.Is(g.err, w.err)) {
			t.Errorf("line %d: got %+v, want %+v", i, g, w)
		}
	}
	if lr.Lines != 6 {
		t.Errorf("Lines = %d, want 6", lr.Lines)
	}
}

// FuzzLineReader: whatever the input, the reader returns exactly the
// non-blank lines (too-long and invalid ones as errors) with increasing
// line numbers, and never more than the limit.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\n"), 4)
	f.Add([]byte("\xef\xbb\xbf{\"x\":1}\n\xff\n"), 64)
	f.Add([]byte(strings.Repeat("y", 100)+"\nz"), 10)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max <= 0 || max > 1<<16 {
			max = 1 + max&0xff
		}
		lr := record.NewLineReader(bytes.NewReader(data), max)
		last := 0
		count := 0
		for {
			line, n, err := lr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if n <= last {
				t.Fatalf("line number %d after %d", n, last)
			}
			last = n
			count++
			if err != nil {
				if !errors.Is(err, record.ErrLineTooLong) && !errors.Is(err, record.ErrInvalidUTF8) {
					t.Fatalf("unexpected error %v", err)
				}
				continue
			}
			if len(line) > max || len(bytes.TrimSpace(line)) == 0 {
				t.Fatalf("bad line %q (max %d)", line, max)
			}
		}
		if count != lr.Lines {
			t.Fatalf("returned %d lines, Lines = %d", count, lr.Lines)
		}
		if count > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("more lines than the input has")
		}
	})
}

// FuzzNative: decoding any line never panics, and a line that decodes and
// validates has a canonical form that is a fixed point.
func FuzzNative(f *testing.F) {
	f.Add([]byte(`{"id":"r","task":"t","candidate":"c","outcome":{"status":"passed"}}`))
	f.Add([]byte(`{"id":"r","task":"t","candidate":"","context":{"a":"b"},"meta":{"x":[1,2.5e3]},"outcome":{"label":"fail","source":"review","at":"2024-02-29T23:59:59.123+05:30"}}`))
	f.Add([]byte(`{"id":1}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := record.Native{}.Decode(line)
		if err != nil {
			return
		}
		if r.Normalize() != nil {
			return
		}
		c1, err := r.Canonical()
		if err != nil {
			t.Fatalf("canonical: %v", err)
		}
		r2, err := record.Native{}.Decode(c1)
		if err != nil {
			t.Fatalf("canonical form %s does not decode: %v", c1, err)
		}
		if err := r2.Normalize(); err != nil {
			t.Fatalf("canonical form %s does not validate: %v", c1, err)
		}
		c2, _ := r2.Canonical()
		if !bytes.Equal(c1, c2) {
			t.Fatalf("canonical form not stable:\n%s\n%s", c1, c2)
		}
	})
}

// memWriter is a fake record.Writer keeping records in memory.
type memWriter struct {
	byID map[string][]byte
	put  []string
}

func (w *memWriter) Put(_ context.Context, r *record.Record) (record.PutResult, error) {
	b, err := r.Canonical()
	if err != nil {
		return 0, err
	}
	if w.byID == nil {
		w.byID = map[string][]byte{}
	}
	if old, ok := w.byID[r.ID]; ok {
		if bytes.Equal(old, b) {
			return record.Unchanged, nil
		}
		return 0, fmt.Errorf("id %q: %w", r.ID, record.ErrConflict)
	}
	w.byID[r.ID] = b
	w.put = append(w.put, r.ID)
	return record.Inserted, nil
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func nativeLine(id, status string) string {
	return fmt.Sprintf(`{"id":%q,"task":"t","candidate":"c","outcome":{"status":%q}}`, id, status)
}

func TestImport(t *testing.T) {
	ctx := context.Background()
	good := strings.Join([]string{nativeLine("a", "passed"), nativeLine("b", "failed"), nativeLine("c", "landed")}, "\n") + "\n"
	third := nativeLine("a", "passed") + "\n" + nativeLine("b", "failed") + "\n" + `{"id":"c","task":` + "\n" + nativeLine("d", "draft") + "\n"

	t.Run("valid file", func(t *testing.T) {
		w := &memWriter{}
		res, err := record.Import(ctx, w, record.Native{}, []string{writeFile(t, "ok.jsonl", good)}, record.ImportOptions{})
		if err != nil || res.Inserted != 3 || res.Lines != 3 || strings.Join(w.put, "") != "abc" {
			t.Fatalf("res %+v err %v put %v", res, err, w.put)
		}
		// The same records again are unchanged.
		res, err = record.Import(ctx, w, record.Native{}, []string{writeFile(t, "ok.jsonl", good)}, record.ImportOptions{})
		if err != nil || res.Unchanged != 3 || res.Inserted != 0 {
			t.Fatalf("re-import: res %+v err %v", res, err)
		}
	})
	t.Run("malformed third line", func(t *testing.T) {
		name := writeFile(t, "bad.jsonl", third)
		_, err := record.Import(ctx, &memWriter{}, record.Native{}, []string{name}, record.ImportOptions{})
		var le *record.LineError
		if !errors.As(err, &le) || le.Line != 3 || le.File != name {
			t.Fatalf("error = %v, want one at %s:3", err, name)
		}
		if !strings.HasPrefix(err.Error(), name+":3: invalid JSON") {
			t.Fatalf("message %q", err)
		}
	})
	t.Run("skip invalid", func(t *testing.T) {
		w := &memWriter{}
		res, err := record.Import(ctx, w, record.Native{}, []string{writeFile(t, "bad.jsonl", third)}, record.ImportOptions{SkipInvalid: true})
		if err != nil || res.Inserted != 3 || len(res.Skipped) != 1 || res.Skipped[0].Line != 3 {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
	t.Run("conflict", func(t *testing.T) {
		w := &memWriter{}
		in := nativeLine("a", "passed") + "\n" + nativeLine("a", "failed") + "\n"
		_, err := record.Import(ctx, w, record.Native{}, []string{writeFile(t, "c.jsonl", in)}, record.ImportOptions{})
		var le *record.LineError
		if !errors.Is(err, record.ErrConflict) || !errors.As(err, &le) || le.Line != 2 {
			t.Fatalf("error = %v, want a conflict on line 2", err)
		}
	})
	t.Run("empty file", func(t *testing.T) {
		_, err := record.Import(ctx, &memWriter{}, record.Native{}, []string{writeFile(t, "e.jsonl", "\n  \n")}, record.ImportOptions{})
		if err == nil || !strings.Contains(err.Error(), "file is empty") {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("line too long", func(t *testing.T) {
		in := nativeLine("a", "passed") + "\n" + `{"id":"b","task":"` + strings.Repeat("x", 200) + `"}` + "\n"
		_, err := record.Import(ctx, &memWriter{}, record.Native{}, []string{writeFile(t, "l.jsonl", in)}, record.ImportOptions{MaxLineBytes: 100})
		var le *record.LineError
		if !errors.Is(err, record.ErrLineTooLong) || !errors.As(err, &le) || le.Line != 2 {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("invalid UTF-8", func(t *testing.T) {
		in := `{"id":"a","task":"caf` + "\xe9" + `","candidate":"c","outcome":{"status":"passed"}}` + "\n"
		_, err := record.Import(ctx, &memWriter{}, record.Native{}, []string{writeFile(t, "u.jsonl", in)}, record.ImportOptions{})
		if !errors.Is(err, record.ErrInvalidUTF8) || !strings.Contains(err.Error(), ":1: invalid UTF-8 at byte 22") {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("gzip", func(t *testing.T) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(good))
		zw.Close()
		w := &memWriter{}
		res, err := record.Import(ctx, w, record.Native{}, []string{writeFile(t, "ok.jsonl.gz", buf.String())}, record.ImportOptions{})
		if err != nil || res.Inserted != 3 {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
	t.Run("truncated gzip", func(t *testing.T) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		for i := range 2000 {
			zw.Write([]byte(nativeLine(fmt.Sprint("r", i), "passed") + "\n"))
		}
		zw.Close()
		cut := buf.Bytes()[:buf.Len()*2/3]
		name := writeFile(t, "cut.jsonl.gz", string(cut))
		w := &memWriter{}
		_, err := record.Import(ctx, w, record.Native{}, []string{name}, record.ImportOptions{SkipInvalid: true})
		if err == nil || !strings.Contains(err.Error(), "is truncated") || strings.Contains(err.Error(), "invalid JSON") {
			t.Fatalf("a truncated .gz: %v", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := record.Import(ctx, &memWriter{}, record.Native{}, []string{filepath.Join(t.TempDir(), "none.jsonl")}, record.ImportOptions{})
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := record.Import(cctx, &memWriter{}, record.Native{}, []string{writeFile(t, "ok.jsonl", good)}, record.ImportOptions{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v", err)
		}
	})
}

// TestImportCodeJudge imports the bundled real data through the field map
// of the README and checks the counts the data set documents.
func TestImportCodeJudge(t *testing.T) {
	fm, err := record.ParseFieldMap("task=prompt,candidate=generation,label=passed,group=task_id,id=task_id+completion_id")
	if err != nil {
		t.Fatal(err)
	}
	fm.Source = record.SourceTests
	w := &memWriter{}
	res, err := record.Import(context.Background(), w, fm, []string{"../examples/codejudge/python_completions.jsonl"}, record.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 492 {
		t.Fatalf("inserted %d, want 492", res.Inserted)
	}
	var c record.StatsCounter
	for _, id := range w.put {
		r, err := record.Native{}.Decode(w.byID[id])
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Normalize(); err != nil {
			t.Fatal(err)
		}
		c.Add(&r)
	}
	s := c.Stats()
	if s.ByLabel[record.Pass] != 206 || s.ByLabel[record.Fail] != 286 || s.Groups != 164 {
		t.Fatalf("stats = %+v, want 206 pass, 286 fail, 164 groups", s)
	}
}
