package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/llm/llmtest"
)

// Azure OpenAI, Anthropic on Bedrock and Anthropic on Vertex each judge
// records through a fake that checks what the real service requires
// (Azure's api-key header and deployment path; Bedrock's SigV4 signature,
// recomputed, and invoke path; Vertex's bearer token from a service
// account's JWT grant, and its rawPredict path), and a second run is
// answered from the cache. The wrong credentials are refused by each.
func TestCloudProvidersJudgeThroughTheirFakes(t *testing.T) {
	db := simStore(t, filepath.Join(t.TempDir(), "w"), 60)
	// No ambient cloud configuration of the machine may leak in.
	for _, k := range []string{"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION", "GOOGLE_CLOUD_PROJECT"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	sa := filepath.Join(t.TempDir(), "sa.json")
	cases := []struct {
		provider, model string
		fake            *llmtest.Server
		env, wrongEnv   map[string]string
	}{
		{"azure", "azure:gpt-4o-prod", llmtest.NewAzure("az-key"),
			map[string]string{"AZURE_OPENAI_API_KEY": "az-key"}, map[string]string{"AZURE_OPENAI_API_KEY": "stolen"}},
		{"bedrock", "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", llmtest.NewBedrock("AKIDGAVELTEST", "secret/key", "us-east-1"),
			map[string]string{"AWS_ACCESS_KEY_ID": "AKIDGAVELTEST", "AWS_SECRET_ACCESS_KEY": "secret/key", "AWS_REGION": "us-east-1"},
			map[string]string{"AWS_ACCESS_KEY_ID": "AKIDGAVELTEST", "AWS_SECRET_ACCESS_KEY": "wrong", "AWS_REGION": "us-east-1"}},
		{"vertex", "vertex:claude-sonnet-4-5@20250929", llmtest.NewVertex("gavel-proj"),
			map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": sa, "ANTHROPIC_VERTEX_PROJECT_ID": "gavel-proj", "CLOUD_ML_REGION": "us-east5"},
			map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": sa, "ANTHROPIC_VERTEX_PROJECT_ID": "other-proj", "CLOUD_ML_REGION": "us-east5"}},
	}
	for _, c := range cases {
		t.Run(c.provider, func(t *testing.T) {
			defer c.fake.Close()
			if c.provider == "vertex" {
				if err := os.WriteFile(sa, c.fake.ServiceAccountJSON(), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c.fake.Answer = func(*llmtest.Call) string {
				return `{"reasoning": "The change does what the task asks.", "verdict": "pass"}`
			}
			args := []string{"judge", "--judge", "passfail", "--split", "main:test", "--model", c.model, "--base-url", c.fake.URL, "--max-attempts", "1", "--json"}
			for k, v := range c.wrongEnv {
				t.Setenv(k, v)
			}
			if r := gavel(t, db, append(args, "--limit", "1")...); r.code == 0 || !strings.Contains(r.stderr, c.provider) || c.fake.Cloud.Refused == 0 {
				t.Fatalf("with the wrong credentials: exit %d, %d refused\n%s", r.code, c.fake.Cloud.Refused, r.stderr)
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			refused := c.fake.Cloud.Refused
			var first, second struct {
				judgeJSON
				callsJSON
			}
			decodeJSON(t, mustGavel(t, db, args...), &first)
			sent := c.fake.Count()
			if first.Records == 0 || first.Pass != first.Records || first.Calls.Sent == 0 || c.fake.Cloud.Refused != refused {
				t.Fatalf("first run: %+v, %d refused since", first, c.fake.Cloud.Refused-refused)
			}
			for _, call := range c.fake.Calls() {
				if want := strings.SplitN(c.model, ":", 2)[1]; call.Model != want {
					t.Fatalf("the server saw model %q, want %q", call.Model, want)
				}
			}
			decodeJSON(t, mustGavel(t, db, args...), &second)
			if second.Records != first.Records || second.Calls.Sent != 0 || c.fake.Count() != sent {
				t.Fatalf("second run: %+v, %d calls reached the server (first run: %d)", second, c.fake.Count()-sent, sent)
			}
		})
	}
}
