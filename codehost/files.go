package codehost

import (
	"context"
	"errors"

	"github.com/google/go-github/v93/github"

	"github.com/gavelhq/gavel/repoctx"
)

// githubFiles reads files of the imported repository at a commit through
// the contents API (import github --with-files).
type githubFiles struct{ im *importer }

var _ repoctx.Source = githubFiles{}

// Read implements repoctx.Source.
func (g githubFiles) Read(ctx context.Context, rev, path string) (string, bool, error) {
	im := g.im
	var fc *github.RepositoryContent
	_, err := im.call(ctx, "the content of "+path+" at "+rev, func() (*github.Response, error) {
		var r *github.Response
		var err error
		fc, _, r, err = im.gh.Repositories.GetContents(ctx, im.opt.Owner, im.opt.Repo, path, &github.RepositoryContentGetOptions{Ref: rev})
		return r, err
	})
	var er *github.ErrorResponse
	switch {
	case errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == 404:
		return "", false, nil
	case err != nil:
		return "", false, err
	case fc == nil || fc.GetType() != "file":
		return "", false, nil // a folder or a submodule
	}
	text, err := fc.GetContent()
	if err != nil || fc.GetEncoding() == "none" {
		return "[a file over the contents API's 1 MB, not shown]\n", true, nil
	}
	return text, true, nil
}

// filesOf is a pull request's context.files: each file its diff touches
// as it was at the base commit.
func (im *importer) filesOf(ctx context.Context, pr *github.PullRequest, diff string) (string, error) {
	base := pr.GetBase().GetSHA()
	files, _, err := repoctx.Gather(ctx, githubFiles{im}, base, diff)
	if err != nil || len(files) == 0 {
		return "", err
	}
	return repoctx.Render(files, base, im.opt.MaxContextChars), nil
}
