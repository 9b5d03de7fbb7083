package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/report"
)

//go:embed templates/*.html
var templateFS embed.FS

var pageFuncs = template.FuncMap{
	"short": func(h string) string { return h[:min(12, len(h))] },
	"when":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"day":   func(t time.Time) string { return t.UTC().Format("2006-01-02") },
	"value": func(v metrics.Value) string { return v.String() },
	"interval": func(iv *metrics.Interval) string {
		if iv == nil {
			return "-"
		}
		return fmt.Sprintf("[%.3f, %.3f]", iv.Lo, iv.Hi)
	},
	"recordURL":  recordURL,
	"pathEscape": url.PathEscape,
	"deref":      func(f *float64) string { return fmt.Sprintf("%.4g", *f) },
	"add": func(a int, bs ...int) int {
		for _, b := range bs {
			a += b
		}
		return a
	},
	// firstLines is the start of a reasoning, for a table cell.
	"firstLines": func(s string) string {
		if r := []rune(strings.TrimSpace(s)); len(r) > 240 {
			return string(r[:239]) + "…"
		}
		return strings.TrimSpace(s)
	},
	"last": func(as []deploy.Activation) *deploy.Activation {
		if len(as) == 0 {
			return nil
		}
		return &as[len(as)-1]
	},
}

var pageTemplates = sync.OnceValue(func() map[string]*template.Template {
	layout := template.Must(template.New("layout.html").Funcs(pageFuncs).ParseFS(templateFS, "templates/layout.html"))
	out := map[string]*template.Template{}
	for _, name := range []string{"login", "judges", "judge", "diff", "verdicts", "review", "agreement", "message", "runs", "run", "record", "program"} {
		out[name] = template.Must(template.Must(layout.Clone()).ParseFS(templateFS, "templates/"+name+".html"))
	}
	return out
})

// page is what every page template sees.
type page struct {
	Title                string
	Token                *deploy.Token
	CSRF                 string
	CanBrowse, CanReview bool
	// CanAdmin sees the run pages; Viewer marks 'gavel view' (no token).
	CanAdmin, Viewer bool
	Simulated        bool
	Data             any
}

// sessionCookie holds a logged-in browser's token (HttpOnly, SameSite
// Strict, limited to /ui).
const sessionCookie = "gavel_token"

// csrfToken is the form token of a session: derived from the stored hash
// of its API token, which only the store knows.
func csrfToken(t *deploy.Token) string {
	h := sha256.Sum256([]byte("gavel csrf\x00" + t.Hash))
	return hex.EncodeToString(h[:16])
}

// pageRoute is one page: who may see it (review: reviewers; browse: the
// other scopes, since reviewers must stay blind to verdicts and outcomes;
// both: everyone).
type pageRoute struct {
	pattern string
	access  string
	h       func(w http.ResponseWriter, r *http.Request, p *page) error
}

func (s *Server) pages() {
	csrf := http.NewCrossOriginProtection()
	routes := []pageRoute{
		{"GET /ui/{$}", "browse", s.judgesPage},
		{"GET /ui/judges/{name}", "browse", s.judgePage},
		{"GET /ui/judges/{name}/diff", "browse", s.diffPage},
		{"GET /ui/verdicts", "browse", s.verdictsPage},
		{"GET /ui/review", "review", s.reviewPage},
		{"POST /ui/review/{change}", "review", s.submitReview},
		{"GET /ui/agreement", "both", s.agreementPage},
		{"POST /ui/logout", "both", s.logout},
	}
	routes = append(routes, s.runRoutes()...)
	for _, rt := range routes {
		s.mux.Handle(rt.pattern, s.instrument(rt.pattern, csrf.Handler(s.page(rt))))
	}
	s.mux.Handle("GET /ui/login", s.instrument("GET /ui/login", http.HandlerFunc(s.loginPage)))
	s.mux.Handle("POST /ui/login", s.instrument("POST /ui/login", csrf.Handler(http.HandlerFunc(s.login))))
	s.mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusSeeOther))
}

