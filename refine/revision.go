package refine

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/llm"
)

// The causes for which a revision is refused, as calibrate --json counts
// them (revisions_refused).
const (
	// CauseUnreadable: the answer was not the JSON object asked for.
	CauseUnreadable = "unreadable"
	// CauseChecks: a rubric revision renamed, reordered, added or
	// dropped checks, or left a question empty.
	CauseChecks = "checks_changed"
	// CauseTemplate: the template actions changed, or the revised
	// templates no longer parse or render.
	CauseTemplate = "template"
	// CauseAnswerFormat: the instructions about the answer's fields are
	// gone.
	CauseAnswerFormat = "answer_format"
	// CauseLostText: too little of the text no edit touches was kept.
	CauseLostText = "lost_text"
	// CauseMissingEdit: an accepted edit is not in the revision.
	CauseMissingEdit = "missing_edit"
	// CauseOverCap: the revision is over the length cap.
	CauseOverCap = "over_cap"
)

// DefaultMinKept is the share of the current prompt's sentences that no
// edit touches which a revision must keep, word for word.
const DefaultMinKept = 0.9

// RefusalError is why a revision cannot be used. It wraps ErrRejected,
// and ErrTooLong for a revision over the cap.
type RefusalError struct {
	Cause  string
	Detail string
	// Missing are the edits a revision left out (CauseMissingEdit).
	Missing []Proposal
}

func (e *RefusalError) Error() string { return e.Detail }

// Unwrap makes errors.Is see ErrRejected (and ErrTooLong).
func (e *RefusalError) Unwrap() []error {
	if e.Cause == CauseOverCap {
		return []error{ErrRejected, ErrTooLong}
	}
	return []error{ErrRejected}
}

func refuse(cause, format string, a ...any) error {
	return &RefusalError{Cause: cause, Detail: ErrRejected.Error() + ": " + fmt.Sprintf(format, a...)}
}

// Refusal is one refused revision: in which iteration, why, and what the
// applier was told.
type Refusal struct {
	Iteration int    `json:"iteration"`
	Cause     string `json:"cause"`
	Detail    string `json:"detail"`
}

// RefusalCount is how many revisions were refused for one cause.
type RefusalCount struct {
	Cause string `json:"cause"`
	Count int    `json:"count"`
}

// CountRefusals counts refusals by cause, in order of cause.
func CountRefusals(rs []Refusal) []RefusalCount {
	out := []RefusalCount{}
	for _, r := range rs {
		i := slices.IndexFunc(out, func(c RefusalCount) bool { return c.Cause == r.Cause })
		if i < 0 {
			out = append(out, RefusalCount{Cause: r.Cause})
			i = len(out) - 1
		}
		out[i].Count++
	}
	slices.SortFunc(out, func(a, b RefusalCount) int { return cmp.Compare(a.Cause, b.Cause) })
	return out
}

// ReviseOptions are the checks of a revision beyond its form.
type ReviseOptions struct {
	// Edits are the accepted edits the revision must carry.
	Edits []Proposal
	// MinKept is the share of untouched sentences to keep (0: the
	// default, DefaultMinKept; negative: no check).
	MinKept float64
	// AllowMissing lets edits be left out (a revision asked to fit the
	// length cap); Revision.Missing lists them.
	AllowMissing bool
}

// Revision is a checked revision.
type Revision struct {
	Spec *judge.Spec
	// Kept is the share of untouched sentences kept; Missing the edits
	// left out (only with AllowMissing); Conflicts what the applier says
	// it resolved.
	Kept      float64
	Missing   []Proposal
	Conflicts []string
}

// Revise reads an applier's answer into a new spec: the revision must keep
// every template action, the checks' names and order, parse, and stay
// within the length cap.
func Revise(s *judge.Spec, resp *llm.Response, maxChars int) (*judge.Spec, error) {
	r, err := CheckRevision(s, resp, maxChars, ReviseOptions{MinKept: -1})
	if err != nil {
		return nil, err
	}
	return r.Spec, nil
}

