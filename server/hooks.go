package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v93/github"

	"github.com/gavelhq/gavel/codehost"
	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/record"
)

// webhookLimit is the largest payload GitHub sends (25 MB).
const webhookLimit = 25 << 20

const githubHookRoute = "POST /v1/hooks/github"

// HookResult is the answer to a webhook delivery: what it recorded, or
// why it recorded nothing.
type HookResult struct {
	Delivery string `json:"delivery"`
	Event    string `json:"event"`
	Action   string `json:"action,omitempty"`
	// Outcomes are the outcomes the delivery recorded.
	Outcomes []HookOutcome `json:"outcomes,omitempty"`
	// Ignored says why the delivery recorded nothing.
	Ignored string `json:"ignored,omitempty"`
	// Replay is set when the delivery was handled before: the answer is
	// the first one's, and nothing was stored again.
	Replay bool `json:"replay,omitempty"`
	// Stale is set when the event is older than the record's latest
	// outcome (a delivery sent again under a new id, or one that came
	// late): acknowledged, and nothing stored.
	Stale bool `json:"stale,omitempty"`
}

// HookOutcome is one outcome a delivery recorded.
type HookOutcome struct {
	RecordID string        `json:"record_id"`
	Status   record.Status `json:"status"`
	// Version is the record's outcome version now; Created is false when
	// the record already had this outcome.
	Version int  `json:"version"`
	Created bool `json:"created"`
	// Judged is set when the record is of a change this service judged.
	Judged bool `json:"judged"`
}

// githubHook handles POST /v1/hooks/github: a GitHub webhook delivery,
// authenticated by its X-Hub-Signature-256 HMAC (not by a token).
func (s *Server) githubHook(w http.ResponseWriter, r *http.Request, _ *deploy.Token) error {
	if len(s.cfg.GitHubWebhookSecret) == 0 {
		return errorf(http.StatusNotFound, "GitHub webhooks are off: start gavel serve with GAVEL_GITHUB_WEBHOOK_SECRET (or --github-webhook-secret)")
	}
	// Before the body is read: a delivery without a signature, or larger
	// than the cap, is refused at once, and only a few payloads are read
	// at a time (nothing is authenticated until the whole body is in).
	sig := r.Header.Get(github.SHA256SignatureHeader)
	if !strings.HasPrefix(sig, "sha256=") {
		s.metrics.hooks.WithLabelValues("github", "unsigned").Inc()
		return errorf(http.StatusUnauthorized, "missing X-Hub-Signature-256: set the webhook's secret at GitHub")
	}
	if r.ContentLength > s.cfg.WebhookBodyLimit {
		return errorf(http.StatusRequestEntityTooLarge, "payload of %d bytes, over this service's limit of %d", r.ContentLength, s.cfg.WebhookBodyLimit)
	}
	select {
	case s.hookReaders <- struct{}{}:
		defer func() { <-s.hookReaders }()
	default:
		s.metrics.hooks.WithLabelValues("github", "busy").Inc()
		w.Header().Set("Retry-After", "5")
		return errorf(http.StatusServiceUnavailable, "busy reading other webhook deliveries: try again in a few seconds")
	}
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.WebhookBodyLimit))
	if err != nil {
		return errorf(http.StatusRequestEntityTooLarge, "payload: %v", err)
	}
	// ValidateSignature compares the HMAC in constant time.
	if err := github.ValidateSignature(sig, payload, s.cfg.GitHubWebhookSecret); err != nil {
		s.metrics.hooks.WithLabelValues("github", "bad_signature").Inc()
		return errorf(http.StatusUnauthorized, "X-Hub-Signature-256 does not match the payload: the secrets differ, or the payload was altered")
	}
	delivery, event := github.DeliveryID(r), github.WebHookType(r)
	if delivery == "" || event == "" {
		return errorf(http.StatusBadRequest, "missing X-GitHub-Delivery or X-GitHub-Event")
	}
	ctx := context.WithoutCancel(r.Context())
	if old, ok, err := s.cfg.Store.WebhookDelivery(ctx, delivery); err != nil {
		return err
	} else if ok {
		var res HookResult
		if err := json.Unmarshal(old, &res); err != nil {
			return err
		}
		res.Replay = true
		s.metrics.hooks.WithLabelValues("github", "replay").Inc()
		writeJSON(w, http.StatusOK, res)
		return nil
	}
	res := &HookResult{Delivery: delivery, Event: event}
	if err := s.handleGitHubEvent(ctx, event, payload, res); err != nil {
		return err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	// Kept only once handled: a delivery that failed is handled afresh
	// when GitHub sends it again. Two copies at once both apply their
	// outcomes, which are idempotent.
	if err := s.cfg.Store.SaveWebhookDelivery(ctx, delivery, event, b); err != nil {
		return err
	}
	status := "recorded"
	switch {
	case res.Stale:
		status = "stale"
	case res.Ignored != "":
		status = "ignored"
	}
	s.metrics.hooks.WithLabelValues("github", status).Inc()
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) handleGitHubEvent(ctx context.Context, event string, payload []byte, res *HookResult) error {
	switch event {
	case "ping":
		res.Ignored = "ping: the webhook reaches gavel"
		return nil
	case "pull_request", "check_suite", "check_run":
	default:
		res.Ignored = fmt.Sprintf("gavel does not use %s events", event)
		return nil
	}
	parsed, err := github.ParseWebHook(event, payload)
	if err != nil {
		return errorf(http.StatusBadRequest, "%s payload: %v", event, err)
	}
	switch e := parsed.(type) {
	case *github.PullRequestEvent:
		res.Action = e.GetAction()
		return s.pullRequestEvent(ctx, e, res)
	case *github.CheckSuiteEvent:
		res.Action = e.GetAction()
		cs := e.GetCheckSuite()
		if cs == nil {
			return errorf(http.StatusBadRequest, "check_suite payload without its check_suite object")
		}
		return s.checksEvent(ctx, e.GetRepo(), e.GetAction(), cs.GetConclusion(), cs.GetHeadSHA(), cs.GetUpdatedAt().UTC(), cs.PullRequests, false, res)
	case *github.CheckRunEvent:
		res.Action = e.GetAction()
		cr := e.GetCheckRun()
		if cr == nil {
			return errorf(http.StatusBadRequest, "check_run payload without its check_run object")
		}
		return s.checksEvent(ctx, e.GetRepo(), e.GetAction(), cr.GetConclusion(), cr.GetHeadSHA(), cr.GetCompletedAt().UTC(), cr.PullRequests, true, res)
	}
	res.Ignored = fmt.Sprintf("unexpected %s payload", event)
	return nil
}

