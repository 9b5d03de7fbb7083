// Package codehost brings outcomes in from where teams work: a GitHub
// repository's pull-request history (with go-github) and a Gerrit server's
// changes (gerrit.go), as records with their outcomes.
//
// A pull request becomes a record whose id is OWNER/NAME#NUMBER: the task
// is the issue it closes (else its own title and body), the candidate its
// diff, the context its checks; the outcome is landed (merged), abandoned
// (closed unmerged, with the closing comment as the reason) or draft
// (open). Where the checks on its final commit all ended, a second record,
// OWNER/NAME#NUMBER/tests, carries the tests outcome (passed or failed).
// Both share a group: the closed issue, else the pull request, so a split
// never puts them on two sides.
//
// Records are immutable. Importing again changes no record: an outcome
// that changed (a pull request reopened and merged) becomes a new outcome
// version of the same record; a pull request whose head moved to another
// commit after it was imported is a new record, OWNER/NAME#NUMBER@SHA12,
// since its diff is another candidate.
package codehost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v93/github"

	"github.com/gavelhq/gavel/record"
	"github.com/gavelhq/gavel/repoctx"
)

// Store is what an import writes to.
type Store interface {
	record.Store
	record.OutcomeStore
}

// GitHubOptions select the pull requests to import.
type GitHubOptions struct {
	Owner, Repo string
	// Since keeps pull requests updated at or after it (zero: all).
	Since time.Time
	// Author keeps pull requests whose author's login matches (nil: all).
	Author *regexp.Regexp
	// Label keeps pull requests that carry it ("": all).
	Label string
	// MaxDiffBytes caps a candidate's diff (default 256 KiB); a longer
	// diff is cut at a line's end and says so.
	MaxDiffBytes int
	// WithFiles adds context.files: each file a pull request's diff
	// touches as it was at its base commit (the contents API), cut to
	// MaxContextChars (default repoctx.DefaultMaxChars) around the hunks.
	WithFiles       bool
	MaxContextChars int
	// Progress, when set, hears about each page, each pull request and
	// each wait for the rate limit.
	Progress func(format string, args ...any)
	// Sleep waits for a rate limit's reset (default: a timer that ctx
	// cancels).
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// GitHubResult counts what an import did.
type GitHubResult struct {
	PullRequests int `json:"pull_requests"` // listed and updated since Since
	Matched      int `json:"matched"`       // of which passed the author and label filters
	Inserted     int `json:"inserted"`      // new records
	Unchanged    int `json:"unchanged"`     // records already stored as they are
	NewOutcomes  int `json:"new_outcomes"`  // outcome versions added to stored records
	Revisions    int `json:"revisions"`     // pull requests whose head moved since an earlier import, stored again
	RateWaits    int `json:"rate_waits"`    // waits for a rate limit's reset
	// Records lists every record the import wrote or found as it is.
	Records []StoredRecord `json:"-"`
}

// StoredRecord is a record an import stored or found stored.
type StoredRecord struct {
	ID     string
	Status record.Status
	// Version is the record's outcome version; Added is set when the
	// import added the record or that version.
	Version int
	Added   bool
}

// DefaultMaxDiffBytes caps a candidate diff.
const DefaultMaxDiffBytes = 256 << 10

// ImportGitHub imports a repository's pull requests, newest update first,
// one pull request per transaction: an import stopped half-way keeps what
// it stored, and running it again goes on (the conditional requests of an
// ETagTransport make the pages already seen cheap).
func ImportGitHub(ctx context.Context, gh *github.Client, st Store, opt GitHubOptions) (*GitHubResult, error) {
	if opt.Owner == "" || opt.Repo == "" {
		return nil, errors.New("import github: the repository OWNER/NAME is needed")
	}
	im := newImporter(gh, st, opt)
	opt = im.opt
	list := &github.PullRequestListOptions{State: "all", Sort: "updated", Direction: "desc", ListOptions: github.ListOptions{PerPage: 100}}
	for page := 1; ; {
		list.Page = page
		var prs []*github.PullRequest
		resp, err := im.call(ctx, fmt.Sprintf("list pull requests, page %d", page), func() (*github.Response, error) {
			var r *github.Response
			var err error
			prs, r, err = gh.PullRequests.List(ctx, opt.Owner, opt.Repo, list)
			return r, err
		})
		if err != nil {
			return im.res, err
		}
		opt.Progress("page %d: %d pull requests", page, len(prs))
		for _, pr := range prs {
			if !opt.Since.IsZero() && pr.GetUpdatedAt().Before(opt.Since) {
				return im.res, nil // sorted by update, newest first: the rest are older
			}
			im.res.PullRequests++
			if !im.match(pr) {
				continue
			}
			im.res.Matched++
			if err := im.pullRequest(ctx, pr); err != nil {
				return im.res, fmt.Errorf("%s: %w", im.id(pr.GetNumber()), err)
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return im.res, nil
		}
		page = resp.NextPage
	}
}

func newImporter(gh *github.Client, st Store, opt GitHubOptions) *importer {
	if opt.MaxDiffBytes <= 0 {
		opt.MaxDiffBytes = DefaultMaxDiffBytes
	}
	if opt.Sleep == nil {
		opt.Sleep = sleep
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Progress == nil {
		opt.Progress = func(string, ...any) {}
	}
	return &importer{gh: gh, st: st, opt: opt, res: &GitHubResult{}}
}

type importer struct {
	gh  *github.Client
	st  Store
	opt GitHubOptions
	res *GitHubResult
}

func (im *importer) id(number int) string {
	return fmt.Sprintf("%s/%s#%d", im.opt.Owner, im.opt.Repo, number)
}

func (im *importer) match(pr *github.PullRequest) bool {
	if im.opt.Author != nil && !im.opt.Author.MatchString(pr.GetUser().GetLogin()) {
		return false
	}
	if im.opt.Label != "" {
		for _, l := range pr.Labels {
			if l.GetName() == im.opt.Label {
				return true
			}
		}
		return false
	}
	return true
}

// call runs one API call, waiting out rate limits: the primary limit until
// the reset time the API gave, a secondary limit for the Retry-After it
// gave (else a minute), then trying again.
func (im *importer) call(ctx context.Context, what string, fn func() (*github.Response, error)) (*github.Response, error) {
	for {
		resp, err := fn()
		var wait time.Duration
		var why string
		var rl *github.RateLimitError
		var al *github.AbuseRateLimitError
		switch {
		case errors.As(err, &rl):
			wait = rl.Rate.Reset.Sub(im.opt.Now()) + time.Second
			why = fmt.Sprintf("the rate limit (%d requests an hour) is used up until %s", rl.Rate.Limit, rl.Rate.Reset.UTC().Format(time.RFC3339))
		case errors.As(err, &al):
			wait = time.Minute
			if al.RetryAfter != nil {
				wait = *al.RetryAfter
			}
			why = "a secondary rate limit asks to wait"
		default:
			if err != nil {
				return resp, fmt.Errorf("%s: %w", what, err)
			}
			return resp, nil
		}
		wait = max(wait, time.Second)
		im.res.RateWaits++
		im.opt.Progress("%s: %s; waiting %s", what, why, wait.Round(time.Second))
		if err := im.opt.Sleep(ctx, wait); err != nil {
			return resp, err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pullRequest imports one pull request's records in one transaction.
func (im *importer) pullRequest(ctx context.Context, pr *github.PullRequest) error {
	recs, err := im.records(ctx, pr)
	if err != nil {
		return err
	}
	im.opt.Progress("%s: %s", im.id(pr.GetNumber()), recs[0].Outcome.Status)
	// The pull request's record first: where it goes (the record of its
	// first import, or a revision's) its tests record goes too.
	id, err := im.store(ctx, recs[0], recs[0].ID, revisionID(recs[0].ID, headOf(recs[0])))
	if err != nil {
		return err
	}
	for _, r := range recs[1:] {
		r.ID = id + "/tests"
		if _, err := im.store(ctx, r, r.ID, ""); err != nil {
			return err
		}
	}
	return nil
}

// store puts a record under id, or adds its outcome as a new version of
// the record stored there for the same head; when that record holds
// another head, it goes under revision instead. It returns the id used.
func (im *importer) store(ctx context.Context, r *record.Record, id, revision string) (string, error) {
	for _, id := range []string{id, revision} {
		if id == "" {
			break
		}
		stored, err := im.stored(ctx, id)
		if err != nil {
			return "", err
		}
		if stored == nil {
			r.ID = id
			return id, im.st.Import(ctx, func(w record.Writer) error {
				put, err := w.Put(ctx, r)
				if put == record.Inserted {
					im.res.Inserted++
					if id == revision {
						im.res.Revisions++
					}
				}
				if err == nil {
					im.res.Records = append(im.res.Records, StoredRecord{ID: id, Status: r.Outcome.Status, Version: 1, Added: put == record.Inserted})
				}
				return err
			})
		}
		if headOf(stored) == headOf(r) {
			version, added, err := im.st.AddOutcome(ctx, id, r.Outcome, "import github")
			if err != nil {
				return id, err
			}
			if added {
				im.res.NewOutcomes++
			} else {
				im.res.Unchanged++
			}
			im.res.Records = append(im.res.Records, StoredRecord{ID: id, Status: r.Outcome.Status, Version: version, Added: added})
			return id, nil
		}
	}
	return "", fmt.Errorf("records %s and %s hold heads other than %s", id, revision, headOf(r))
}

// revisionID is the id of a pull request's record for a head other than
// the one it was first imported with.
func revisionID(id, sha string) string {
	if len(sha) > 12 {
		sha = sha[:12]
	}
	return id + "@" + sha
}

func (im *importer) stored(ctx context.Context, id string) (*record.Record, error) {
	var out *record.Record
	err := im.st.Records(ctx, record.Filter{IDs: []string{id}}, func(r *record.Record) error {
		out = r
		return nil
	})
	return out, err
}

// meta is what a record from GitHub keeps of its pull request.
type meta struct {
	GitHub prMeta `json:"github"`
}

type prMeta struct {
	Repository  string   `json:"repository"`
	Number      int      `json:"number"`
	HeadSHA     string   `json:"head_sha"`
	URL         string   `json:"url,omitempty"`
	Author      string   `json:"author,omitempty"`
	Labels      []string `json:"labels,omitempty"`
	LinkedIssue int      `json:"linked_issue,omitempty"`
	DiffBytes   int      `json:"diff_bytes"`
	DiffCut     bool     `json:"diff_cut,omitempty"`
}

// headOf is the commit a record's candidate is: a pull request's head, a
// Gerrit change's current revision.
func headOf(r *record.Record) string {
	var m struct {
		GitHub struct {
			HeadSHA string `json:"head_sha"`
		} `json:"github"`
		Gerrit struct {
			Revision string `json:"revision"`
		} `json:"gerrit"`
	}
	if json.Unmarshal(r.Meta, &m) != nil {
		return ""
	}
	if m.GitHub.HeadSHA != "" {
		return m.GitHub.HeadSHA
	}
	return m.Gerrit.Revision
}

// records builds a pull request's record and, where its checks ended, its
// tests record.
func (im *importer) records(ctx context.Context, pr *github.PullRequest) ([]*record.Record, error) {
	o, repo, n := im.opt.Owner, im.opt.Repo, pr.GetNumber()
	head := pr.GetHead().GetSHA()
	var diff string
	if _, err := im.call(ctx, "diff", func() (*github.Response, error) {
		var r *github.Response
		var err error
		diff, r, err = im.gh.PullRequests.GetRaw(ctx, o, repo, n, github.RawOptions{Type: github.Diff})
		return r, err
	}); err != nil {
		return nil, err
	}
	candidate, cut := capDiff(diff, im.opt.MaxDiffBytes)

	task := strings.TrimSpace(pr.GetTitle() + "\n\n" + pr.GetBody())
	group := im.id(n)
	linked := linkedIssue(pr.GetBody(), o, repo)
	if linked > 0 {
		var issue *github.Issue
		_, err := im.call(ctx, fmt.Sprintf("issue #%d", linked), func() (*github.Response, error) {
			var r *github.Response
			var err error
			issue, r, err = im.gh.Issues.Get(ctx, o, repo, linked)
			return r, err
		})
		var er *github.ErrorResponse
		switch {
		case errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == 404:
			linked = 0 // a reference to an issue that is not there (or not visible)
		case err != nil:
			return nil, err
		default:
			task = strings.TrimSpace(issue.GetTitle() + "\n\n" + issue.GetBody())
			group = im.id(linked)
		}
	}

	runs, err := im.checkRuns(ctx, head)
	if err != nil {
		return nil, err
	}
	var labels []string
	for _, l := range pr.Labels {
		labels = append(labels, l.GetName())
	}
	m, err := json.Marshal(meta{GitHub: prMeta{Repository: o + "/" + repo, Number: n, HeadSHA: head, URL: pr.GetHTMLURL(),
		Author: pr.GetUser().GetLogin(), Labels: labels, LinkedIssue: linked, DiffBytes: len(diff), DiffCut: cut}})
	if err != nil {
		return nil, err
	}
	ctxt := map[string]string{"head_sha": head, "base": pr.GetBase().GetRef()}
	if len(runs) > 0 {
		ctxt["checks"] = checksText(runs)
	}
	if im.opt.WithFiles {
		files, err := im.filesOf(ctx, pr, diff)
		if err != nil {
			return nil, err
		}
		if files != "" {
			ctxt[repoctx.ContextKey] = files
		}
	}

	outcome, err := im.reviewOutcome(ctx, pr)
	if err != nil {
		return nil, err
	}
	rec := &record.Record{ID: im.id(n), Task: task, Candidate: candidate, Context: ctxt, Group: group, Outcome: outcome, Meta: m}
	out := []*record.Record{rec}
	if tests, ok := testsOutcome(runs); ok {
		t := *rec
		t.ID = rec.ID + "/tests"
		t.Outcome = tests
		out = append(out, &t)
	}
	for _, r := range out {
		if err := r.Normalize(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// reviewOutcome: merged is landed, closed unmerged abandoned (with the
// comment that closed it as the reason), open a draft.
func (im *importer) reviewOutcome(ctx context.Context, pr *github.PullRequest) (record.Outcome, error) {
	switch {
	case !pr.GetMergedAt().IsZero() || pr.GetMerged():
		return record.Outcome{Status: record.StatusLanded, At: pr.GetMergedAt().UTC()}, nil
	case pr.GetState() == "closed":
		reason, err := im.closingComment(ctx, pr)
		return record.Outcome{Status: record.StatusAbandoned, Reason: reason, At: pr.GetClosedAt().UTC()}, err
	}
	return record.Outcome{Status: record.StatusDraft}, nil
}

// closingWindow is how close to the closing a comment must be to count as
// the one that closed it ("Close with comment" posts both at once).
const closingWindow = time.Minute

// maxReason caps an abandoned outcome's reason.
const maxReason = 2000

// closingComment is the last comment made within a minute of the closing.
func (im *importer) closingComment(ctx context.Context, pr *github.PullRequest) (string, error) {
	closed := pr.GetClosedAt().Time
	if closed.IsZero() {
		return "", nil
	}
	since := closed.Add(-closingWindow)
	opts := &github.IssueListCommentsOptions{Since: &since, ListOptions: github.ListOptions{PerPage: 100}}
	var best *github.IssueComment
	for {
		var cs []*github.IssueComment
		resp, err := im.call(ctx, "comments", func() (*github.Response, error) {
			var r *github.Response
			var err error
			cs, r, err = im.gh.Issues.ListComments(ctx, im.opt.Owner, im.opt.Repo, pr.GetNumber(), opts)
			return r, err
		})
		if err != nil {
			return "", err
		}
		for _, c := range cs {
			at := c.GetCreatedAt().Time
			if at.After(closed.Add(closingWindow)) || at.Before(since) {
				continue
			}
			if best == nil || !at.Before(best.GetCreatedAt().Time) {
				best = c
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if best == nil {
		return "", nil
	}
	reason := strings.TrimSpace(best.GetBody())
	if len(reason) > maxReason {
		reason = strings.ToValidUTF8(reason[:maxReason], "") + " [cut]"
	}
	return reason, nil
}

func (im *importer) checkRuns(ctx context.Context, sha string) ([]*github.CheckRun, error) {
	if sha == "" {
		return nil, nil
	}
	opts := &github.ListCheckRunsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	var all []*github.CheckRun
	for {
		var res *github.ListCheckRunsResults
		resp, err := im.call(ctx, "check runs", func() (*github.Response, error) {
			var r *github.Response
			var err error
			res, r, err = im.gh.Checks.ListCheckRunsForRef(ctx, im.opt.Owner, im.opt.Repo, sha, opts)
			return r, err
		})
		if err != nil {
			return nil, err
		}
		all = append(all, res.CheckRuns...)
		if resp == nil || resp.NextPage == 0 {
			return all, nil
		}
		opts.Page = resp.NextPage
	}
}

// checksText is a pull request's check runs, one line each, by name.
func checksText(runs []*github.CheckRun) string {
	lines := make([]string, 0, len(runs))
	for _, r := range runs {
		state := r.GetConclusion()
		if r.GetStatus() != "completed" {
			state = r.GetStatus()
		}
		lines = append(lines, r.GetName()+": "+state)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// The check conclusions that fail a change, and those that pass it; any
// other (cancelled, action_required, stale) or a run still going leaves
// the tests outcome unknown.
var (
	failing = map[string]bool{"failure": true, "timed_out": true, "startup_failure": true}
	passing = map[string]bool{"success": true, "neutral": true, "skipped": true}
)

// testsOutcome is failed when a check on the final commit failed, passed
// when every one ended well, and unknown otherwise.
func testsOutcome(runs []*github.CheckRun) (record.Outcome, bool) {
	if len(runs) == 0 {
		return record.Outcome{}, false
	}
	var failed []string
	var last time.Time
	for _, r := range runs {
		if r.GetStatus() != "completed" {
			return record.Outcome{}, false
		}
		if t := r.GetCompletedAt().Time; t.After(last) {
			last = t
		}
		switch c := r.GetConclusion(); {
		case failing[c]:
			failed = append(failed, r.GetName())
		case !passing[c]:
			return record.Outcome{}, false
		}
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return record.Outcome{Status: record.StatusFailed, Reason: "failed: " + strings.Join(failed, ", "), At: last.UTC()}, true
	}
	return record.Outcome{Status: record.StatusPassed, At: last.UTC()}, true
}

// closingRef finds GitHub's closing keywords with an issue of this
// repository: "Fixes #12", "closes owner/name#12", "Resolved: #12".
var closingRef = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+(?:([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+))?#(\d+)\b`)

// linkedIssue is the first issue of this repository that the body closes,
// or 0.
func linkedIssue(body, owner, repo string) int {
	for _, m := range closingRef.FindAllStringSubmatch(body, -1) {
		if m[1] != "" && !strings.EqualFold(m[1], owner+"/"+repo) {
			continue
		}
		if n, err := strconv.Atoi(m[2]); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// capDiff cuts a diff longer than max bytes at the end of a line and says
// where.
func capDiff(diff string, max int) (string, bool) {
	if len(diff) <= max {
		return diff, false
	}
	cut := diff[:max]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i+1]
	}
	cut = strings.ToValidUTF8(cut, "")
	return cut + fmt.Sprintf("[gavel: the diff is cut here, after %d of its %d bytes]\n", len(cut), len(diff)), true
}

// ImportPullRequest imports one pull request as ImportGitHub would (its
// records, a new outcome version, or a revision), without the author and
// label filters. The service uses it for a pull request a webhook reports
// that it did not judge.
func ImportPullRequest(ctx context.Context, gh *github.Client, st Store, number int, opt GitHubOptions) (*GitHubResult, error) {
	im := newImporter(gh, st, opt)
	var pr *github.PullRequest
	if _, err := im.call(ctx, fmt.Sprintf("pull request #%d", number), func() (*github.Response, error) {
		var r *github.Response
		var err error
		pr, r, err = gh.PullRequests.Get(ctx, opt.Owner, opt.Repo, number)
		return r, err
	}); err != nil {
		return im.res, err
	}
	im.res.PullRequests, im.res.Matched = 1, 1
	return im.res, im.pullRequest(ctx, pr)
}

// NewGitHubClient is a go-github client with token (if any), GitHub
// Enterprise's API at baseURL (if given), and conditional requests through
// the store's ETags (counted in count, when set). A bad baseURL is an
// error that says so.
func NewGitHubClient(st AnswerStore, token, baseURL string, count *Requests) (*github.Client, error) {
	opts := []github.ClientOptionsFunc{github.WithTransport(&ETagTransport{Base: http.DefaultTransport, Store: st, Count: count}),
		github.WithUserAgent("gavel")}
	if token != "" {
		opts = append(opts, github.WithAuthToken(token))
	}
	if baseURL != "" {
		opts = append(opts, github.WithEnterpriseURLs(baseURL, baseURL))
	}
	return github.NewClient(opts...)
}

// ParseSince reads a date (2026-01-31) or an RFC 3339 time.
func ParseSince(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, s)
}
