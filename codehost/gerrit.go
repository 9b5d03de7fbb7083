package codehost

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gavelhq/gavel/record"
)

// GerritOptions select the changes of a Gerrit server to import.
type GerritOptions struct {
	// URL is the server's root, e.g. https://review.example.com.
	URL string
	// Query is a Gerrit search (default "status:merged OR
	// status:abandoned"); Since adds after:DATE and keeps changes updated
	// at or after it.
	Query string
	Since time.Time
	// Owner keeps changes whose owner's username, email or name matches.
	Owner *regexp.Regexp
	// User and Password (an HTTP password from the user's settings)
	// authenticate; without them the import reads what anonymous users
	// may.
	User, Password string
	MaxDiffBytes   int
	Progress       func(format string, args ...any)
	// Client sends the requests (default http.DefaultClient).
	Client *http.Client
}

// ImportGerrit imports a Gerrit server's changes as records, with the
// mapping of ImportGitHub: id PROJECT~NUMBER (Gerrit's own change id); task
// the current revision's commit message; candidate its patch; group the
// change; outcome landed (MERGED), abandoned (ABANDONED, with the abandon
// message as the reason) or draft (NEW). Re-importing edits nothing: a
// changed outcome is a new outcome version, a new current revision the
// record PROJECT~NUMBER@SHA12.
func ImportGerrit(ctx context.Context, st Store, opt GerritOptions) (*GitHubResult, error) {
	if opt.URL == "" {
		return nil, fmt.Errorf("import gerrit: the server's URL is needed")
	}
	if opt.Query == "" {
		opt.Query = "status:merged OR status:abandoned"
	}
	if !opt.Since.IsZero() {
		opt.Query = "(" + opt.Query + ") after:" + opt.Since.UTC().Format("2006-01-02")
	}
	if opt.Client == nil {
		opt.Client = http.DefaultClient
	}
	g := &gerrit{opt: opt}
	im := newImporter(nil, st, GitHubOptions{MaxDiffBytes: opt.MaxDiffBytes, Progress: opt.Progress})
	for start := 0; ; {
		q := url.Values{"q": {opt.Query}, "n": {"100"}, "S": {strconv.Itoa(start)},
			"o": {"CURRENT_REVISION", "CURRENT_COMMIT", "MESSAGES", "DETAILED_ACCOUNTS"}}
		var changes []gerritChange
		if err := g.getJSON(ctx, "changes/?"+q.Encode(), &changes); err != nil {
			return im.res, err
		}
		im.opt.Progress("changes %d to %d", start+1, start+len(changes))
		for i := range changes {
			c := &changes[i]
			im.res.PullRequests++
			if !opt.Since.IsZero() && c.Updated.Before(opt.Since) {
				continue
			}
			if opt.Owner != nil && !opt.Owner.MatchString(c.Owner.Username) && !opt.Owner.MatchString(c.Owner.Email) && !opt.Owner.MatchString(c.Owner.Name) {
				continue
			}
			im.res.Matched++
			r, err := g.record(ctx, c, im.opt.MaxDiffBytes)
			if err != nil {
				return im.res, fmt.Errorf("%s~%d: %w", c.Project, c.Number, err)
			}
			im.opt.Progress("%s: %s", r.ID, r.Outcome.Status)
			if _, err := im.store(ctx, r, r.ID, revisionID(r.ID, headOf(r))); err != nil {
				return im.res, err
			}
		}
		if len(changes) == 0 || !changes[len(changes)-1].MoreChanges {
			return im.res, nil
		}
		start += len(changes)
	}
}

// gerrit is a small client of Gerrit's REST API of its own: the calls used
// are two plain JSON GETs (a query, a patch), and the Go client that
// exists (andygrunwald/go-gerrit) is not served by the module proxy gavel
// builds from.
type gerrit struct{ opt GerritOptions }

// gerritTime reads Gerrit's timestamps, "2013-02-01 09:59:32.126000000"
// in UTC.
type gerritTime struct{ time.Time }

func (t *gerritTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == "" {
		return nil
	}
	v, err := time.Parse("2006-01-02 15:04:05.999999999", s)
	if err != nil {
		return err
	}
	t.Time = v.UTC()
	return nil
}

type gerritAccount struct {
	Name     string `json:"name"`
	Email    string `json:"email"`
	Username string `json:"username"`
}

