package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/bench"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/refine"
	"github.com/gavelhq/gavel/report"
	"github.com/gavelhq/gavel/runlog"
	"github.com/gavelhq/gavel/teacher"
)

// The run pages: the history of runs, a run with its figures and its
// records (filtered, searched, a page of 100 at a time), and a record with
// everything the judge and the teacher saw and said. 'gavel serve' shows
// them to admin tokens; 'gavel view' (Viewer) to anyone on the loopback.

// pageSize is the records a run page shows at once.
const pageSize = 100

// runRoutes are the run pages.
func (s *Server) runRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/runs", "admin", s.runsPage},
		{"GET /ui/runs/{id}", "admin", s.runPage},
		{"GET /ui/record", "admin", s.recordPage},
		{"GET /ui/program", "admin", s.programPage},
	}
}

// NewViewer is the read-only viewer of a store: the run pages and nothing
// else, with no token, answering only requests that come over the
// loopback for a loopback host name (so a web page elsewhere cannot reach
// it through DNS rebinding).
func NewViewer(st Store, cfg Config) (*Server, error) {
	cfg.Store = st
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	viewer := &page{CanBrowse: true, CanAdmin: true, Viewer: true}
	for _, rt := range s.runRoutes() {
		h := rt.h
		s.mux.Handle(rt.pattern, s.instrument(rt.pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !loopback(r) {
				http.Error(w, "the viewer answers only on the loopback, for localhost or 127.0.0.1", http.StatusForbidden)
				return
			}
			p := *viewer
			if err := h(w, r, &p); err != nil {
				s.pageError(w, rt.pattern, err)
			}
		})))
	}
	s.mux.Handle("GET /{$}", http.RedirectHandler("/ui/runs", http.StatusSeeOther))
	return s, nil
}

// loopback says whether a request came over the loopback for a loopback
// host.
func loopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		return false
	}
	name := r.Host
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		name = h
	}
	name = strings.Trim(name, "[]")
	return name == "localhost" || net.ParseIP(name) != nil && net.ParseIP(name).IsLoopback()
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request, p *page) error {
	q := r.URL.Query()
	runs, err := s.cfg.Store.Runs(r.Context(), runlog.RunFilter{Command: q.Get("command"), Judge: q.Get("judge"), Limit: 200})
	if err != nil {
		return err
	}
	p.Title, p.Data = "Runs", runs
	s.render(w, http.StatusOK, "runs", p)
	return nil
}

// runView is a run page's data.
type runView struct {
	Run    *runlog.Run
	Role   string
	Which  runlog.Which
	Search string
	Sort   string
	// SortBy are the table's column headings, as links that sort by them.
	SortBy []link
	// Chart is a calibration's pi by iteration.
	Chart template.HTML
	// Records are the page's; Total how many the selection holds, From
	// the first one's number.
	Records               []runlog.Record
	Total, From, PageSize int
	Prev, Next            string
	// Links are the selections and roles, as URLs.
	Selections []link
	Roles      []link
	// Versions are a calibration's, with their figures (from its result).
	Versions []calibrationVersion
	// Scores is a benchmark run's known score (rows) by predicted score
	// (columns, rounded), each cell's programs linked.
	Scores [][]scoreCell
}

// scoreCell is one cell of a benchmark's confusion by score.
type scoreCell struct {
	Programs []link
	Diagonal bool
}

type link struct {
	Name, URL string
	On        bool
}

// calibrationVersion is one version of a calibration: its figures, the
// diff from its parent, and its edits with the records they came from.
type calibrationVersion struct {
	*refine.Version
	Selected bool
	Diff     string
	Edits    []editView
}

type editView struct {
	refine.Proposal
	Sources []sourceView
}

// sourceView is a disagreement an edit came from, with the teacher's
// justification of its label.
type sourceView struct {
	ID, URL, Justification string
}

