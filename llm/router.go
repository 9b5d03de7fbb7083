package llm

import (
	"context"
	"fmt"
	"sync"
)

// Router is the Client of a command whose roles use several models, on
// several servers: each model is routed to a base URL (Route), and each
// request goes to the service of its model's provider and server, made on
// first use by New and kept. Workers use it too (Client), for the model
// and server each unit names.
type Router struct {
	// New makes the service of a provider's model at a base URL ("" for
	// the provider's default); the service then takes every model of that
	// provider and server.
	New func(model, baseURL string) (*Service, error)

	mu   sync.Mutex
	urls map[string]string   // model -> base URL
	svcs map[string]*Service // provider, base URL -> service
}

// Route sends a model's requests to a base URL ("" for the provider's
// default). A model has one server: the cache keys answers by model, not
// server, so one model at two servers is refused.
func (r *Router) Route(model, baseURL string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.urls == nil {
		r.urls = map[string]string{}
	}
	if prev, ok := r.urls[model]; ok && prev != baseURL {
		return fmt.Errorf("model %s is given two base URLs (%q, %q): the cache keys answers by model, not server, so name the two models differently", model, prev, baseURL)
	}
	r.urls[model] = baseURL
	return nil
}

// URLs are the base URLs models were routed to (the default server's
// models left out).
func (r *Router) URLs() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for m, u := range r.urls {
		if u != "" {
			out[m] = u
		}
	}
	return out
}

// Client returns the service of a model's provider at a base URL.
func (r *Router) Client(model, baseURL string) (Client, error) {
	return r.service(model, baseURL)
}

func (r *Router) service(model, baseURL string) (*Service, error) {
	provider, _, err := ParseModel(model)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := provider + "\x00" + baseURL
	if svc := r.svcs[key]; svc != nil {
		return svc, nil
	}
	svc, err := r.New(model, baseURL)
	if err != nil {
		return nil, err
	}
	if r.svcs == nil {
		r.svcs = map[string]*Service{}
	}
	r.svcs[key] = svc
	return svc, nil
}

// Complete implements Client: the request goes to its model's server.
func (r *Router) Complete(ctx context.Context, req *Request) (*Response, error) {
	r.mu.Lock()
	url, ok := r.urls[req.Model]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("model %s: no role uses it (route it first)", req.Model)
	}
	svc, err := r.service(req.Model, url)
	if err != nil {
		return nil, err
	}
	return svc.Complete(ctx, req)
}

// Stats sums the services' counts.
func (r *Router) Stats() RunStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	var t RunStats
	for _, svc := range r.svcs {
		t = t.Add(svc.Stats())
	}
	return t
}
