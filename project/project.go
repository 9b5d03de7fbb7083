// Package project reads a team's project file, gavel.yaml: the store, the
// model of each role, base URLs, the judge, its inputs, the split, the
// gate's thresholds, prices and limits, kept in the repository so that
// they need not be typed on every command line.
//
// A setting fills the flags it names on the commands that have them, unless
// the flag was given (flags win) or the flag's environment variable is set
// (the environment wins over the file). Unknown keys, bad values and
// secrets are errors that name the file, the line and the key; nothing is
// applied from a file with an error.
package project

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// FileName is the project file looked for in the working folder.
const FileName = "gavel.yaml"

// EnvVar names the project file instead of the working folder's.
const EnvVar = "GAVEL_CONFIG"

// kind is what a key's value must be.
type kind int

const (
	text kind = iota
	list      // a YAML list or a comma-separated string, given to the flag comma-joined
	whole
	number
	duration
	path // a file path, relative to the project file's folder
	judgeRef
	storeRef
	choice
)

// Key is one setting of the project file.
type Key struct {
	Name string
	// Flags are the flags it fills, on every command that has one of them
	// (except the commands in Except).
	Flags  []string
	Except []string
	// Env, when set in the environment, wins over the file (it is the
	// flags' default).
	Env     string
	Kind    kind
	Choices []string
	Doc     string
}

// Keys are the project file's settings, in the order `config show` and
// `init` list them.
var Keys = []Key{
	{Name: "store", Flags: []string{"db"}, Env: "GAVEL_DB", Kind: storeRef, Doc: "the store: a SQLite file (relative to this file) or postgres://HOST/DB (no password: PGPASSWORD or ~/.pgpass)"},
	{Name: "models.judge", Flags: []string{"model", "judge-model"}, Except: append([]string{"bench build"}, filters...), Env: "GAVEL_MODEL", Doc: "the judge's model (PROVIDER:NAME); also the default of every other role (not of bench build, whose model-applied rules are asked for on its command line)"},
	{Name: "models.teacher", Flags: []string{"teacher-model"}, Kind: list, Doc: "the teacher's model, or several (a panel)"},
	{Name: "models.editor", Flags: []string{"editor-model"}, Doc: "the model that proposes and applies prompt edits"},
	{Name: "models.generator", Flags: []string{"generator"}, Doc: "ACR's generator"},
	{Name: "models.critic", Flags: []string{"critic-model"}, Doc: "ACR's critic"},
	{Name: "base_urls.judge", Flags: []string{"base-url", "judge-base-url"}, Doc: "the judge's server (an OpenAI-compatible server, a proxy, an Azure endpoint)"},
	{Name: "base_urls.generator", Flags: []string{"generator-base-url"}, Doc: "the generator's server"},
	{Name: "base_urls.critic", Flags: []string{"critic-base-url"}, Doc: "the critic's server"},
	{Name: "judge", Flags: []string{"judge"}, Except: filters, Kind: judgeRef, Doc: "the judge: a built-in (passfail, predict, rubric5, ...) or a YAML spec (relative to this file)"},
	{Name: "inputs", Flags: []string{"inputs"}, Kind: list, Doc: "what the judge sees, e.g. [task, candidate, context.files]"},
	{Name: "split", Flags: []string{"split"}, Except: filters, Doc: "the split's name: calibrate uses all its parts, teach and noise its train part, judge, eval and drift its test part"},
	{Name: "max_input_chars", Flags: []string{"max-input-chars"}, Kind: whole, Doc: "cut each input over this many characters"},
	{Name: "resamples", Flags: []string{"resamples"}, Kind: whole, Doc: "bootstrap resamples of every interval"},
	{Name: "calibrate.max_iter", Flags: []string{"max-iter"}, Kind: whole, Doc: "iterations of the edit loop at most"},
	{Name: "calibrate.teacher_quorum", Flags: []string{"teacher-quorum"}, Doc: "with a panel: all, majority or a number"},
	{Name: "calibrate.min_fail_recall", Flags: []string{"min-fail-recall"}, Kind: number, Doc: "no version under this validation fail recall is selected"},
	{Name: "calibrate.min_pass_recall", Flags: []string{"min-pass-recall"}, Kind: number, Doc: "no version under this validation pass recall is selected"},
	{Name: "gate.fail_under_pi", Flags: []string{"fail-under-pi"}, Kind: number, Doc: "eval as a CI gate: exit 1 under this Scott's pi"},
	{Name: "gate.server", Flags: []string{"server"}, Env: "GAVEL_SERVER", Doc: "the gavel service the gate asks"},
	{Name: "gate.on_no_verdict", Flags: []string{"on-no-verdict"}, Kind: choice, Choices: []string{"fail", "pass"}, Doc: "without a verdict exit 4 (unset), or as a failure or a pass"},
	{Name: "prices", Flags: []string{"prices"}, Env: "GAVEL_PRICES", Kind: path, Doc: "a price table overriding the built-in one (JSON, relative to this file)"},
	{Name: "limits.concurrency", Flags: []string{"concurrency"}, Kind: whole, Doc: "model calls in flight per provider"},
	{Name: "limits.rpm", Flags: []string{"rpm"}, Kind: whole, Doc: "requests per minute per provider"},
	{Name: "limits.tpm", Flags: []string{"tpm"}, Kind: whole, Doc: "tokens per minute per provider"},
	{Name: "limits.max_attempts", Flags: []string{"max-attempts"}, Kind: whole, Doc: "HTTP calls per request, retries included"},
	{Name: "limits.timeout", Flags: []string{"timeout"}, Except: []string{"exec", "gate", "report-outcome"}, Kind: duration, Doc: "time limit of one model call, e.g. 2m"},
	{Name: "limits.max_cost", Flags: []string{"max-cost"}, Kind: number, Doc: "stop before spending more than this many US dollars"},
}