type gerritChange struct {
	ID              string                    `json:"id"`
	Project         string                    `json:"project"`
	Branch          string                    `json:"branch"`
	ChangeID        string                    `json:"change_id"`
	Subject         string                    `json:"subject"`
	Status          string                    `json:"status"`
	Updated         gerritTime                `json:"updated"`
	Submitted       gerritTime                `json:"submitted"`
	Number          int                       `json:"_number"`
	Owner           gerritAccount             `json:"owner"`
	CurrentRevision string                    `json:"current_revision"`
	Revisions       map[string]gerritRevision `json:"revisions"`
	Messages        []gerritMessage           `json:"messages"`
	MoreChanges     bool                      `json:"_more_changes"`
}

type gerritRevision struct {
	Number int `json:"_number"`
	Commit struct {
		Subject string `json:"subject"`
		Message string `json:"message"`
	} `json:"commit"`
}

type gerritMessage struct {
	Tag     string     `json:"tag"`
	Date    gerritTime `json:"date"`
	Message string     `json:"message"`
}

// xssiPrefix starts every JSON answer of Gerrit's REST API.
const xssiPrefix = ")]}'"

func (g *gerrit) get(ctx context.Context, path string) ([]byte, error) {
	base := strings.TrimRight(g.opt.URL, "/") + "/"
	if g.opt.User != "" {
		base += "a/" // the authenticated API
	}
	req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	if err != nil {
		return nil, err
	}
	if g.opt.User != "" {
		req.SetBasicAuth(g.opt.User, g.opt.Password)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := g.opt.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", req.URL.Redacted(), resp.Status, strings.TrimSpace(string(b)))
	}
	return b, nil
}

func (g *gerrit) getJSON(ctx context.Context, path string, v any) error {
	b, err := g.get(ctx, path)
	if err != nil {
		return err
	}
	b = bytes.TrimPrefix(bytes.TrimLeft(b, " \r\n"), []byte(xssiPrefix))
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// record maps a change; its patch is the current revision's.
func (g *gerrit) record(ctx context.Context, c *gerritChange, maxDiff int) (*record.Record, error) {
	rev := c.Revisions[c.CurrentRevision]
	raw, err := g.get(ctx, fmt.Sprintf("changes/%s/revisions/%s/patch", url.PathEscape(c.ID), c.CurrentRevision))
	if err != nil {
		return nil, err
	}
	patch, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("patch: not base64: %w", err)
	}
	candidate, cut := capDiff(string(patch), maxDiff)
	id := fmt.Sprintf("%s~%d", c.Project, c.Number)
	task := strings.TrimSpace(rev.Commit.Message)
	if task == "" {
		task = c.Subject
	}
	var o record.Outcome
	switch c.Status {
	case "MERGED":
		at := c.Submitted.Time
		if at.IsZero() {
			at = c.Updated.Time
		}
		o = record.Outcome{Status: record.StatusLanded, At: at}
	case "ABANDONED":
		o = record.Outcome{Status: record.StatusAbandoned, Reason: abandonReason(c.Messages), At: c.Updated.Time}
	default:
		o = record.Outcome{Status: record.StatusDraft}
	}
	m, err := json.Marshal(map[string]any{"gerrit": map[string]any{"project": c.Project, "branch": c.Branch, "number": c.Number,
		"change_id": c.ChangeID, "revision": c.CurrentRevision, "patch_set": rev.Number, "owner": c.Owner.Username,
		"diff_bytes": len(patch), "diff_cut": cut}})
	if err != nil {
		return nil, err
	}
	r := &record.Record{ID: id, Task: task, Candidate: candidate, Group: id, Outcome: o, Meta: m,
		Context: map[string]string{"branch": c.Branch, "revision": c.CurrentRevision}}
	return r, r.Normalize()
}

// abandonReason is the text of the last abandon message ("Abandoned" and
// the reason the abandoner gave).
func abandonReason(ms []gerritMessage) string {
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if m.Tag == "autogenerated:gerrit:abandon" || strings.HasPrefix(m.Message, "Abandoned") {
			reason := strings.TrimSpace(strings.TrimPrefix(m.Message, "Abandoned"))
			if len(reason) > maxReason {
				reason = strings.ToValidUTF8(reason[:maxReason], "") + " [cut]"
			}
			return reason
		}
	}
	return ""
}
