package run

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/record"
)

// Row is one row of a CSV or JSONL table: its line and its cells by
// column name (a missing or null cell is absent).
type Row struct {
	Line  int
	Cells map[string]string
}

// ReadTable reads the named columns of a CSV file (with a header line) or a
// JSONL file (one object per line), by extension (.csv, else JSONL). Every
// named column must exist in a CSV header; in JSONL a missing field is an
// empty cell. Cells are text: JSON numbers and booleans as written.
func ReadTable(name string, columns []string) ([]Row, error) {
	rc, err := record.OpenInput(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	base := strings.TrimSuffix(strings.ToLower(name), ".gz")
	if strings.HasSuffix(base, ".csv") {
		return readCSV(name, rc, columns)
	}
	return readJSONL(name, rc, columns)
}

func readCSV(name string, r io.Reader, columns []string) ([]Row, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: file is empty", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	pos := map[string]int{}
	for i, h := range header {
		pos[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, c := range columns {
		if _, ok := pos[c]; !ok {
			return nil, fmt.Errorf("%s:1: no column %q in the header (it has %s)", name, c, strings.Join(header, ", "))
		}
	}
	var rows []Row
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		row := Row{Line: line, Cells: map[string]string{}}
		for _, c := range columns {
			if v := strings.TrimSpace(rec[pos[c]]); v != "" {
				row.Cells[c] = v
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows after the header", name)
	}
	return rows, nil
}

func readJSONL(name string, r io.Reader, columns []string) ([]Row, error) {
	lr := record.NewLineReader(r, 0)
	var rows []Row
	for {
		line, n, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			return nil, fmt.Errorf("%s:%d: invalid JSON: %v", name, n, err)
		}
		row := Row{Line: n, Cells: map[string]string{}}
		for _, c := range columns {
			raw, ok := obj[c]
			if !ok || string(raw) == "null" {
				continue
			}
			var s string
			if json.Unmarshal(raw, &s) != nil {
				var num json.Number
				var b bool
				switch {
				case json.Unmarshal(raw, &num) == nil:
					s = num.String()
				case json.Unmarshal(raw, &b) == nil:
					s = strconv.FormatBool(b)
				default:
					return nil, fmt.Errorf("%s:%d: field %s: want a string, number or boolean", name, n, c)
				}
			}
			if s = strings.TrimSpace(s); s != "" {
				row.Cells[c] = s
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: file is empty", name)
	}
	return rows, nil
}