// pullRequestEvent records a review outcome: closed and merged is landed,
// closed unmerged abandoned, reopened a draft again.
func (s *Server) pullRequestEvent(ctx context.Context, e *github.PullRequestEvent, res *HookResult) error {
	pr := e.GetPullRequest()
	var o record.Outcome
	switch e.GetAction() {
	case "closed":
		if pr.GetMerged() || !pr.GetMergedAt().IsZero() {
			o = record.Outcome{Status: record.StatusLanded, At: pr.GetMergedAt().UTC()}
		} else {
			o = record.Outcome{Status: record.StatusAbandoned, At: pr.GetClosedAt().UTC()}
		}
	case "reopened":
		o = record.Outcome{Status: record.StatusDraft, At: pr.GetUpdatedAt().UTC()}
	default:
		res.Ignored = fmt.Sprintf("pull_request %s does not change an outcome", e.GetAction())
		return nil
	}
	return s.prOutcome(ctx, e.GetRepo().GetFullName(), pr.GetNumber(), pr.GetHead().GetSHA(), "", o, res)
}

// checksEvent records a tests outcome from a completed check suite
// (failed or passed) or check run (failed only: one run's success says
// nothing of the others).
func (s *Server) checksEvent(ctx context.Context, repo *github.Repository, action, conclusion, head string, at time.Time, prs []*github.PullRequest, run bool, res *HookResult) error {
	if action != "completed" {
		res.Ignored = fmt.Sprintf("checks %s: only completed checks give an outcome", action)
		return nil
	}
	var o record.Outcome
	switch conclusion {
	case "failure", "timed_out", "startup_failure":
		o = record.Outcome{Status: record.StatusFailed, Reason: "checks: " + conclusion, At: at}
	case "success", "neutral", "skipped":
		if run {
			res.Ignored = "a check run that passed says nothing of the others; the check suite's conclusion counts"
			return nil
		}
		o = record.Outcome{Status: record.StatusPassed, At: at}
	default:
		res.Ignored = fmt.Sprintf("checks concluded %q, which is neither a pass nor a failure", conclusion)
		return nil
	}
	if len(prs) == 0 {
		res.Ignored = "the checks ran on a commit of no pull request"
		return nil
	}
	for _, pr := range prs {
		if sha := pr.GetHead().GetSHA(); sha != "" && sha != head {
			continue // the pull request has moved on; these checks are of an older head
		}
		if err := s.prOutcome(ctx, repo.GetFullName(), pr.GetNumber(), head, "/tests", o, res); err != nil {
			return err
		}
	}
	if len(res.Outcomes) == 0 && res.Ignored == "" {
		res.Ignored = "the checks ran on a head the pull requests have moved away from"
	}
	return nil
}