// filters are the commands whose --model, --judge or --split narrows what
// they show or remove rather than naming what they use: the file never
// fills those.
var filters = []string{"records list", "records stats", "records export", "runs list", "prompts list", "cache clear", "promote", "gate", "report-outcome"}

// partOf is the split part each command's --split takes when the file
// names a split alone.
var partOf = map[string]string{"teach": "train", "noise": "train", "judge": "test", "eval": "test", "drift": "test"}

// secretWords are key names that would hold a secret.
var secretWords = []string{"key", "token", "secret", "password"}

// Value is a setting read from the file.
type Value struct {
	Key  *Key
	Text string // as the flag takes it
	Line int
}

// File is a read project file.
type File struct {
	Path   string
	Values map[string]Value
	// Judges names the team's judge specs (judges: {NAME: PATH}): a flag
	// that names a judge (--judge, --compare, --start) may give NAME.
	Judges map[string]string
}

// judgeFlags are the flags that name judges, a list for --start.
var judgeFlags = []string{"judge", "compare", "start"}

// Find names the project file: --config when given, else GAVEL_CONFIG,
// else gavel.yaml in the working folder when there is one; "" when there
// is none.
func Find(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if p := os.Getenv(EnvVar); p != "" {
		return p, nil
	}
	if _, err := os.Stat(FileName); err == nil {
		return FileName, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return "", nil
}

// Load reads and checks a project file.
func Load(name string) (*File, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("project file: %w", err)
	}
	return Parse(name, b)
}

// Parse checks a project file's content: every key known, every value of
// its kind, no secret.
func Parse(name string, b []byte) (*File, error) {
	f := &File{Path: name, Values: map[string]Value{}}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(b)).Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return f, nil
		}
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(doc.Content) == 0 {
		return f, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: the project file is a mapping of keys (store:, models:, ...)", name, root.Line)
	}
	if err := f.walk(root, ""); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *File) walk(m *yaml.Node, prefix string) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn, vn := m.Content[i], m.Content[i+1]
		name := prefix + kn.Value
		if isSecret(kn.Value) {
			return fmt.Errorf("%s:%d: %s: secrets never go in the project file: set them in the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, GAVEL_TOKEN, ...)", f.Path, kn.Line, name)
		}
		if _, dup := f.Values[name]; dup {
			return fmt.Errorf("%s:%d: %s is given twice", f.Path, kn.Line, name)
		}
		if name == "judges" {
			if err := f.judges(vn); err != nil {
				return err
			}
			continue
		}
		k := lookup(name)
		if k == nil && vn.Kind == yaml.MappingNode && isGroup(name) {
			if err := f.walk(vn, name+"."); err != nil {
				return err
			}
			continue
		}
		if k == nil {
			return fmt.Errorf("%s:%d: unknown key %q (%s)", f.Path, kn.Line, name, known(prefix))
		}
		v, err := f.value(k, vn)
		if err != nil {
			return fmt.Errorf("%s:%d: %s: %v", f.Path, vn.Line, name, err)
		}
		f.Values[name] = Value{Key: k, Text: v, Line: vn.Line}
	}
	return nil
}

