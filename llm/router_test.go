package llm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/llm/llmtest"
)

// TestRouter: each model goes to the server it was routed to, models of
// one provider and server share a service, and a model given two servers
// or never routed is refused.
func TestRouter(t *testing.T) {
	a, b := llmtest.NewOpenAI(), llmtest.NewOpenAI()
	defer a.Close()
	defer b.Close()
	cache := newCache(t)
	var made []string
	r := &llm.Router{New: func(model, baseURL string) (*llm.Service, error) {
		made = append(made, model+"@"+baseURL)
		return llm.NewService(registry(), cache, llm.Options{Providers: map[string]llm.ProviderConfig{"openai": {BaseURL: baseURL, APIKey: "k"}}, MaxAttempts: 1}), nil
	}}
	au, bu := a.URL+"/v1", b.URL+"/v1"
	for _, route := range []struct{ model, url string }{{"openai:gen", au}, {"openai:judge", bu}, {"openai:critic", bu}, {"openai:judge", bu}} {
		if err := r.Route(route.model, route.url); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Route("openai:gen", bu); err == nil || !strings.Contains(err.Error(), "two base URLs") {
		t.Fatalf("one model at two servers: %v", err)
	}
	ctx := context.Background()
	for _, model := range []string{"openai:gen", "openai:judge", "openai:critic", "openai:gen"} {
		req := &llm.Request{Model: model, Messages: []llm.Message{{Role: "user", Content: "hi from " + model}}}
		if _, err := r.Complete(ctx, req); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
	}
	if a.Count() != 1 || b.Count() != 2 {
		t.Fatalf("server a answered %d (want 1: the generator once, then the cache), b %d (want 2)", a.Count(), b.Count())
	}
	if len(made) != 2 {
		t.Fatalf("services made: %v (want one per provider and server)", made)
	}
	if st := r.Stats(); st.Sent != 3 || st.CacheHits != 1 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := r.Complete(ctx, &llm.Request{Model: "openai:other", Messages: []llm.Message{{Role: "user", Content: "x"}}}); err == nil {
		t.Fatal("a model no role uses was sent")
	}
	if got := r.URLs(); len(got) != 3 || got["openai:gen"] != au {
		t.Fatalf("urls %v", got)
	}
}
