package openai

import (
	"cmp"
	"errors"
	"net/url"
	"os"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"

	"github.com/gavelhq/gavel/llm"
)

// AzureInfo registers Azure OpenAI as "azure": a model is azure:DEPLOYMENT,
// the name of a deployment on the resource's endpoint.
var AzureInfo = llm.ProviderInfo{
	Name: "azure",
	Doc: "Azure OpenAI: azure:DEPLOYMENT (AZURE_OPENAI_ENDPOINT or --base-url, e.g. https://RESOURCE.openai.azure.com; " +
		"AZURE_OPENAI_API_KEY; OPENAI_API_VERSION, default " + DefaultAzureAPIVersion + ")",
	New: NewAzure,
}

// DefaultAzureAPIVersion is the Azure OpenAI API version asked for when
// OPENAI_API_VERSION is not set: a generally available version with
// structured outputs.
const DefaultAzureAPIVersion = "2024-10-21"

// NewAzure makes a provider for an Azure OpenAI resource through the
// SDK's own Azure support: requests go to
// ENDPOINT/openai/deployments/DEPLOYMENT/chat/completions?api-version=V
// with the key in the api-key header. The endpoint comes from --base-url
// or AZURE_OPENAI_ENDPOINT, the key from AZURE_OPENAI_API_KEY (never from
// a file). Plain http is allowed only to a loopback address (a local
// proxy or a test server), as the SDK itself allows.
func NewAzure(cfg llm.ProviderConfig) (llm.Provider, error) {
	endpoint := cmp.Or(cfg.BaseURL, os.Getenv("AZURE_OPENAI_ENDPOINT"))
	if endpoint == "" {
		return nil, errors.New("azure: no endpoint: set AZURE_OPENAI_ENDPOINT (https://RESOURCE.openai.azure.com) or --base-url")
	}
	key := cmp.Or(cfg.APIKey, os.Getenv("AZURE_OPENAI_API_KEY"))
	if key == "" {
		return nil, errors.New("azure: no key: set AZURE_OPENAI_API_KEY")
	}
	opts := []option.RequestOption{option.WithMaxRetries(0),
		azure.WithEndpoint(endpoint, cmp.Or(os.Getenv("OPENAI_API_VERSION"), DefaultAzureAPIVersion)), azure.WithAPIKey(key)}
	if u, err := url.Parse(endpoint); err == nil && u.Scheme == "http" {
		opts = append(opts, azure.WithUnsafeAllowHTTP())
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Provider{client: sdk.NewClient(opts...), name: "azure"}, nil
}