func (s *Server) render(w http.ResponseWriter, status int, name string, p *page) {
	var buf bytes.Buffer
	if err := pageTemplates()[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		s.cfg.Log.Error("render page", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (s *Server) page(rt pageRoute) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := s.session(r)
		if err != nil {
			http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		p := &page{Token: t, CSRF: csrfToken(t), Simulated: s.cfg.Simulated,
			CanReview: t.Allows(deploy.ScopeReview), CanBrowse: t.Scope != deploy.ScopeReview, CanAdmin: t.Allows(deploy.ScopeAdmin)}
		allowed := rt.access == "both" || rt.access == "review" && p.CanReview || rt.access == "browse" && p.CanBrowse || rt.access == "admin" && p.CanAdmin
		if !allowed {
			p.Title = "Not for this token"
			p.Data = fmt.Sprintf("deploy.Token %s has scope %s, which cannot see this page.", t.ID, t.Scope)
			if t.Scope == deploy.ScopeReview {
				p.Data = fmt.Sprintf("deploy.Token %s is a reviewer's: reviewers stay blind to verdicts and outcomes, so this page is not for it.", t.ID)
			}
			s.render(w, http.StatusForbidden, "message", p)
			return
		}
		if d := s.limits.wait(t.ID); d > 0 {
			w.Header().Set("Retry-After", fmt.Sprint(retryAfter(d)))
			http.Error(w, "rate limit reached: retry in a moment", http.StatusTooManyRequests)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.BodyLimit)
			if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(p.CSRF)) != 1 {
				http.Error(w, "the form's CSRF token is missing or wrong: reload the page", http.StatusForbidden)
				return
			}
		}
		if err := rt.h(w, r, p); err != nil {
			s.pageError(w, rt.pattern, err)
		}
	})
}

// pageError answers a page's error: an application error in its words,
// anything else as an internal error with an id the log keeps.
func (s *Server) pageError(w http.ResponseWriter, pattern string, err error) {
	ae := clientError(err)
	if ae == nil {
		ae = internalError(s.cfg.Log, pattern, err)
	}
	http.Error(w, ae.Msg, ae.Status)
}

// session is the token of a logged-in browser.
func (s *Server) session(r *http.Request) (*deploy.Token, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, err
	}
	return deploy.Authenticate(r.Context(), s.cfg.Store, c.Value)
}

type loginData struct{ Error, Next string }

func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/ui/"
	}
	return next
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, http.StatusOK, "login", &page{Title: "Log in", Data: loginData{Next: safeNext(r.URL.Query().Get("next"))}})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	secret := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	t, err := deploy.Authenticate(r.Context(), s.cfg.Store, secret)
	if err != nil {
		if clientError(err) == nil {
			err = internalError(s.cfg.Log, "POST /ui/login", err)
		}
		s.render(w, http.StatusUnauthorized, "login", &page{Title: "Log in", Data: loginData{Error: err.Error(), Next: next}})
		return
	}
	if t.Scope == deploy.ScopeReview && !strings.HasPrefix(next, "/ui/review") && !strings.HasPrefix(next, "/ui/agreement") {
		next = "/ui/review"
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: secret, Path: "/ui", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: 12 * 3600})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ *page) error {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/ui", HttpOnly: true, MaxAge: -1, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
	return nil
}

func (s *Server) judgesPage(w http.ResponseWriter, r *http.Request, p *page) error {
	names, err := deploy.Judges(r.Context(), s.cfg.Store)
	if err != nil {
		return err
	}
	var infos []*deploy.JudgeInfo
	for _, n := range names {
		info, err := s.info(r.Context(), n, false)
		if err != nil {
			return err
		}
		infos = append(infos, info)
	}
	p.Title, p.Data = "Judges", infos
	s.render(w, http.StatusOK, "judges", p)
	return nil
}

type judgeData struct {
	Info  *deploy.JudgeInfo
	Drift *deploy.DriftReport
	Chart template.HTML
}

