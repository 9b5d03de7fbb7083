package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// SWEBench decodes SWE-bench predictions joined with their evaluation
// results: one object per line with instance_id, model_patch and resolved
// (a boolean), and optionally model_name_or_path and problem_statement.
//
// Gold, when set, holds the SWE-bench instances by instance_id (from the
// dataset's JSONL: instance_id, patch, problem_statement): the gold patch
// becomes the record's reference and the issue text its task. Without an
// issue text the task says which instance it is, and the record is marked in
// meta (no_issue_text), since a judge that cannot read the issue is
// missing an input.
//
// Records get the ID model/instance_id (instance_id alone without a model
// name), the instance as their group, and a tests outcome: passed when
// resolved, else failed.
type SWEBench struct {
	Gold map[string]GoldInstance
}

var _ Decoder = (*SWEBench)(nil)

// GoldInstance is the part of a SWE-bench dataset row gavel uses.
type GoldInstance struct {
	InstanceID       string `json:"instance_id"`
	Patch            string `json:"patch"`
	ProblemStatement string `json:"problem_statement"`
	// BaseCommit is the repository's commit the instance starts from
	// (ingest --repo reads the touched files there).
	BaseCommit string `json:"base_commit"`
}

type sweWire struct {
	InstanceID       *string `json:"instance_id"`
	ModelPatch       *string `json:"model_patch"`
	ModelName        string  `json:"model_name_or_path"`
	Resolved         *bool   `json:"resolved"`
	ProblemStatement string  `json:"problem_statement"`
}

// Decode implements Decoder.
func (s *SWEBench) Decode(line []byte) (Record, error) {
	obj, err := decodeObject(line)
	if err != nil {
		return Record{}, err
	}
	var w sweWire
	if err := json.Unmarshal(line, &w); err != nil {
		return Record{}, jsonError(err)
	}
	switch {
	case w.InstanceID == nil || strings.TrimSpace(*w.InstanceID) == "":
		return Record{}, fieldErr("instance_id", "missing")
	case w.ModelPatch == nil && !hasKey(obj, "model_patch"):
		return Record{}, fieldErr("model_patch", "missing")
	case w.Resolved == nil:
		return Record{}, fieldErr("resolved", "missing: each prediction needs its evaluation result (true or false)")
	}
	id := *w.InstanceID
	r := Record{
		ID:    id,
		Group: id,
		Task:  w.ProblemStatement,
		Outcome: Outcome{
			Source: SourceTests,
			Status: StatusFailed,
		},
	}
	if w.ModelPatch != nil {
		r.Candidate = *w.ModelPatch
	}
	if w.ModelName != "" {
		r.ID = w.ModelName + "/" + id
	}
	if *w.Resolved {
		r.Outcome.Status = StatusPassed
	}
	if g, ok := s.Gold[id]; ok {
		r.Reference = g.Patch
		if r.Task == "" {
			r.Task = g.ProblemStatement
		}
	}
	meta := map[string]any{"instance_id": id}
	if g, ok := s.Gold[id]; ok && g.BaseCommit != "" {
		meta["base_commit"] = g.BaseCommit
	}
	if w.ModelName != "" {
		meta["model_name_or_path"] = w.ModelName
	}
	if strings.TrimSpace(r.Task) == "" {
		r.Task = "Resolve the GitHub issue of SWE-bench instance " + id + "."
		meta["no_issue_text"] = true
	}
	b, err := CompactJSON(meta)
	if err != nil {
		return Record{}, err
	}
	r.Meta = b
	return r, nil
}

func hasKey(obj map[string]json.RawMessage, k string) bool {
	_, ok := obj[k]
	return ok
}

// ReadGold reads SWE-bench instances (JSONL) into a map by instance_id. The
// name is used in errors.
func ReadGold(name string, r io.Reader) (map[string]GoldInstance, error) {
	gold := map[string]GoldInstance{}
	lr := NewLineReader(r, 0)
	for {
		line, n, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &LineError{File: name, Line: n, Err: err}
		}
		var g GoldInstance
		if err := json.Unmarshal(line, &g); err != nil {
			return nil, &LineError{File: name, Line: n, Err: jsonError(err)}
		}
		if g.InstanceID == "" {
			return nil, &LineError{File: name, Line: n, Err: fieldErr("instance_id", "missing")}
		}
		if _, dup := gold[g.InstanceID]; dup {
			return nil, &LineError{File: name, Line: n, Err: fieldErr("instance_id", "%q appears twice", g.InstanceID)}
		}
		gold[g.InstanceID] = g
	}
	if len(gold) == 0 {
		return nil, fmt.Errorf("%s: no instances", name)
	}
	return gold, nil
}