// runURL is a run page's address with a selection.
func runURL(id, role string, which runlog.Which, search string, offset int, sort ...string) string {
	v := url.Values{}
	if len(sort) > 0 && sort[0] != "" {
		v.Set("sort", sort[0])
	}
	if role != "" {
		v.Set("role", role)
	}
	if which != runlog.All {
		v.Set("which", string(which))
	}
	if search != "" {
		v.Set("q", search)
	}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	u := "/ui/runs/" + url.PathEscape(id)
	if len(v) > 0 {
		u += "?" + v.Encode()
	}
	return u
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request, p *page) error {
	ctx := r.Context()
	run, err := s.cfg.Store.Run(ctx, r.PathValue("id"))
	if err != nil {
		return notFoundOr(err)
	}
	q := r.URL.Query()
	v := &runView{Run: run, Role: q.Get("role"), Which: runlog.Which(q.Get("which")), Search: q.Get("q"), Sort: q.Get("sort")}
	if v.Role == "" && len(run.Roles) > 0 {
		v.Role = run.Roles[0]
	}
	offset, _ := strconv.Atoi(q.Get("offset"))
	offset = max(0, offset)
	recs, total, err := s.cfg.Store.RunRecords(ctx, run.ID, runlog.Filter{Which: v.Which, Role: v.Role, Search: v.Search, Sort: v.Sort, Offset: offset, Limit: pageSize})
	if err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	v.Records, v.Total, v.From, v.PageSize = recs, total, offset+1, pageSize
	if offset > 0 {
		v.Prev = runURL(run.ID, v.Role, v.Which, v.Search, max(0, offset-pageSize), v.Sort)
	}
	if offset+pageSize < total {
		v.Next = runURL(run.ID, v.Role, v.Which, v.Search, offset+pageSize, v.Sort)
	}
	for _, col := range []string{"id", "outcome", "verdict"} {
		v.SortBy = append(v.SortBy, link{col, runURL(run.ID, v.Role, v.Which, v.Search, 0, col), col == v.Sort})
	}
	for _, sel := range []struct {
		name  string
		which runlog.Which
	}{{"all", runlog.All}, {"disagreements", runlog.Disagree}, {"false passes", runlog.FalsePass}, {"false fails", runlog.FalseFail}, {"agreements", runlog.Agree}} {
		v.Selections = append(v.Selections, link{sel.name, runURL(run.ID, v.Role, sel.which, v.Search, 0), sel.which == v.Which})
	}
	for _, role := range run.Roles {
		v.Roles = append(v.Roles, link{role, runURL(run.ID, role, v.Which, v.Search, 0), role == v.Role})
	}
	if run.Command == "bench run" {
		if v.Scores, err = s.scoreCells(r, run.ID, v.Role); err != nil {
			return err
		}
	}
	if len(run.Detail) > 0 && run.Command == "calibrate" {
		if v.Versions, err = s.calibrationVersions(r, run); err != nil {
			return err
		}
		train, val := report.Series{Name: "train pi", Color: "#1f77b4"}, report.Series{Name: "validation pi", Color: "#d62728"}
		for _, cv := range v.Versions {
			pt := func(x metrics.Value) report.Point {
				if !x.Defined() {
					return report.Point{X: float64(cv.Iteration), Y: math.NaN()}
				}
				return report.Point{X: float64(cv.Iteration), Y: x.V}
			}
			train.Points, val.Points = append(train.Points, pt(cv.TrainPi)), append(val.Points, pt(cv.ValPi))
		}
		v.Chart = report.LineChart("Scott's pi by iteration", "iteration (0 is the original prompt)", []report.Series{train, val}, -0.25, 1)
	}
	p.Title, p.Data, p.Simulated = fmt.Sprintf("Run %s: gavel %s", run.ID, run.Command), v, p.Simulated || run.Simulated
	s.render(w, http.StatusOK, "run", p)
	return nil
}

// recordView is a record page's data.
type recordView struct {
	Record    *record.Record
	Outcomes  []record.OutcomeVersion
	Run       *runlog.Run
	InRun     []runlog.Record
	Verdicts  []judge.Verdict
	Decisions []teacher.Decision
	// Diff is the candidate as lines, each with its kind (add, del, hunk,
	// or "").
	Diff []diffLine
	// Folded says the candidate is long and shown folded.
	Folded bool
}

type diffLine struct{ Kind, Text string }

// diffLines colours a unified diff (any other text stays plain).
func diffLines(s string) []diffLine {
	var out []diffLine
	for _, l := range strings.Split(s, "\n") {
		kind := ""
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "diff "):
			kind = "file"
		case strings.HasPrefix(l, "+"):
			kind = "add"
		case strings.HasPrefix(l, "-"):
			kind = "del"
		case strings.HasPrefix(l, "@@"):
			kind = "hunk"
		}
		out = append(out, diffLine{kind, l})
	}
	return out
}

func (s *Server) recordPage(w http.ResponseWriter, r *http.Request, p *page) error {
	ctx := r.Context()
	id := r.URL.Query().Get("id")
	v := &recordView{}
	err := s.cfg.Store.Records(ctx, record.Filter{IDs: []string{id}}, func(rec *record.Record) error {
		v.Record = rec
		return nil
	})
	if err != nil {
		return err
	}
	if v.Record == nil {
		return errorf(http.StatusNotFound, "no record %q", id)
	}
	if v.Outcomes, err = s.cfg.Store.Outcomes(ctx, id); err != nil {
		return err
	}
	if v.Verdicts, err = s.cfg.Store.RecordVerdicts(ctx, id); err != nil {
		return err
	}
	if v.Decisions, err = s.cfg.Store.RecordDecisions(ctx, id); err != nil {
		return err
	}
	if runID := r.URL.Query().Get("run"); runID != "" {
		if v.Run, err = s.cfg.Store.Run(ctx, runID); err != nil {
			return notFoundOr(err)
		}
		if v.InRun, _, err = s.cfg.Store.RunRecords(ctx, v.Run.ID, runlog.Filter{Search: id}); err != nil {
			return err
		}
		kept := v.InRun[:0]
		for _, rr := range v.InRun {
			if rr.ID == id {
				kept = append(kept, rr)
			}
		}
		v.InRun = kept
	}
	v.Diff = diffLines(v.Record.Candidate)
	v.Folded = len(v.Diff) > 400
	p.Title, p.Data = "Record "+id, v
	s.render(w, http.StatusOK, "record", p)
	return nil
}

