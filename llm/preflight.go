package llm

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"
)

// Endpoint is what a hosted provider needs to be reached: its default
// base URL and the environment variables of its base URL and key.
type Endpoint struct {
	DefaultBaseURL string
	BaseURLEnv     string
	KeyEnv         string
}

// Preflight checks, before any work starts, that a provider can be
// called: a key when the provider's own service is used (a local server
// may need none), and a base URL that answers a TCP connection within
// two seconds. It makes no model call. Local providers and offline runs
// need nothing.
func (s *Service) Preflight(ctx context.Context, model string) error {
	provider, _, err := ParseModel(model)
	if err != nil {
		return err
	}
	info, err := s.reg.Info(provider)
	if err != nil {
		return err
	}
	ep := info.Endpoint
	if info.Local || s.opt.Offline || ep == nil {
		return nil
	}
	cfg := s.opt.Providers[provider]
	if cfg.HTTPClient != nil {
		return nil // the caller supplies the transport
	}
	base := cfg.BaseURL
	if base == "" {
		base = os.Getenv(ep.BaseURLEnv)
	}
	custom := base != ""
	if !custom {
		base = ep.DefaultBaseURL
	}
	if cfg.APIKey == "" && os.Getenv(ep.KeyEnv) == "" && !custom {
		return Fatal(fmt.Errorf("%s: %s is not set; it is needed for %s (a local server given by its base URL or %s may need none)",
			model, ep.KeyEnv, base, ep.BaseURLEnv))
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return Fatal(fmt.Errorf("%s: base URL %q is not a URL", model, base))
	}
	host := u.Host
	if u.Port() == "" {
		port := "443"
		if u.Scheme == "http" {
			port = "80"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", host)
	if err != nil {
		return Fatal(fmt.Errorf("%s: cannot reach %s: %v (check the base URL, %s and the network)", model, base, err, ep.BaseURLEnv))
	}
	conn.Close()
	return nil
}
