package anthropic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/vertex"
	"github.com/aws/aws-sdk-go-v2/config"
	"golang.org/x/oauth2/google"

	"github.com/gavelhq/gavel/llm"
)

// BedrockInfo registers Anthropic's models on Amazon Bedrock as
// "bedrock": a model is bedrock:MODEL-ID (an inference profile such as
// bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0).
var BedrockInfo = llm.ProviderInfo{
	Name: "bedrock",
	Doc: "Anthropic on Amazon Bedrock: bedrock:MODEL-ID (AWS credentials and region from the usual AWS environment: " +
		"AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, AWS_REGION; or AWS_BEARER_TOKEN_BEDROCK)",
	New: NewBedrock,
}

// VertexInfo registers Anthropic's models on Google Vertex AI as "vertex":
// a model is vertex:MODEL (vertex:claude-sonnet-4-5@20250929).
var VertexInfo = llm.ProviderInfo{
	Name: "vertex",
	Doc: "Anthropic on Google Vertex AI: vertex:MODEL (Google application default credentials; " +
		"ANTHROPIC_VERTEX_PROJECT_ID or GOOGLE_CLOUD_PROJECT; CLOUD_ML_REGION, default global)",
	New: NewVertex,
}

// NewBedrock makes a provider for Amazon Bedrock through the SDK's own
// Bedrock support: requests go to /model/MODEL-ID/invoke, signed with AWS
// SigV4 from the default AWS configuration (or sent with
// AWS_BEARER_TOKEN_BEDROCK). --base-url replaces the regional endpoint (a
// VPC endpoint, a test server).
func NewBedrock(cfg llm.ProviderConfig) (llm.Provider, error) {
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		return nil, fmt.Errorf("bedrock: the AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("bedrock: no AWS region: set AWS_REGION (or a region in the AWS profile)")
	}
	// The documented Bedrock version of the Messages body (the SDK would
	// copy the first-party API's version header).
	opts := []option.RequestOption{option.WithMaxRetries(0), bedrock.WithConfig(awsCfg), option.WithJSONSet("anthropic_version", "bedrock-2023-05-31")}
	return &Provider{client: sdk.NewClient(cloudOptions(opts, cfg)...), name: "bedrock"}, nil
}

// NewVertex makes a provider for Google Vertex AI through the SDK's own
// Vertex support: requests go to
// /v1/projects/P/locations/R/publishers/anthropic/models/MODEL:rawPredict
// with a bearer token from Google's application default credentials
// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's, or the metadata server).
func NewVertex(cfg llm.ProviderConfig) (llm.Provider, error) {
	ctx := context.Background()
	creds, err := google.FindDefaultCredentials(ctx, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		return nil, fmt.Errorf("vertex: no Google credentials (set GOOGLE_APPLICATION_CREDENTIALS or run gcloud auth application-default login): %w", err)
	}
	project := cmp.Or(os.Getenv("ANTHROPIC_VERTEX_PROJECT_ID"), os.Getenv("GOOGLE_CLOUD_PROJECT"), creds.ProjectID)
	if project == "" {
		return nil, errors.New("vertex: no project: set ANTHROPIC_VERTEX_PROJECT_ID")
	}
	region := cmp.Or(os.Getenv("CLOUD_ML_REGION"), "global")
	opts := []option.RequestOption{option.WithMaxRetries(0), vertex.WithCredentials(ctx, region, project, creds), option.WithJSONSet("anthropic_version", "vertex-2023-10-16")}
	return &Provider{client: sdk.NewClient(cloudOptions(opts, cfg)...), name: "vertex"}, nil
}

// cloudOptions adds cfg's base URL and HTTP client after a cloud's own
// options, so that they replace the cloud's.
func cloudOptions(opts []option.RequestOption, cfg llm.ProviderConfig) []option.RequestOption {
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return opts
}