func (s *Server) judgePage(w http.ResponseWriter, r *http.Request, p *page) error {
	ctx := r.Context()
	name := r.PathValue("name")
	info, err := s.info(ctx, name, false)
	if err != nil {
		return err
	}
	d := judgeData{Info: info}
	if info.Active != "" {
		by := r.URL.Query().Get("by")
		if by != "month" {
			by = "week"
		}
		err = s.expensive(ctx, func() (err error) {
			d.Drift, err = s.live.Drift(ctx, s.cfg.Store, name, s.cfg.Model, by, s.boot())
			return err
		})
		if err != nil {
			return err
		}
		d.Chart = driftChart(d.Drift)
	}
	p.Title, p.Data = "Judge "+name, d
	s.render(w, http.StatusOK, "judge", p)
	return nil
}

// driftChart draws each window's pi with its interval, and the interval
// measured at promotion as a band of two lines.
func driftChart(rep *deploy.DriftReport) template.HTML {
	if len(rep.Windows) == 0 {
		return ""
	}
	if len(rep.Windows) == 1 {
		// One window is no line: its pi with its interval, beside the
		// promotion's.
		rows := []report.Interval{intervalRow(rep.By+" of "+rep.Windows[0].Start.Format("2006-01-02"), rep.Windows[0].Pi)}
		if rep.Baseline != nil {
			rows = append(rows, intervalRow("at promotion (test part)", *rep.Baseline))
		}
		return report.IntervalChart(fmt.Sprintf("Scott's pi of %.12s: one %s so far", rep.Version, rep.By), rows, -1, 1)
	}
	pi := report.Series{Name: "Scott's pi", Color: "#1f77b4"}
	lo := report.Series{Name: "interval low", Color: "#9ecae1"}
	hi := report.Series{Name: "interval high", Color: "#9ecae1"}
	ymin, ymax := 0.0, 1.0
	for i, w := range rep.Windows {
		x := float64(i + 1)
		y := math.NaN()
		if w.Pi.Value.Defined() {
			y = w.Pi.Value.V
		}
		pi.Points = append(pi.Points, report.Point{X: x, Y: y})
		if w.Pi.CI != nil {
			lo.Points = append(lo.Points, report.Point{X: x, Y: w.Pi.CI.Lo})
			hi.Points = append(hi.Points, report.Point{X: x, Y: w.Pi.CI.Hi})
			ymin, ymax = math.Min(ymin, w.Pi.CI.Lo), math.Max(ymax, w.Pi.CI.Hi)
		}
	}
	series := []report.Series{pi, lo, hi}
	if b := rep.Baseline; b != nil && b.CI != nil {
		n := float64(len(rep.Windows))
		series = append(series, report.Series{Name: "promotion's interval, low", Color: "#d62728",
			Points: []report.Point{{X: 1, Y: b.CI.Lo}, {X: n, Y: b.CI.Lo}}})
		ymin = math.Min(ymin, b.CI.Lo)
	}
	return report.LineChart(fmt.Sprintf("Scott's pi of %.12s by %s (window 1 = %s)", rep.Version, rep.By,
		rep.Windows[0].Start.Format("2006-01-02")), rep.By, series, math.Max(-1, ymin), math.Min(1, ymax))
}

type diffData struct{ A, B, Diff string }

// promptText is a version's prompt as a reader compares it.
func promptText(s *judge.Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# system\n%s\n# user\n%s\n", s.System, s.User)
	for _, c := range s.Checks {
		fmt.Fprintf(&b, "# check %s\n%s\n", c.Name, c.Question)
	}
	if s.Threshold > 0 {
		fmt.Fprintf(&b, "# threshold %d\n", s.Threshold)
	}
	return b.String()
}

func (s *Server) diffPage(w http.ResponseWriter, r *http.Request, p *page) error {
	ctx := r.Context()
	var specs [2]*judge.PromptVersion
	for i, k := range []string{"a", "b"} {
		pv, err := s.cfg.Store.Prompt(ctx, r.URL.Query().Get(k))
		if err != nil {
			return errorf(http.StatusNotFound, "%s: %v", k, err)
		}
		if pv.Judge != r.PathValue("name") {
			return errorf(http.StatusNotFound, "version %.12s is not a version of %s", pv.Hash, r.PathValue("name"))
		}
		specs[i] = pv
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(promptText(specs[0].Spec)),
		B: difflib.SplitLines(promptText(specs[1].Spec)), FromFile: specs[0].Hash[:12], ToFile: specs[1].Hash[:12], Context: 3})
	if err != nil {
		return err
	}
	p.Title = "Judge " + r.PathValue("name") + ": what changed"
	p.Data = diffData{A: specs[0].Hash, B: specs[1].Hash, Diff: diff}
	s.render(w, http.StatusOK, "diff", p)
	return nil
}

