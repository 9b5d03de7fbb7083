package llm

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

//go:embed prices.json
var defaultPrices []byte

// Price is the cost of a model's tokens in US dollars per million.
type Price struct {
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cached_input"`
	Output      float64 `json:"output"`
}

// PriceTable gives the cost of calls. It is a versioned file; users
// override entries with their own.
type PriceTable struct {
	Version       string           `json:"version"`
	Note          string           `json:"note,omitempty"`
	BatchDiscount float64          `json:"batch_discount"`
	Models        map[string]Price `json:"models"`
}

// DefaultPrices returns the price table gavel ships with.
func DefaultPrices() *PriceTable {
	var t PriceTable
	if err := json.Unmarshal(defaultPrices, &t); err != nil {
		panic("llm: embedded prices.json: " + err.Error())
	}
	return &t
}

// LoadPrices returns the default table with the entries of the file at path
// laid over it (its version and batch discount win when given).
func LoadPrices(path string) (*PriceTable, error) {
	t := DefaultPrices()
	if path == "" {
		return t, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	var over PriceTable
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&over); err != nil {
		return nil, fmt.Errorf("prices %s: %w", path, err)
	}
	for k, p := range over.Models {
		if p.Input < 0 || p.Output < 0 || p.CachedInput < 0 {
			return nil, fmt.Errorf("prices %s: model %q: negative price", path, k)
		}
		t.Models[k] = p
	}
	if over.Version != "" {
		t.Version = t.Version + "+" + over.Version
	}
	if over.BatchDiscount > 0 {
		t.BatchDiscount = over.BatchDiscount
	}
	return t, nil
}

// Lookup finds the price of a model ("provider:name"): an exact entry, else
// the longest prefix entry ending in *.
func (t *PriceTable) Lookup(model string) (Price, bool) {
	if t == nil {
		return Price{}, false
	}
	if p, ok := t.Models[model]; ok {
		return p, true
	}
	best, found := "", false
	var price Price
	for k, p := range t.Models {
		prefix, ok := strings.CutSuffix(k, "*")
		if ok && strings.HasPrefix(model, prefix) && len(prefix) >= len(best) {
			best, price, found = prefix, p, true
		}
	}
	return price, found
}

// Cost returns the dollar cost of a usage, and whether the model is priced.
func (t *PriceTable) Cost(model string, u Usage, batch bool) (float64, bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	cached := min(u.CachedTokens, u.InputTokens)
	c := (float64(u.InputTokens-cached)*p.Input + float64(cached)*p.CachedInput + float64(u.OutputTokens)*p.Output) / 1e6
	if batch && t.BatchDiscount > 0 {
		c *= t.BatchDiscount
	}
	return c, true
}