// prOutcome records an outcome for a pull request at a head: on the record
// of the change this service judged for it (OWNER/NAME#N@SHA, with the
// whole SHA or its first 12 characters, else OWNER/NAME#N when its
// context's head_sha names that head or none), with suffix
// "/tests" for a tests outcome; else, with a GitHub client, by importing
// the pull request; else not at all.
func (s *Server) prOutcome(ctx context.Context, repo string, number int, head, suffix string, o record.Outcome, res *HookResult) error {
	base := fmt.Sprintf("%s#%d", repo, number)
	short := head
	if len(short) > 12 {
		short = short[:12]
	}
	for _, id := range []string{base + "@" + head, base + "@" + short, base} {
		c, err := s.cfg.Store.Change(ctx, id)
		if errors.Is(err, record.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if sha := c.Context["head_sha"]; sha != "" && head != "" && sha != head {
			continue
		}
		return s.changeOutcome(ctx, c, c.ID+suffix, o, res)
	}
	if s.cfg.GitHub == nil {
		res.Ignored = fmt.Sprintf("this service judged no change %s at %s, and has no GitHub token to fetch it (set GITHUB_TOKEN for gavel serve to record pull requests it did not judge)", base, short)
		return nil
	}
	owner, name, _ := strings.Cut(repo, "/")
	// The import reads the pull request's state and all its checks, so
	// its outcomes agree with what the event reports, or are newer.
	ir, err := codehost.ImportPullRequest(ctx, s.cfg.GitHub, s.cfg.Store, number, codehost.GitHubOptions{Owner: owner, Repo: name})
	if err != nil {
		return fmt.Errorf("import %s: %w", base, err)
	}
	for _, r := range ir.Records {
		res.Outcomes = append(res.Outcomes, HookOutcome{RecordID: r.ID, Status: r.Status, Version: r.Version, Created: r.Added})
	}
	return nil
}

// changeOutcome makes o the outcome of a judged change's record id: a new
// record from the change, or a new outcome version of its record.
func (s *Server) changeOutcome(ctx context.Context, c *deploy.Change, id string, o record.Outcome, res *HookResult) error {
	rec := &record.Record{ID: id, Task: c.Task, Candidate: c.Candidate, Reference: c.Reference, Context: c.Context,
		Group: c.Group, Outcome: o}
	if rec.Group == "" {
		rec.Group = c.ID
	}
	if err := rec.Normalize(); err != nil {
		return err
	}
	out := HookOutcome{RecordID: id, Status: rec.Outcome.Status, Judged: true}
	stored, err := deploy.StoredRecord(ctx, s.cfg.Store, id)
	if err != nil {
		return err
	}
	if stored == nil {
		var put record.PutResult
		err := s.cfg.Store.Import(ctx, func(w record.Writer) error {
			var err error
			put, err = w.Put(ctx, rec)
			return err
		})
		if err != nil {
			return err
		}
		out.Version, out.Created = 1, put == record.Inserted
	} else if at := rec.Outcome.At; !at.IsZero() && !stored.Outcome.At.IsZero() && at.Before(stored.Outcome.At) {
		// An event older than what the record knows changes nothing: a
		// stale delivery must not undo a newer outcome.
		res.Stale = true
		res.Ignored = fmt.Sprintf("stale: the event (%s, %s) is older than %s's latest outcome (%s, %s)",
			rec.Outcome.Status, at.Format(time.RFC3339), id, stored.Outcome.Status, stored.Outcome.At.Format(time.RFC3339))
		return nil
	} else {
		out.Version, out.Created, err = s.cfg.Store.AddOutcome(ctx, id, rec.Outcome, "github webhook "+res.Delivery)
		if err != nil {
			return err
		}
	}
	if out.Created {
		s.metrics.outcomes.WithLabelValues(string(rec.Outcome.Status)).Inc()
	}
	res.Outcomes = append(res.Outcomes, out)
	return nil
}
