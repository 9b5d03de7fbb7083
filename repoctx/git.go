package repoctx

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Git reads files from a local clone through one `git cat-file --batch`
// process, so that thousands of files cost one process, not thousands.
type Git struct {
	Dir string
	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

var _ Source = (*Git)(nil)

// OpenGit opens the clone at dir; it is an error when dir is not a git
// repository or git cannot be run.
func OpenGit(ctx context.Context, dir string) (*Git, error) {
	if _, err := gitOut(ctx, dir, "rev-parse", "--git-dir"); err != nil {
		return nil, fmt.Errorf("--repo %s: not a git repository: %w", dir, err)
	}
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "cat-file", "--batch")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("--repo %s: git: %w", dir, err)
	}
	return &Git{Dir: dir, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16)}, nil
}

// Resolve names a revision's commit (a branch, a tag, a short hash) by its
// full hash.
func (g *Git) Resolve(ctx context.Context, rev string) (string, error) {
	out, err := gitOut(ctx, g.Dir, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("commit %q is not in the repository at %s (fetch it, or give --base)", rev, g.Dir)
	}
	return strings.TrimSpace(out), nil
}

// Read implements Source.
func (g *Git) Read(_ context.Context, rev, path string) (string, bool, error) {
	if strings.ContainsAny(path, "\n\x00") || strings.ContainsAny(rev, "\n\x00") {
		return "", false, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := io.WriteString(g.in, rev+":"+path+"\n"); err != nil {
		return "", false, fmt.Errorf("git cat-file: %w", err)
	}
	header, err := g.out.ReadString('\n')
	if err != nil {
		return "", false, fmt.Errorf("git cat-file: %w", err)
	}
	fields := strings.Fields(header)
	if len(fields) == 2 && fields[1] == "missing" || len(fields) != 3 {
		return "", false, nil
	}
	size, err := strconv.Atoi(fields[2])
	if err != nil {
		return "", false, fmt.Errorf("git cat-file: header %q", strings.TrimSpace(header))
	}
	body := make([]byte, size+1) // the content and its LF
	if _, err := io.ReadFull(g.out, body); err != nil {
		return "", false, fmt.Errorf("git cat-file: %w", err)
	}
	if fields[1] != "blob" {
		return "", false, nil // a submodule or a folder
	}
	if bytes.IndexByte(body[:size], 0) >= 0 {
		return "[binary file, not shown]\n", true, nil
	}
	return string(body[:size]), true, nil
}

// Close ends the git process.
func (g *Git) Close() error {
	g.in.Close()
	err := g.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil // killed with its context
	}
	return err
}

func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}
