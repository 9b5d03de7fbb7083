package llm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
)

// KeyVersion prefixes what is hashed into a cache key. Change it when the
// meaning of a request changes, so old entries are not mistaken for new
// ones.
const KeyVersion = "gavel-llm-key/1"

// keyMaterial is exactly what a cache key covers: what changes the answer.
// Credentials, base URL, timeouts and retry settings are left out on
// purpose: the same question to the same model is the same question wherever
// it is sent from.
type keyMaterial struct {
	Version     string          `json:"v"`
	Provider    string          `json:"provider"`
	Model       string          `json:"model"`
	Messages    []Message       `json:"messages"`
	Temperature *float64        `json:"temperature"`
	MaxTokens   int             `json:"max_tokens"`
	Seed        *int64          `json:"seed"`
	SchemaName  string          `json:"schema_name,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Sample      int             `json:"sample"`
}

// Key returns the request's cache key: the hex SHA-256 of the canonical JSON
// of its key material, with KeyVersion inside. It is 64 characters of
// [0-9a-f], which also suits batch APIs' custom_id rules.
func Key(req *Request) (string, error) {
	provider, name, err := ParseModel(req.Model)
	if err != nil {
		return "", err
	}
	km := keyMaterial{Version: KeyVersion, Provider: provider, Model: name, Messages: req.Messages,
		Temperature: req.Temperature, MaxTokens: req.MaxTokens, Seed: req.Seed, Sample: req.Sample}
	if km.Messages == nil {
		km.Messages = []Message{}
	}
	if req.Schema != nil {
		km.SchemaName = req.Schema.Name
		if km.Schema, err = canonical(req.Schema.JSON); err != nil {
			return "", fmt.Errorf("schema %s: %w", req.Schema.Name, err)
		}
	}
	b, err := json.Marshal(km)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// canonical compacts JSON with sorted object keys, so that formatting of a
// schema does not change a key. A run asks it of the same few schemas
// for every request, so each text's canonical form is kept.
func canonical(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	if c, ok := canonicalForms.Load(string(raw)); ok {
		return c.(json.RawMessage), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	c, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	canonicalForms.Store(string(raw), json.RawMessage(c))
	return c, nil
}

// canonicalForms holds the canonical form of each schema text seen.
var canonicalForms sync.Map
