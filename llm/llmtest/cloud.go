package llmtest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Cloud is what a cloud fake requires of a request, and the credentials
// that meet it.
type Cloud struct {
	// Azure: the api-key header.
	AzureKey string
	// Bedrock: requests signed with AWS SigV4 by this key pair for the
	// service "bedrock" in Region.
	AWSKeyID, AWSSecret, Region string
	// Vertex: the bearer token the fake's token endpoint hands out for a
	// JWT signed by the service account key, and the project in the path.
	Token, Project string
	key            *rsa.PrivateKey
	// Refused counts requests refused for their credentials or shape.
	Refused int
}

// NewAzure starts a fake Azure OpenAI resource: POST
// /openai/deployments/DEPLOYMENT/chat/completions?api-version=V with the
// key in the api-key header and no Authorization header; the deployment
// in the path is the model. Anything else is refused as Azure refuses it
// (401 with Azure's error body, 404 for a missing api-version). Its base
// URL for the SDK is URL.
func NewAzure(key string) *Server {
	s := &Server{kind: "openai", RetryAfter: "1", SlowDelay: 200 * time.Millisecond, Cloud: &Cloud{AzureKey: key}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /openai/deployments/{model}/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Api-Key") != key || r.Header.Get("Authorization") != "":
			s.refuse(w, 401, `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}`)
		case r.URL.Query().Get("api-version") == "":
			s.refuse(w, 404, `{"error":{"code":"404","message":"Resource not found"}}`)
		default:
			s.serveOpenAI(w, r)
		}
	})
	s.Server = httptest.NewServer(mux)
	return s
}

// NewBedrock starts a fake Amazon Bedrock runtime: POST
// /model/MODEL-ID/invoke with an Anthropic Messages body that carries
// anthropic_version "bedrock-2023-05-31" and no model, signed with SigV4
// (the signature is computed again here and must match). Its base URL
// for the SDK is URL.
func NewBedrock(keyID, secret, region string) *Server {
	s := &Server{kind: "anthropic", RetryAfter: "1", SlowDelay: 200 * time.Millisecond, Cloud: &Cloud{AWSKeyID: keyID, AWSSecret: secret, Region: region}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /model/{model}/invoke", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := s.Cloud.checkSigV4(r, body); err != nil {
			w.Header().Set("X-Amzn-Errortype", "InvalidSignatureException")
			s.refuse(w, 403, fmt.Sprintf(`{"message":%q}`, err.Error()))
			return
		}
		if err := checkCloudBody(body, "bedrock-2023-05-31"); err != nil {
			w.Header().Set("X-Amzn-Errortype", "ValidationException")
			s.refuse(w, 400, fmt.Sprintf(`{"message":%q}`, err.Error()))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.serveAnthropic(w, r)
	})
	s.Server = httptest.NewServer(mux)
	return s
}

// NewVertex starts a fake Vertex AI endpoint and the OAuth token
// endpoint of a fake service account: POST /token exchanges a JWT signed
// by the account's key for Token; POST
// /v1/projects/PROJECT/locations/REGION/publishers/anthropic/models/MODEL:rawPredict
// wants "Authorization: Bearer TOKEN" and a body with anthropic_version
// "vertex-2023-10-16" and no model. ServiceAccountJSON is the key file
// to point GOOGLE_APPLICATION_CREDENTIALS at. Its base URL for the SDK is
// URL.
func NewVertex(project string) *Server {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	s := &Server{kind: "anthropic", RetryAfter: "1", SlowDelay: 200 * time.Millisecond, Cloud: &Cloud{Token: "ya29.fake-vertex-token", Project: project, key: key}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || verifyJWT(r.PostForm.Get("assertion"), &key.PublicKey) != nil {
			s.refuse(w, 400, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
			return
		}
		writeJSON(w, 200, []byte(fmt.Sprintf(`{"access_token":%q,"token_type":"Bearer","expires_in":3599}`, s.Cloud.Token)))
	})
	mux.HandleFunc("POST /v1/projects/{project}/locations/{region}/publishers/anthropic/models/{spec}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		model, ok := strings.CutSuffix(r.PathValue("spec"), ":rawPredict")
		switch {
		case r.Header.Get("Authorization") != "Bearer "+s.Cloud.Token:
			s.refuse(w, 401, `{"error":{"code":401,"message":"Request had invalid authentication credentials. Expected OAuth 2 access token.","status":"UNAUTHENTICATED"}}`)
		case r.PathValue("project") != project || !ok:
			s.refuse(w, 404, `{"error":{"code":404,"message":"Publisher model not found.","status":"NOT_FOUND"}}`)
		case checkCloudBody(body, "vertex-2023-10-16") != nil:
			s.refuse(w, 400, fmt.Sprintf(`{"error":{"code":400,"message":%q,"status":"INVALID_ARGUMENT"}}`, checkCloudBody(body, "vertex-2023-10-16").Error()))
		default:
			r.SetPathValue("model", model)
			r.Body = io.NopCloser(bytes.NewReader(body))
			s.serveAnthropic(w, r)
		}
	})
	s.Server = httptest.NewServer(mux)
	return s
}

// ServiceAccountJSON is a Google service account key file whose token
// endpoint is the fake's.
func (s *Server) ServiceAccountJSON() []byte {
	der := x509.MarshalPKCS1PrivateKey(s.Cloud.key)
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": s.Cloud.Project, "private_key_id": "fake-key-1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der})),
		"client_email": "gavel-test@" + s.Cloud.Project + ".iam.gserviceaccount.com", "client_id": "1",
		"token_uri": s.URL + "/token",
	})
	return b
}

func (s *Server) refuse(w http.ResponseWriter, status int, body string) {
	s.mu.Lock()
	s.Cloud.Refused++
	s.mu.Unlock()
	writeJSON(w, status, []byte(body))
}

// checkCloudBody checks what Bedrock and Vertex want of a Messages body:
// their own anthropic_version, and the model in the path alone.
func checkCloudBody(body []byte, version string) error {
	var b map[string]json.RawMessage
	if err := json.Unmarshal(body, &b); err != nil {
		return err
	}
	if v := string(b["anthropic_version"]); v != `"`+version+`"` {
		return fmt.Errorf("anthropic_version: want %q, got %s", version, v)
	}
	if _, has := b["model"]; has {
		return fmt.Errorf("extraneous key [model] is not permitted")
	}
	return nil
}

// checkSigV4 computes the request's SigV4 signature again from the
// headers it says it signed, and compares.
func (c *Cloud) checkSigV4(r *http.Request, body []byte) error {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return fmt.Errorf("missing Authentication Token")
	}
	fields := map[string]string{}
	for _, f := range strings.Split(rest, ", ") {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[0] != c.AWSKeyID || scope[2] != c.Region || scope[3] != "bedrock" || scope[4] != "aws4_request" {
		return fmt.Errorf("the security token included in the request is invalid (credential scope %q)", fields["Credential"])
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %v", err)
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
	again.ContentLength = int64(len(body))
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		if h != "host" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: c.AWSKeyID, SecretAccessKey: c.AWSSecret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "bedrock", c.Region, at); err != nil {
		return err
	}
	if again.Header.Get("Authorization") != auth {
		return fmt.Errorf("the request signature we calculated does not match the signature you provided")
	}
	return nil
}

// verifyJWT checks an RS256 JWT's signature.
func verifyJWT(token string, pub *rsa.PublicKey) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fmt.Errorf("not a JWT")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig)
}