type verdictRow struct {
	ChangeID, Judge, Version string
	Verdict                  judge.Outcome
	Status                   record.Status
	Label                    record.Label
	Agrees                   bool
	At                       time.Time
	// Reasoning is the judge's; URL the record's page, once the outcome
	// made the change a record.
	Reasoning, URL string
}

func (s *Server) verdictsPage(w http.ResponseWriter, r *http.Request, p *page) error {
	ctx := r.Context()
	cvs, err := s.cfg.Store.ChangeVerdicts(ctx, deploy.VerdictFilter{Judge: r.URL.Query().Get("judge"), Limit: 200})
	if err != nil {
		return err
	}
	var ids []string
	for _, cv := range cvs {
		ids = append(ids, cv.Verdict.RecordID)
	}
	outcomes := map[string]record.Outcome{}
	if len(ids) > 0 {
		err = s.cfg.Store.Records(ctx, record.Filter{IDs: ids}, func(r *record.Record) error {
			outcomes[r.ID] = r.Outcome
			return nil
		})
		if err != nil {
			return err
		}
	}
	specs := map[string]*judge.PromptVersion{}
	var rows []verdictRow
	for _, cv := range cvs {
		pv := specs[cv.Verdict.Prompt]
		if pv == nil {
			if pv, err = s.cfg.Store.Prompt(ctx, cv.Verdict.Prompt); err != nil {
				return err
			}
			specs[pv.Hash] = pv
		}
		o := outcomes[cv.Verdict.RecordID]
		v := cv.Verdict.Decide(pv.Spec.Kind, pv.Spec.PassThreshold())
		rows = append(rows, verdictRow{ChangeID: cv.Verdict.RecordID, Judge: cv.Judge, Version: cv.Verdict.Prompt, Verdict: v,
			Status: o.Status, Label: o.Label, Agrees: string(v) == string(o.Label), At: cv.CreatedAt, Reasoning: cv.Verdict.Reasoning})
		if o.Status != "" && p.CanAdmin {
			rows[len(rows)-1].URL = recordURL(cv.Verdict.RecordID, "")
		}
	}
	p.Title, p.Data = "Recent verdicts", rows
	s.render(w, http.StatusOK, "verdicts", p)
	return nil
}

type reviewData struct {
	Change     *deploy.Change
	Done, Left int
}