// judges reads the judges: mapping of names to spec paths.
func (f *File) judges(m *yaml.Node) error {
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d: judges: a mapping of names to spec files (security: specs/security.yaml)", f.Path, m.Line)
	}
	f.Judges = map[string]string{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn, vn := m.Content[i], m.Content[i+1]
		if vn.Kind != yaml.ScalarNode || strings.TrimSpace(vn.Value) == "" {
			return fmt.Errorf("%s:%d: judges.%s: want the path of a judge spec", f.Path, vn.Line, kn.Value)
		}
		if _, dup := f.Judges[kn.Value]; dup {
			return fmt.Errorf("%s:%d: judges.%s is given twice", f.Path, kn.Line, kn.Value)
		}
		f.Judges[kn.Value] = f.rel(strings.TrimSpace(vn.Value))
	}
	return nil
}

// resolveJudges writes the judge names a flag holds that the file's
// judges: names as their spec paths.
func (f *File) resolveJudges(lookupFlag Lookup) error {
	if f == nil || len(f.Judges) == 0 {
		return nil
	}
	for _, name := range judgeFlags {
		fl := lookupFlag(name)
		if fl == nil || fl.Value == "" {
			continue
		}
		parts := strings.Split(fl.Value, ",")
		changed := false
		for i, p := range parts {
			if path, ok := f.Judges[strings.TrimSpace(p)]; ok {
				parts[i], changed = path, true
			}
		}
		if changed {
			if err := fl.Set(strings.Join(parts, ",")); err != nil {
				return UsageError{fmt.Errorf("--%s: %v", name, err)}
			}
		}
	}
	return nil
}

// value checks a value node against its key's kind and writes it as the
// flag takes it.
func (f *File) value(k *Key, n *yaml.Node) (string, error) {
	if n.Kind == yaml.SequenceNode {
		if k.Kind != list {
			return "", errors.New("want one value, not a list")
		}
		var parts []string
		for _, e := range n.Content {
			if e.Kind != yaml.ScalarNode || strings.TrimSpace(e.Value) == "" {
				return "", fmt.Errorf("line %d: want a name", e.Line)
			}
			parts = append(parts, strings.TrimSpace(e.Value))
		}
		return strings.Join(parts, ","), nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", errors.New("want a value")
	}
	v := strings.TrimSpace(n.Value)
	if v == "" {
		return "", errors.New("empty value (leave the key out for the default)")
	}
	switch k.Kind {
	case whole:
		if _, err := strconv.Atoi(v); err != nil {
			return "", fmt.Errorf("want a whole number, got %q", v)
		}
	case number:
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return "", fmt.Errorf("want a number, got %q", v)
		}
	case duration:
		if _, err := time.ParseDuration(v); err != nil {
			return "", fmt.Errorf("want a duration such as 90s or 5m, got %q", v)
		}
	case choice:
		for _, c := range k.Choices {
			if v == c {
				return v, nil
			}
		}
		return "", fmt.Errorf("want one of %s, got %q", strings.Join(k.Choices, ", "), v)
	case path:
		return f.rel(v), nil
	case judgeRef:
		if strings.HasSuffix(v, ".yaml") || strings.HasSuffix(v, ".yml") || strings.ContainsRune(v, '/') {
			return f.rel(v), nil
		}
		// A name: a built-in, or one of judges: (resolved when applied).
	case storeRef:
		if strings.Contains(v, "://") {
			u, err := url.Parse(v)
			if err != nil {
				return "", err
			}
			if _, has := u.User.Password(); has || u.Query().Has("password") {
				return "", errors.New("a password in the store's URL is a secret: use PGPASSWORD or ~/.pgpass")
			}
			return v, nil
		}
		return f.rel(v), nil
	}
	return v, nil
}

// rel resolves a path relative to the project file's folder.
func (f *File) rel(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(f.Path), p)
}

func lookup(name string) *Key {
	for i := range Keys {
		if Keys[i].Name == name {
			return &Keys[i]
		}
	}
	return nil
}

func isGroup(name string) bool {
	for _, k := range Keys {
		if strings.HasPrefix(k.Name, name+".") {
			return true
		}
	}
	return false
}

