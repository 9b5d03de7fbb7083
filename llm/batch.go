package llm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
)

// BatchFormat is a provider's batch file format: pending requests go out as
// its request lines, answers come back as its result lines. The custom_id of
// both is the request's cache key.
type BatchFormat interface {
	// Name is the --format name ("openai", "anthropic").
	Name() string
	// EncodeRequest writes one request line (without the newline). name is
	// the model name without the provider prefix.
	EncodeRequest(key, name string, req *Request) ([]byte, error)
	// DecodeResult reads one result line. It returns ErrNotThisFormat when
	// the line is of another format; Failure is set for a result that
	// carries an error instead of an answer.
	DecodeResult(line []byte) (*BatchResult, error)
}

// ErrNotThisFormat is returned by BatchFormat.DecodeResult for a line it
// does not recognise.
var ErrNotThisFormat = errors.New("not a result line of this format")

// BatchResult is one line of a batch result file.
type BatchResult struct {
	Key      string
	Response *Response
	// Failure says why the batch could not answer (an error status, an
	// errored, canceled or expired result).
	Failure string
}

// MaxBatchLine bounds one line of a batch file.
const MaxBatchLine = 64 << 20

// BatchExport counts what ExportPending wrote.
type BatchExport struct {
	Format   string `json:"format"`
	Exported int    `json:"exported"`
	// Other counts pending requests of other providers, left for another
	// format.
	Other int `json:"other_providers"`
}

// ExportPending writes every pending request of the format's provider as a
// batch request line.
func ExportPending(ctx context.Context, c Cache, reg *Registry, format string, w io.Writer) (*BatchExport, error) {
	var bf BatchFormat
	var provider string
	for _, n := range reg.Names() {
		if info := reg.infos[n]; info.Batch != nil && info.Batch.Name() == format {
			bf, provider = info.Batch, n
		}
	}
	if bf == nil {
		return nil, fmt.Errorf("unknown batch format %q (want openai or anthropic)", format)
	}
	res := &BatchExport{Format: format}
	bw := bufio.NewWriter(w)
	err := c.Pending(ctx, func(e *Entry) error {
		if e.Provider != provider {
			res.Other++
			return nil
		}
		_, name, err := ParseModel(e.Model)
		if err != nil {
			return err
		}
		line, err := bf.EncodeRequest(e.Key, name, e.Request)
		if err != nil {
			return fmt.Errorf("request %.12s: %w", e.Key, err)
		}
		res.Exported++
		bw.Write(line)
		return bw.WriteByte('\n')
	})
	if err != nil {
		return nil, err
	}
	return res, bw.Flush()
}

// BatchImport counts what ImportResults did.
type BatchImport struct {
	Lines    int `json:"lines"`
	Imported int `json:"imported"`
	// Invalid answers were imported, marked invalid: they failed their
	// schema (a batch cannot ask again).
	Invalid int `json:"invalid"`
	// Failed results carried an error; their requests stay pending.
	Failed int `json:"failed"`
	// Unknown ids match no request in this store.
	Unknown int `json:"unknown"`
	// Already answered requests were left as they were.
	Already  int      `json:"already_answered"`
	Failures []string `json:"failures,omitempty"`
}

// LineError locates an error in a batch file.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ImportResults reads a batch result file (in any registered format, told
// apart line by line) and caches each answer whose custom_id is a pending
// request, after checking it against the request's schema and pricing it at
// the batch discount. The file is read twice: a malformed line anywhere
// stops the import before anything is stored.
func ImportResults(ctx context.Context, c Cache, reg *Registry, prices *PriceTable, name string, open func() (io.ReadCloser, error)) (*BatchImport, error) {
	var formats []BatchFormat
	for _, n := range reg.Names() {
		if b := reg.infos[n].Batch; b != nil {
			formats = append(formats, b)
		}
	}
	if prices == nil {
		prices = DefaultPrices()
	}
	res := &BatchImport{}
	for pass := range 2 {
		err := eachLine(name, open, func(n int, line []byte) error {
			r, err := decodeAny(formats, line)
			if err != nil {
				return &LineError{File: name, Line: n, Err: err}
			}
			if pass == 0 {
				res.Lines++
				return nil
			}
			return applyResult(ctx, c, prices, r, res)
		})
		if err != nil {
			return nil, err
		}
	}
	if res.Lines == 0 {
		return nil, fmt.Errorf("%s: file is empty", name)
	}
	return res, nil
}

func eachLine(name string, open func() (io.ReadCloser, error), fn func(n int, line []byte) error) error {
	rc, err := open()
	if err != nil {
		return err
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), MaxBatchLine)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(trimSpace(line)) == 0 {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &LineError{File: name, Line: n + 1, Err: err}
	}
	return nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func decodeAny(formats []BatchFormat, line []byte) (*BatchResult, error) {
	for _, f := range formats {
		r, err := f.DecodeResult(line)
		if errors.Is(err, ErrNotThisFormat) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s batch result: %w", f.Name(), err)
		}
		if r.Key == "" {
			return nil, fmt.Errorf("%s batch result: no custom_id", f.Name())
		}
		return r, nil
	}
	return nil, errors.New("not a batch result line of any known format (OpenAI: custom_id with response or error; Anthropic: custom_id with result)")
}

func applyResult(ctx context.Context, c Cache, prices *PriceTable, r *BatchResult, res *BatchImport) error {
	e, err := c.Get(ctx, r.Key)
	if err != nil {
		return err
	}
	switch {
	case e == nil:
		res.Unknown++
		return nil
	case e.Response != nil:
		res.Already++
		return nil
	case r.Failure != "":
		res.Failed++
		if len(res.Failures) < 20 {
			res.Failures = append(res.Failures, fmt.Sprintf("%.12s: %s", r.Key, r.Failure))
		}
		return nil
	}
	resp := r.Response
	resp.Batch = true
	resp.Attempts = 1
	if s := e.Request.Schema; s != nil {
		if js, err := Validate(s.JSON, answerText(resp)); err != nil {
			resp.Invalid, resp.ParseError, resp.JSON = true, err.Error(), nil
			res.Invalid++
		} else {
			resp.JSON = js
		}
	}
	resp.Cost, resp.Priced = prices.Cost(e.Model, resp.Usage, true)
	e.Response = resp
	if err := c.Put(ctx, e); err != nil {
		return err
	}
	res.Imported++
	return nil
}