// calibrationVersions are a calibration run's versions with their diffs
// and the provenance of their edits.
func (s *Server) calibrationVersions(r *http.Request, run *runlog.Run) ([]calibrationVersion, error) {
	ctx := r.Context()
	var res refine.Result
	if err := json.Unmarshal(run.Detail, &res); err != nil {
		return nil, fmt.Errorf("run %s: its calibration: %w", run.ID, err)
	}
	justification := func(id string) string {
		recs, _, err := s.cfg.Store.RunRecords(ctx, run.ID, runlog.Filter{Role: "train: teacher", Search: id})
		if err == nil {
			for _, rec := range recs {
				if rec.ID == id && rec.Teacher != nil {
					return rec.Teacher.Justification
				}
			}
		}
		return ""
	}
	var out []calibrationVersion
	var parent *judge.PromptVersion
	for i, ver := range res.Versions {
		cv := calibrationVersion{Version: ver, Selected: i == res.Selected}
		pv, err := s.cfg.Store.Prompt(ctx, ver.Hash)
		if err != nil {
			return nil, err
		}
		if parent != nil {
			cv.Diff = refine.Diff(parent.Spec, pv.Spec)
		}
		parent = pv
		for _, e := range ver.Accepted {
			ev := editView{Proposal: e}
			for _, src := range e.Sources {
				ev.Sources = append(ev.Sources, sourceView{ID: src, URL: recordURL(src, run.ID), Justification: justification(src)})
			}
			cv.Edits = append(cv.Edits, ev)
		}
		out = append(out, cv)
	}
	return out, nil
}

// recordURL is a record page's address (ids may hold #, / and ?).
func recordURL(id, run string) string {
	v := url.Values{"id": {id}}
	if run != "" {
		v.Set("run", run)
	}
	return "/ui/record?" + v.Encode()
}

// notFoundOr is a 404 for a run that is not in the store.
func notFoundOr(err error) error {
	if errors.Is(err, runlog.ErrNotFound) {
		return errorf(http.StatusNotFound, "%v", err)
	}
	return err
}

// ListenLoopback listens on addr, which must be a loopback address
// (127.0.0.1:PORT, [::1]:PORT or localhost:PORT; port 0 for any free one).
func ListenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: want HOST:PORT", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("address %q is not on the loopback: the viewer has no tokens, so it answers only this machine", addr)
	}
	return net.Listen("tcp", addr)
}

// scoreCells is a benchmark run's confusion by score for one role (a
// judge or metric), each program linked to its page.
func (s *Server) scoreCells(r *http.Request, runID, role string) ([][]scoreCell, error) {
	recs, _, err := s.cfg.Store.RunRecords(r.Context(), runID, runlog.Filter{Role: role})
	if err != nil {
		return nil, err
	}
	cells := make([][]scoreCell, 6)
	for k := range cells {
		cells[k] = make([]scoreCell, 7) // the last column: no readable prediction
		for p := range cells[k] {
			cells[k][p].Diagonal = k == p
		}
	}
	for _, rec := range recs {
		if rec.Known == nil || *rec.Known < 0 || *rec.Known > 5 {
			continue
		}
		col := 6
		if rec.Score != nil {
			col = int(math.Round(math.Max(0, math.Min(5, *rec.Score))))
		}
		c := &cells[*rec.Known][col]
		c.Programs = append(c.Programs, link{Name: rec.ID, URL: programURL(runID, rec.ID)})
	}
	return cells, nil
}

func programURL(run, id string) string {
	return "/ui/program?" + url.Values{"run": {run}, "id": {id}}.Encode()
}

// programView is a benchmark program's page.
type programView struct {
	Run     *runlog.Run
	Program *bench.Program
	Roles   []runlog.Record
}

func (s *Server) programPage(w http.ResponseWriter, r *http.Request, p *page) error {
	ctx := r.Context()
	run, err := s.cfg.Store.Run(ctx, r.URL.Query().Get("run"))
	if err != nil {
		return notFoundOr(err)
	}
	id := r.URL.Query().Get("id")
	recs, _, err := s.cfg.Store.RunRecords(ctx, run.ID, runlog.Filter{Search: id})
	if err != nil {
		return err
	}
	v := &programView{Run: run}
	for _, rec := range recs {
		if rec.ID != id || len(rec.Program) == 0 {
			continue
		}
		if v.Program == nil {
			v.Program = &bench.Program{}
			if err := json.Unmarshal(rec.Program, v.Program); err != nil {
				return err
			}
		}
		v.Roles = append(v.Roles, rec)
	}
	if v.Program == nil {
		return errorf(http.StatusNotFound, "run %s has no program %q", run.ID, id)
	}
	p.Title, p.Data, p.Simulated = "Program "+id, v, p.Simulated || run.Simulated
	s.render(w, http.StatusOK, "program", p)
	return nil
}
