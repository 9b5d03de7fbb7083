package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/google/go-github/v93/github"
	"github.com/spf13/cobra"

	"github.com/gavelhq/gavel/codehost"
	"github.com/gavelhq/gavel/repoctx"
	"github.com/gavelhq/gavel/run"
)

func (a *app) importCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Import records with their outcomes from where a team works (GitHub, Gerrit)",
	}
	cmd.AddCommand(a.importGitHubCmd(), a.importGerritCmd())
	return cmd
}

type importGitHubFlags struct {
	repo, since, author, label, baseURL string
	maxDiff                             int
	opt                                 codehost.GitHubOptions
}

func (a *app) importGitHubCmd() *cobra.Command {
	var f importGitHubFlags
	cmd := &cobra.Command{
		Use:   "github --repo OWNER/NAME",
		Short: "Import a GitHub repository's pull requests as records with their outcomes",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.importGitHub(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.repo, "repo", "", "the repository, OWNER/NAME (required)")
	fl.StringVar(&f.since, "since", "", "only pull requests updated at or after this date (2026-01-31 or an RFC 3339 time)")
	fl.StringVar(&f.author, "author-pattern", "", "only pull requests whose author's login matches this regular expression (e.g. '\\[bot\\]$')")
	fl.StringVar(&f.label, "label", "", "only pull requests with this label")
	fl.StringVar(&f.baseURL, "base-url", "", "GitHub Enterprise API URL, e.g. https://github.example.com/api/v3/")
	fl.IntVar(&f.maxDiff, "max-diff-bytes", codehost.DefaultMaxDiffBytes, "cut a diff longer than this")
	fl.BoolVar(&f.opt.WithFiles, "with-files", false, "add context.files: each file a pull request changes as it was at its base commit (one contents request per file)")
	fl.IntVar(&f.opt.MaxContextChars, "max-context-chars", repoctx.DefaultMaxChars, "with --with-files, the files' text at most, cut at line ends around the change")
	return cmd
}

func (a *app) importGitHub(cmd *cobra.Command, f importGitHubFlags) error {
	owner, name, ok := strings.Cut(f.repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return usagef("--repo %q: want OWNER/NAME, e.g. acme/app", f.repo)
	}
	opt := f.opt
	opt.Owner, opt.Repo, opt.Label, opt.MaxDiffBytes = owner, name, f.label, f.maxDiff
	if f.since != "" {
		t, err := codehost.ParseSince(f.since)
		if err != nil {
			return usagef("--since %q: %v", f.since, err)
		}
		opt.Since = t
	}
	if f.author != "" {
		re, err := regexp.Compile(f.author)
		if err != nil {
			return usagef("--author-pattern: %v", err)
		}
		opt.Author = re
	}
	ctx := cmd.Context()
	db, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	count := &codehost.Requests{}
	if os.Getenv("GITHUB_TOKEN") == "" {
		fmt.Fprintln(a.stderr, "GITHUB_TOKEN is not set: unauthenticated requests are limited to 60 an hour")
	}
	gh, err := githubClient(db, f.baseURL, count)
	if err != nil {
		return err
	}
	opt.Progress = func(format string, args ...any) { fmt.Fprintf(a.stderr, "import github: "+format+"\n", args...) }
	res, err := codehost.ImportGitHub(ctx, gh, db, opt)
	if res == nil {
		return err
	}
	if jerr := a.output(&run.ImportResult{ResultVersion: run.ResultVersion, GitHubResult: res, Repository: f.repo,
		Requests: count.Sent.Load(), Conditional: count.Conditional.Load(), NotModified: count.NotModified.Load()}); jerr != nil {
		return jerr
	}
	return err
}

// githubClient is a GitHub client with the token in GITHUB_TOKEN (if any)
// and conditional requests through the store.
func githubClient(db codehost.AnswerStore, baseURL string, count *codehost.Requests) (*github.Client, error) {
	gh, err := codehost.NewGitHubClient(db, os.Getenv("GITHUB_TOKEN"), baseURL, count)
	if err != nil {
		return nil, usagef("--base-url: %v", err)
	}
	return gh, nil
}

func (a *app) importGerritCmd() *cobra.Command {
	var f struct {
		url, query, since, owner string
		maxDiff                  int
	}
	cmd := &cobra.Command{
		Use:   "gerrit --url https://review.example.com",
		Short: "Import a Gerrit server's changes as records with their outcomes",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.url == "" {
				return usagef("--url is required: the Gerrit server's root, e.g. https://review.example.com")
			}
			opt := codehost.GerritOptions{URL: f.url, Query: f.query, MaxDiffBytes: f.maxDiff,
				User: os.Getenv("GERRIT_USER"), Password: os.Getenv("GERRIT_PASSWORD"),
				Progress: func(format string, args ...any) { fmt.Fprintf(a.stderr, "import gerrit: "+format+"\n", args...) }}
			if f.since != "" {
				t, err := codehost.ParseSince(f.since)
				if err != nil {
					return usagef("--since %q: %v", f.since, err)
				}
				opt.Since = t
			}
			if f.owner != "" {
				re, err := regexp.Compile(f.owner)
				if err != nil {
					return usagef("--owner-pattern: %v", err)
				}
				opt.Owner = re
			}
			db, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			res, err := codehost.ImportGerrit(cmd.Context(), db, opt)
			if res == nil {
				return err
			}
			if jerr := a.output(&run.ImportResult{ResultVersion: run.ResultVersion, GitHubResult: res, Server: f.url}); jerr != nil {
				return jerr
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "", "the Gerrit server's root URL (required)")
	fl.StringVar(&f.query, "query", "", "a Gerrit search (default \"status:merged OR status:abandoned\")")
	fl.StringVar(&f.since, "since", "", "only changes updated at or after this date (2026-01-31 or an RFC 3339 time)")
	fl.StringVar(&f.owner, "owner-pattern", "", "only changes whose owner's username, email or name matches this regular expression")
	fl.IntVar(&f.maxDiff, "max-diff-bytes", codehost.DefaultMaxDiffBytes, "cut a patch longer than this")
	return cmd
}
