package deployid

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // a fingerprint, not a security boundary; 40 hex chars as upstream
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// ComputeID returns the deployment ID: the lowercase hex SHA-1 of CanonicalJSON.
// c.ID itself is ignored, so ComputeID on a config with its ID set is stable.
func (c *Config) ComputeID() string {
	sum := sha1.Sum(c.mustCanonical(false)) //nolint:gosec
	return hex.EncodeToString(sum[:])
}

// CanonicalJSON is exactly what the ID hashes: the config without its ID, with
// empty additionalProperties entries dropped, as compact JSON with the keys of
// every object sorted (by their encoded bytes) and no HTML escaping.
func (c *Config) CanonicalJSON() []byte { return c.mustCanonical(false) }

// JSON is the config in canonical form with its id, as stored in
// status.targetDeploymentConfig and passed to the install-strategy Job.
func (c *Config) JSON() string { return string(c.mustCanonical(true)) }

// mustCanonical panics only if encoding/json cannot encode Config, which its types
// (strings, maps of strings, API structs of plain data) rule out; no input can
// trigger it.
func (c *Config) mustCanonical(withID bool) []byte {
	raw, _, err := c.canonical(withID)
	if err != nil {
		panic(fmt.Sprintf("deployid: Config is not JSON-encodable: %v", err))
	}
	return raw
}

// canonical also reports whether some text in c is not valid UTF-8.
func (c *Config) canonical(withID bool) ([]byte, bool, error) {
	hashed := *c
	if !withID {
		hashed.ID = ""
	}
	hashed.AdditionalProperties = withoutEmptyValues(c.AdditionalProperties)
	var typed bytes.Buffer
	enc := json.NewEncoder(&typed)
	enc.SetEscapeHTML(false) // keep "<" and "&" in patches readable in -o json and status
	if err := enc.Encode(&hashed); err != nil {
		return nil, false, err
	}
	// Structs are encoded in declaration order; sorting every object's keys means
	// reordering Go fields can never change an ID.
	return sortedJSON(bytes.TrimSuffix(typed.Bytes(), []byte("\n")))
}

// withoutEmptyValues drops entries whose value is "": for additionalProperties an
// empty value means the same as no key (see flagOn).
func withoutEmptyValues(m map[string]string) map[string]string {
	hasEmpty := false
	for _, v := range m {
		if v == "" {
			hasEmpty = true
			break
		}
	}
	if !hasEmpty {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// Parse reads a config as JSON (TARGET_DEPLOYMENT_CONFIG, or a status field) and
// checks that its id matches its content, so a Job never renders a strategy for a
// config other than the one its name and annotations claim. Unknown fields are an
// error: they would be lost, and with them the match between id and content.
func Parse(jsonText string) (*Config, error) {
	if strings.TrimSpace(jsonText) == "" {
		return nil, fmt.Errorf("deployment config: no config provided")
	}
	dec := json.NewDecoder(strings.NewReader(jsonText))
	dec.DisallowUnknownFields()
	cfg := &Config{}
	if err := dec.Decode(cfg); err != nil {
		return nil, fmt.Errorf("deployment config: invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("deployment config: invalid JSON: unexpected data after the config")
	}
	if cfg.ID == "" {
		return nil, fmt.Errorf("deployment config: no id")
	}
	if got := cfg.ComputeID(); got != cfg.ID {
		return nil, fmt.Errorf("deployment config: id %q does not match the content (computed %q)", cfg.ID, got)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}
