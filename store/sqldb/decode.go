package sqldb

import gojson "github.com/goccy/go-json"

// decodeStored decodes JSON this store wrote itself (a record's body, a
// cached answer), on the paths that read it in bulk: goccy/go-json decodes
// a stored record five times faster than encoding/json (4.4 against 22.8
// us, BENCHMARKS.md), into the same values (TestStoredDecodesAsEncodingJSON).
// What a user gives gavel is decoded by encoding/json, whose errors name
// the field.
func decodeStored(data []byte, v any) error { return gojson.Unmarshal(data, v) }
