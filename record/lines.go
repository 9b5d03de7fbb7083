package record

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// DefaultMaxLineBytes bounds one input line: a record larger than this is
// refused rather than held in memory.
const DefaultMaxLineBytes = 32 << 20

// ErrLineTooLong is wrapped by the error for a line over the size limit.
var ErrLineTooLong = errors.New("line too long")

// ErrInvalidUTF8 is wrapped by the error for a line that is not UTF-8.
var ErrInvalidUTF8 = errors.New("invalid UTF-8")

// LineReader streams a JSONL input one line at a time, holding at most one
// line (up to the size limit) in memory. Blank lines are skipped. A line
// that is too long or not valid UTF-8 is reported by Next with its line
// number, and reading can continue after it.
type LineReader struct {
	r    *bufio.Reader
	src  *stickyReader
	max  int
	line int
	buf  []byte
	// Lines is the number of non-blank lines returned so far, including
	// those reported as errors.
	Lines int
}

// NewLineReader reads from r with the given line limit (DefaultMaxLineBytes
// when max <= 0).
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = DefaultMaxLineBytes
	}
	src := &stickyReader{r: r}
	return &LineReader{r: bufio.NewReaderSize(src, 64<<10), src: src, max: max}
}

// stickyReader remembers the first error (other than the end) of the
// reader under the buffer. bufio hands out what it read before an error as
// if it were a whole line, so without this a file cut short (a truncated
// .gz) would show as a line of invalid JSON instead of as what it is.
type stickyReader struct {
	r   io.Reader
	err error
}

func (s *stickyReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// Next returns the next non-blank line without its line ending, and its
// 1-based line number. At the end of input it returns io.EOF. The returned
// slice is valid until the next call. Errors about a single line wrap
// ErrLineTooLong or ErrInvalidUTF8; any other error is from the reader.
func (lr *LineReader) Next() (line []byte, n int, err error) {
	for {
		lr.buf = lr.buf[:0]
		tooLong := false
		lr.line++
		for {
			chunk, isPrefix, err := lr.r.ReadLine()
			if err == io.EOF {
				if len(lr.buf) == 0 && !tooLong {
					return nil, lr.line, io.EOF
				}
				break
			}
			if err != nil {
				return nil, lr.line, fmt.Errorf("line %d: read: %w", lr.line, err)
			}
			if !tooLong {
				if len(lr.buf)+len(chunk) > lr.max {
					tooLong = true
					lr.buf = lr.buf[:0]
				} else {
					lr.buf = append(lr.buf, chunk...)
				}
			}
			if !isPrefix {
				break
			}
		}
		if lr.src.err != nil {
			// The input failed while this line was read: it may be cut.
			return nil, lr.line, fmt.Errorf("line %d: read: %w", lr.line, lr.src.err)
		}
		if tooLong {
			lr.Lines++
			return nil, lr.line, fmt.Errorf("%w (over %d bytes)", ErrLineTooLong, lr.max)
		}
		b := lr.buf
		if lr.line == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) // a UTF-8 byte-order mark
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		lr.Lines++
		if !utf8.Valid(b) {
			return nil, lr.line, fmt.Errorf("%w at byte %d", ErrInvalidUTF8, firstInvalid(b)+1)
		}
		return b, lr.line, nil
	}
}

func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}