// reviewOrder is a reviewer's sequence of changes to review: a sample of
// the changes whose outcome is known with as many of each outcome (the
// first of each class in the reviewer's random order), in that random
// order, which depends only on the reviewer and the change, never on the
// outcome: a reviewer's position in it says nothing of the next outcome.
func reviewOrder(reviewer string, byLabel map[record.Label][]string) []string {
	key := func(id string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(reviewer + "\x00" + id))
		return h.Sum64()
	}
	byKey := func(a, b string) int {
		if c := cmp.Compare(key(a), key(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	}
	n := min(len(byLabel[record.Pass]), len(byLabel[record.Fail]))
	var sample []string
	for _, l := range []record.Label{record.Pass, record.Fail} {
		ids := slices.Clone(byLabel[l])
		slices.SortFunc(ids, byKey)
		sample = append(sample, ids[:n]...)
	}
	slices.SortFunc(sample, byKey)
	return sample
}

// nextForReview picks the next change of a reviewer's order
// (reviewOrder) that the reviewer has not reviewed.
func (s *Server) nextForReview(ctx context.Context, reviewer string) (*deploy.Change, int, int, error) {
	jrs, err := s.cfg.Store.JudgedRecords(ctx, deploy.VerdictFilter{})
	if err != nil {
		return nil, 0, 0, err
	}
	reviews, err := s.cfg.Store.Reviews(ctx)
	if err != nil {
		return nil, 0, 0, err
	}
	mine := map[string]bool{}
	for _, r := range reviews {
		if r.Reviewer == reviewer {
			mine[r.ChangeID] = true
		}
	}
	seen := map[string]bool{}
	byLabel := map[record.Label][]string{}
	for _, jr := range jrs {
		r := jr.Record
		if seen[r.ID] || r.Outcome.Status == record.StatusDraft {
			continue
		}
		seen[r.ID] = true
		byLabel[r.Outcome.Label] = append(byLabel[r.Outcome.Label], r.ID)
	}
	var next string
	left := 0
	for _, id := range reviewOrder(reviewer, byLabel) {
		if mine[id] {
			continue
		}
		if left == 0 {
			next = id
		}
		left++
	}
	if next == "" {
		return nil, len(mine), 0, nil
	}
	c, err := s.cfg.Store.Change(ctx, next)
	return c, len(mine), left, err
}

func reviewerOf(t *deploy.Token) string { return "token " + t.ID }

func (s *Server) reviewPage(w http.ResponseWriter, r *http.Request, p *page) error {
	c, done, left, err := s.nextForReview(r.Context(), reviewerOf(p.Token))
	if err != nil {
		return err
	}
	p.Title, p.Data = "Blind review", reviewData{Change: c, Done: done, Left: left}
	s.render(w, http.StatusOK, "review", p)
	return nil
}

func (s *Server) submitReview(w http.ResponseWriter, r *http.Request, p *page) error {
	id := r.PathValue("change")
	v := record.Label(r.PostFormValue("verdict"))
	if v != record.Pass && v != record.Fail {
		return errorf(http.StatusBadRequest, "choose pass or fail")
	}
	if _, err := s.cfg.Store.Change(r.Context(), id); err != nil {
		return errorf(http.StatusNotFound, "%v", err)
	}
	note := strings.TrimSpace(r.PostFormValue("note"))
	if err := s.cfg.Store.SaveReview(r.Context(), &deploy.Review{ChangeID: id, Reviewer: reviewerOf(p.Token), Verdict: v, Note: note}); err != nil {
		return err
	}
	http.Redirect(w, r, "/ui/review", http.StatusSeeOther)
	return nil
}

type agreementData struct {
	Judges []string
	Report *deploy.AgreementReport
	Chart  template.HTML
}

func (s *Server) agreementPage(w http.ResponseWriter, r *http.Request, p *page) error {
	names, err := deploy.Judges(r.Context(), s.cfg.Store)
	if err != nil {
		return err
	}
	name := r.URL.Query().Get("judge")
	if name == "" {
		name = "passfail"
	}
	var rep *deploy.AgreementReport
	err = s.expensive(r.Context(), func() (err error) {
		rep, err = deploy.Agreement(r.Context(), s.cfg.Store, name, s.cfg.Model, s.boot())
		return err
	})
	if err != nil {
		return err
	}
	var rows []report.Interval
	for _, pr := range rep.Pairs {
		row := report.Interval{Name: pr.Raters[0] + " vs " + pr.Raters[1], Defined: pr.Pi.Value.Defined() && pr.Pi.CI != nil}
		if row.Defined {
			row.Value, row.Lo, row.Hi = pr.Pi.Value.V, pr.Pi.CI.Lo, pr.Pi.CI.Hi
		}
		rows = append(rows, row)
	}
	d := agreementData{Judges: names, Report: rep}
	if len(rows) > 0 {
		d.Chart = report.IntervalChart("Scott's pi between raters, with 95% intervals", rows, -1, 1)
	}
	p.Title, p.Data = "Agreement: human review, judge and outcomes", d
	s.render(w, http.StatusOK, "agreement", p)
	return nil
}

// intervalRow is a figure as a row of an interval chart.
func intervalRow(name string, fg metrics.Figure) report.Interval {
	row := report.Interval{Name: name, Value: fg.Value.V, Defined: fg.Value.Defined()}
	row.Lo, row.Hi = row.Value, row.Value
	if fg.CI != nil && fg.CI.Defined() {
		row.Lo, row.Hi = fg.CI.Lo, fg.CI.Hi
	}
	return row
}