// CheckRevision reads an applier's answer into a new spec and checks it:
// its form (Revise's checks), that its templates render, that it keeps
// the answer format and opt.MinKept of the sentences no edit touches, and
// that it carries every edit: each new reason's own words present, each
// reworded or removed target gone. Any failure is a *RefusalError.
func CheckRevision(s *judge.Spec, resp *llm.Response, maxChars int, opt ReviseOptions) (*Revision, error) {
	if resp.Invalid {
		return nil, refuse(CauseUnreadable, "%s", resp.ParseError)
	}
	var a struct {
		System    string        `json:"system"`
		Checks    []judge.Check `json:"checks"`
		Conflicts []string      `json:"conflicts"`
	}
	raw := resp.JSON
	if len(raw) == 0 {
		raw = json.RawMessage(resp.Text)
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, refuse(CauseUnreadable, "%v", err)
	}
	c := *s
	c.System = strings.TrimSpace(a.System) + "\n"
	if s.Kind == judge.Rubric {
		if len(a.Checks) != len(s.Checks) {
			return nil, refuse(CauseChecks, "%d checks, want the %d named %s", len(a.Checks), len(s.Checks), checkNames(s.Checks))
		}
		for i := range a.Checks {
			if a.Checks[i].Name != s.Checks[i].Name || strings.TrimSpace(a.Checks[i].Question) == "" {
				return nil, refuse(CauseChecks, "the checks must keep their names and order (%s), each with a question", checkNames(s.Checks))
			}
		}
		c.Checks = a.Checks
	}
	if !slices.Equal(reAction.FindAllString(s.System, -1), reAction.FindAllString(c.System, -1)) {
		return nil, refuse(CauseTemplate, "the template actions between {{ and }} were changed; keep them exactly")
	}
	if n := PromptSize(&c); n > maxChars {
		return nil, refuse(CauseOverCap, "%d characters, over the cap of %d (%v)", n, maxChars, ErrTooLong)
	}
	if err := c.Validate(); err != nil {
		return nil, refuse(CauseTemplate, "%v", err)
	}
	if _, err := c.Messages(judge.Input{Task: "t", Candidate: "c", Reference: "r"}); err != nil {
		return nil, refuse(CauseTemplate, "the revised prompt does not render: %v", err)
	}
	out := &Revision{Spec: &c, Kept: 1, Conflicts: nonEmpty(a.Conflicts)}
	if opt.MinKept < 0 {
		return out, nil
	}
	if lost := answerFields(s, s.System, c.System); len(lost) > 0 {
		return nil, refuse(CauseAnswerFormat, "the prompt's instructions about the answer no longer name %s; keep the final instructions about the answer format", strings.Join(lost, ", "))
	}
	minKept := cmp.Or(opt.MinKept, DefaultMinKept)
	kept, lost := keptShare(PromptText(s), PromptText(&c), opt.Edits)
	out.Kept = kept
	if kept < minKept {
		return nil, refuse(CauseLostText, "it kept %.0f%% of the sentences no edit touches (at least %.0f%% must stay word for word); lost, for example: %s",
			100*kept, 100*minKept, quoteFew(lost, 3))
	}
	missing := missingEdits(PromptText(s), PromptText(&c), opt.Edits)
	if len(missing) > 0 && !opt.AllowMissing {
		var ds []string
		for _, e := range missing {
			ds = append(ds, describeEdit(e))
		}
		return nil, &RefusalError{Cause: CauseMissingEdit, Missing: missing,
			Detail: fmt.Sprintf("%v: it does not carry %d of the %d edits: %s", ErrRejected, len(missing), len(opt.Edits), strings.Join(ds, "; "))}
	}
	out.Missing = missing
	return out, nil
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func describeEdit(e Proposal) string {
	switch e.Kind {
	case Reword:
		return fmt.Sprintf("reword %q -> %q", e.Target, e.Text)
	case Remove:
		return fmt.Sprintf("remove %q", e.Target)
	default:
		return fmt.Sprintf("%s %q", e.Kind, e.Text)
	}
}

func quoteFew(ss []string, n int) string {
	var q []string
	for _, s := range ss[:min(n, len(ss))] {
		q = append(q, fmt.Sprintf("%q", s))
	}
	if len(ss) > n {
		q = append(q, fmt.Sprintf("and %d more", len(ss)-n))
	}
	return strings.Join(q, ", ")
}

var reQuoted = regexp.MustCompile(`"[A-Za-z_][A-Za-z0-9_]*"`)

// answerFields lists the quoted names in the current prompt that the
// judge's answer schema uses (its fields and values: "reasoning",
// "verdict", "pass") and the revision no longer has.
func answerFields(s *judge.Spec, current, revised string) []string {
	sch := s.Schema()
	if sch == nil {
		return nil
	}
	schema := string(sch.JSON)
	var lost []string
	for _, q := range reQuoted.FindAllString(current, -1) {
		if strings.Contains(schema, q) && !strings.Contains(revised, q) && !slices.Contains(lost, q) {
			lost = append(lost, q)
		}
	}
	return lost
}

var (
	reBullet   = regexp.MustCompile(`(^|\s)[-*]\s+`)
	reSentence = regexp.MustCompile(`[.!?:;]\s`)
	reTerm     = regexp.MustCompile(`[a-z0-9_]{3,}`)
)

// flat is text as the checks compare it: lower case, bullets dropped,
// spacing collapsed.
func flat(t string) string {
	t = reBullet.ReplaceAllString(strings.ToLower(t), " ")
	return strings.Join(strings.Fields(t), " ")
}

// sentences splits text into its sentences, flat.
func sentences(t string) []string {
	f := flat(t) + " "
	var out []string
	start := 0
	for _, m := range reSentence.FindAllStringIndex(f, -1) {
		if s := strings.TrimSpace(f[start : m[0]+1]); len(strings.Fields(s)) >= 2 {
			out = append(out, s)
		}
		start = m[1]
	}
	if s := strings.TrimSpace(f[start:]); len(strings.Fields(s)) >= 2 {
		out = append(out, s)
	}
	return out
}

// keptShare measures how much of the current prompt's text that no
// rewording or removal targets is in the revision word for word, and
// lists what was lost.
func keptShare(current, revised string, edits []Proposal) (float64, []string) {
	var targets []string
	for _, e := range edits {
		if (e.Kind == Reword || e.Kind == Remove) && strings.TrimSpace(e.Target) != "" {
			targets = append(targets, flat(e.Target))
		}
	}
	rev := flat(revised)
	untouched, kept := 0, 0
	var lost []string
	for _, s := range sentences(current) {
		if slices.ContainsFunc(targets, func(t string) bool { return strings.Contains(s, t) || strings.Contains(t, s) }) {
			continue
		}
		untouched++
		if strings.Contains(rev, s) {
			kept++
		} else {
			lost = append(lost, s)
		}
	}
	if untouched == 0 {
		return 1, nil
	}
	return float64(kept) / float64(untouched), lost
}

// terms is the set of a text's words of three letters or more.
func terms(t string) map[string]bool {
	out := map[string]bool{}
	for _, w := range reTerm.FindAllString(strings.ToLower(t), -1) {
		out[w] = true
	}
	return out
}

// carried says whether text an edit brings is in the revision: at least
// three quarters of its words that the current prompt lacks are there
// (a reason may be regrouped or reworded slightly; its own words stay).
func carried(text string, current, revised map[string]bool) bool {
	n, found := 0, 0
	for w := range terms(text) {
		if current[w] {
			continue
		}
		n++
		if revised[w] {
			found++
		}
	}
	return n == 0 || 4*found >= 3*n
}

// missingEdits lists the edits a revision does not carry.
func missingEdits(current, revised string, edits []Proposal) []Proposal {
	cur, rev := terms(current), terms(revised)
	flatRev := flat(revised)
	var out []Proposal
	for _, e := range edits {
		ok := true
		switch e.Kind {
		case FailReason, PassReason:
			ok = carried(e.Text, cur, rev)
		case Reword:
			t := flat(e.Target)
			ok = carried(e.Text, cur, rev) && (t == "" || !strings.Contains(flatRev, t) || strings.Contains(flat(e.Text), t))
		case Remove:
			t := flat(e.Target)
			ok = t == "" || !strings.Contains(flatRev, t)
		}
		if !ok {
			out = append(out, e)
		}
	}
	return out
}

// causeOf reads the cause of a refusal (CauseUnreadable for an error
// that is not a RefusalError).
func causeOf(err error) string {
	var re *RefusalError
	if errors.As(err, &re) {
		return re.Cause
	}
	return CauseUnreadable
}
