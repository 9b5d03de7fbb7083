package record

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// LineError locates an error in an input file.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// PutResult says what storing one record did.
type PutResult int

// The results of Put.
const (
	Inserted  PutResult = iota // a new record
	Unchanged                  // the same record was already stored
)

// Writer stores records inside one import transaction. Put returns an error
// wrapping ErrConflict when the ID is stored with different content.
type Writer interface {
	Put(ctx context.Context, r *Record) (PutResult, error)
}

// ImportOptions configure Import. The zero value refuses any invalid line
// and uses DefaultMaxLineBytes.
type ImportOptions struct {
	// SkipInvalid imports the valid lines and lists the others in
	// ImportResult.Skipped, instead of failing on the first.
	SkipInvalid bool
	// MaxLineBytes bounds one line (DefaultMaxLineBytes when zero).
	MaxLineBytes int
	// Progress, when set, is called after each line with the lines read so
	// far across all files.
	Progress func(lines int)
	// Enrich, when set, adds to each decoded record before it is checked
	// and written (ingest --repo's context.files); its error is the
	// line's.
	Enrich func(ctx context.Context, r *Record) error
}

// ImportResult summarises an import.
type ImportResult struct {
	Files     []string     `json:"files"`
	Lines     int          `json:"lines"`
	Inserted  int          `json:"inserted"`
	Unchanged int          `json:"unchanged"`
	Skipped   []*LineError `json:"-"`
}

// Import decodes every file with dec and writes each record to w, streaming
// line by line. The caller owns the transaction behind w: on error it must
// roll back, so that nothing is imported. An empty file is an error. A file
// whose name ends in .gz is decompressed.
func Import(ctx context.Context, w Writer, dec Decoder, files []string, opt ImportOptions) (*ImportResult, error) {
	res := &ImportResult{Files: files}
	for _, name := range files {
		if err := importFile(ctx, w, dec, name, opt, res); err != nil {
			return res, err
		}
	}
	return res, nil
}

func importFile(ctx context.Context, w Writer, dec Decoder, name string, opt ImportOptions, res *ImportResult) error {
	rc, err := OpenInput(name)
	if err != nil {
		return err
	}
	defer rc.Close()
	lr := NewLineReader(rc, opt.MaxLineBytes)
	records := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, n, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		res.Lines++
		if opt.Progress != nil {
			opt.Progress(res.Lines)
		}
		if err == nil {
			err = putLine(ctx, w, dec, line, res, opt.Enrich)
		}
		if err == nil {
			records++
			continue
		}
		var fe *FieldError
		lineErr := errors.Is(err, ErrLineTooLong) || errors.Is(err, ErrInvalidUTF8) ||
			errors.Is(err, ErrConflict) || errors.As(err, &fe) || isDecodeError(err)
		le := &LineError{File: name, Line: n, Err: err}
		if !lineErr || !opt.SkipInvalid {
			return le
		}
		res.Skipped = append(res.Skipped, le)
	}
	if lr.Lines == 0 {
		return fmt.Errorf("%s: file is empty", name)
	}
	return nil
}

// decodeError marks errors from a Decoder that are about the line's content.
type decodeError struct{ error }

func (e decodeError) Unwrap() error { return e.error }

func isDecodeError(err error) bool {
	var d decodeError
	return errors.As(err, &d)
}

func putLine(ctx context.Context, w Writer, dec Decoder, line []byte, res *ImportResult, enrich func(context.Context, *Record) error) error {
	r, err := dec.Decode(line)
	if err != nil {
		return decodeError{err}
	}
	if enrich != nil {
		if err := enrich(ctx, &r); err != nil {
			return decodeError{err}
		}
	}
	if err := r.Normalize(); err != nil {
		return err
	}
	got, err := w.Put(ctx, &r)
	if err != nil {
		return err
	}
	if got == Inserted {
		res.Inserted++
	} else {
		res.Unchanged++
	}
	return nil
}

// OpenInput opens a file for reading, decompressing it if its name ends in
// .gz. The name "-" is standard input.
func OpenInput(name string) (io.ReadCloser, error) { return OpenInputWith(name, nil) }

// OpenInputWith is OpenInput with wrap (when set) around the raw bytes of
// the file, before any decompression: to count what is read, say.
func OpenInputWith(name string, wrap func(io.Reader) io.Reader) (io.ReadCloser, error) {
	var f *os.File
	if name == "-" {
		f = os.Stdin
	} else {
		var err error
		if f, err = os.Open(name); err != nil {
			return nil, err
		}
	}
	var raw io.Reader = f
	if wrap != nil {
		raw = wrap(f)
	}
	if !strings.HasSuffix(name, ".gz") {
		return struct {
			io.Reader
			io.Closer
		}{raw, f}, nil
	}
	zr, err := gzip.NewReader(bufio.NewReader(raw))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{gzipErrors{zr, name}, f}, nil
}

// gzipErrors says what a gzip stream's errors mean for the user: a stream
// that ends early is a truncated file, not a bad line.
type gzipErrors struct {
	r    io.Reader
	name string
}

func (g gzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = fmt.Errorf("%s is truncated: its gzip stream ends early (%w)", g.name, err)
	case err != nil && err != io.EOF:
		err = fmt.Errorf("%s: gzip: %w", g.name, err)
	}
	return n, err
}