// known lists the keys that may stand where an unknown one stood.
func known(prefix string) string {
	var names []string
	seen := map[string]bool{}
	for _, k := range Keys {
		rest, ok := strings.CutPrefix(k.Name, prefix)
		if !ok {
			continue
		}
		if g, _, nested := strings.Cut(rest, "."); nested {
			rest = g + ":"
		}
		if !seen[rest] {
			seen[rest] = true
			names = append(names, rest)
		}
	}
	where := "the file's top level"
	if prefix != "" {
		where = strings.TrimSuffix(prefix, ".")
	}
	return "known in " + where + ": " + strings.Join(names, ", ")
}

func isSecret(key string) bool {
	lower := strings.ToLower(key)
	for _, w := range secretWords {
		if lower == w || strings.HasSuffix(lower, "_"+w) || strings.HasPrefix(lower, w+"_") {
			return true
		}
	}
	return false
}

// Setting is one key's merged value and where it came from.
type Setting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
	// Flags are the flags it fills; Used says whether the command has one.
	Flags []string `json:"flags"`
	Used  bool     `json:"used"`
}

// Flag is what Apply needs of one of a command's flags (cmd/gavel
// adapts its flag library's).
type Flag struct {
	Changed        bool
	Value, Default string
	Set            func(string) error
}

// Lookup finds a command's flag by name, or nil.
type Lookup func(name string) *Flag

// UsageError is a project file's mistake (a bad key or value, a missing
// file): the command's exit code 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Open reads the project file (configFlag, GAVEL_CONFIG or the working
// folder's), or nil when there is none.
func Open(configFlag string) (*File, error) {
	path, err := Find(configFlag)
	if err == nil && path != "" {
		var f *File
		if f, err = Load(path); err == nil {
			return f, nil
		}
	}
	if err != nil {
		return nil, UsageError{err}
	}
	return nil, nil
}

// Apply fills command's flags (fs, the command's and its inherited
// ones) from the file, where neither the flag nor its environment
// variable was given, and returns every key's setting as command sees
// it. command is the command's name (eval, calibrate, ...). A nil file
// applies nothing.
func Apply(f *File, command string, lookupFlag Lookup) ([]Setting, error) {
	var out []Setting
	for i := range Keys {
		k := &Keys[i]
		s := Setting{Key: k.Name, Flags: k.Flags, Source: "default"}
		for _, name := range k.Flags {
			fl := lookupFlag(name)
			if fl == nil || contains(k.Except, command) {
				continue
			}
			s.Used = true
			switch v, inFile := f.get(k.Name); {
			case fl.Changed:
				s.Value, s.Source = fl.Value, "flag --"+name
			case k.Env != "" && os.Getenv(k.Env) != "":
				s.Value, s.Source = os.Getenv(k.Env), "environment "+k.Env
			case inFile:
				text := v.Text
				if part := partOf[command]; k.Name == "split" && part != "" && !strings.Contains(text, ":") {
					text += ":" + part
				}
				if err := fl.Set(text); err != nil {
					return nil, UsageError{fmt.Errorf("%s:%d: %s: %v", f.Path, v.Line, k.Name, err)}
				}
				s.Value, s.Source = text, fmt.Sprintf("%s:%d", f.Path, v.Line)
			default:
				s.Value = fl.Default
			}
		}
		if s.Source == "default" && s.Value == "" {
			if v, ok := f.get(k.Name); ok {
				// A key this command has no flag for: shown as the file
				// has it.
				s.Value, s.Source = v.Text, fmt.Sprintf("%s:%d", f.Path, v.Line)
			} else if k.Env != "" && os.Getenv(k.Env) != "" {
				s.Value, s.Source = os.Getenv(k.Env), "environment "+k.Env
			}
		}
		out = append(out, s)
	}
	if contains(filters, command) {
		return out, nil
	}
	return out, f.resolveJudges(lookupFlag)
}

func (f *File) get(name string) (Value, bool) {
	if f == nil {
		return Value{}, false
	}
	v, ok := f.Values[name]
	return v, ok
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// Names lists the file's keys, sorted.
func (f *File) Names() []string {
	var names []string
	for n := range f.Values {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

//go:embed gavel.yaml.tmpl
var template []byte

// Template is the commented project file `gavel init` writes.
func Template() []byte { return append([]byte(nil), template...) }
