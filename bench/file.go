package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// ReadPrograms reads a benchmark file (JSONL, one Program a line, as
// 'gavel bench build' writes it). Its errors name the file and line.
func ReadPrograms(file string) ([]*Program, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*Program
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var p Program
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, n, err)
		}
		if p.ID == "" || p.Score < 0 || p.Score > 5 || p.Code == "" {
			return nil, fmt.Errorf("%s:%d: a program needs id, code and a score from 0 to 5", file, n)
		}
		out = append(out, &p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", file, n+1, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no programs", file)
	}
	return out, nil
}
