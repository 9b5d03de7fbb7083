package project

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// The template init writes parses, names every key, and with its examples
// uncommented still parses: every example is a valid value.
func TestTemplate(t *testing.T) {
	if _, err := Parse("gavel.yaml", Template()); err != nil {
		t.Fatalf("the template: %v", err)
	}
	uncomment := regexp.MustCompile(`(?m)^# ( *[a-z_]+:)`)
	full := uncomment.ReplaceAll(Template(), []byte("$1"))
	f, err := Parse("gavel.yaml", full)
	if err != nil {
		t.Fatalf("the template with its examples:\n%s\n%v", full, err)
	}
	for _, k := range Keys {
		if _, ok := f.Values[k.Name]; !ok {
			t.Errorf("the template has no example of %s", k.Name)
		}
	}
	if got := f.Values["models.teacher"].Text; got != "anthropic:claude-sonnet-4-5,openai:gpt-4o" {
		t.Errorf("a list: %q", got)
	}
}

// Bad files are refused with the file, the line and the key.
func TestErrorsNameFileLineAndKey(t *testing.T) {
	for in, want := range map[string]string{
		"store: g.db\nmodels:\n  jduge: sim\n":         `p.yaml:3: unknown key "models.jduge" (known in models: judge, teacher, editor, generator, critic)`,
		"modle: sim\n":                                 `p.yaml:1: unknown key "modle" (known in the file's top level: store, models:,`,
		"limits:\n  rpm: fast\n":                       `p.yaml:2: limits.rpm: want a whole number, got "fast"`,
		"limits:\n  timeout: 5\n":                      `p.yaml:2: limits.timeout: want a duration`,
		"gate:\n  on_no_verdict: maybe\n":              `p.yaml:2: gate.on_no_verdict: want one of fail, pass`,
		"judge: [a, b]\n":                              `p.yaml:1: judge: want one value, not a list`,
		"openai_api_key: sk-123\n":                     `p.yaml:1: openai_api_key: secrets never go in the project file`,
		"gate:\n  token: abc\n":                        `p.yaml:2: gate.token: secrets never go`,
		"store: postgres://u:hunter2@db/gavel\n":       `p.yaml:1: store: a password in the store's URL is a secret`,
		"store: postgres://db/gavel?password=x\n":      `p.yaml:1: store: a password`,
		"split: main\nsplit: other\n":                  `p.yaml:2: split is given twice`,
		"- a\n":                                        `p.yaml:1: the project file is a mapping`,
		"resamples: 100\nlimits:\n  concurrency: ''\n": `p.yaml:3: limits.concurrency: empty value`,
	} {
		_, err := Parse("p.yaml", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", in, err, want)
		}
	}
	if f, err := Parse("p.yaml", []byte("store: postgres:///gavel?host=/var/run/postgresql\n")); err != nil || f.Values["store"].Text != "postgres:///gavel?host=/var/run/postgresql" {
		t.Errorf("a store URL without a password: %+v, %v", f, err)
	}
}

// A flag wins over the environment, the environment over the file, the
// file over the default; paths are relative to the file; a split alone
// takes the part the command uses.
func TestApplyPrecedence(t *testing.T) {
	f, err := Parse("team/gavel.yaml", []byte("store: data/g.db\nmodels:\n  judge: openai:gpt-4o\n  teacher: [sim, openai:x]\njudge: specs/j.yaml\nsplit: main\nlimits:\n  concurrency: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	flags := func(args ...string) *pflag.FlagSet {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.String("db", "./gavel.db", "")
		fs.String("model", "", "")
		fs.String("teacher-model", "", "")
		fs.String("judge", "passfail", "")
		fs.String("split", "", "")
		fs.Int("concurrency", 8, "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return fs
	}
	t.Setenv("GAVEL_MODEL", "")
	t.Setenv("GAVEL_DB", "")
	fs := flags("--concurrency", "5")
	got, err := Apply(f, "eval", flagSet(fs))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"store":              {"team/data/g.db", "team/gavel.yaml:1"},
		"models.judge":       {"openai:gpt-4o", "team/gavel.yaml:3"},
		"models.teacher":     {"sim,openai:x", "team/gavel.yaml:4"},
		"judge":              {"team/specs/j.yaml", "team/gavel.yaml:5"},
		"split":              {"main:test", "team/gavel.yaml:6"},
		"limits.concurrency": {"5", "flag --concurrency"},
		"limits.rpm":         {"", "default"},
	}
	for _, s := range got {
		if w, ok := want[s.Key]; ok && (s.Value != w[0] || s.Source != w[1]) {
			t.Errorf("%s = %q from %q; want %q from %q", s.Key, s.Value, s.Source, w[0], w[1])
		}
	}
	for name, v := range map[string]string{"db": "team/data/g.db", "model": "openai:gpt-4o", "split": "main:test", "concurrency": "5"} {
		if fs.Lookup(name).Value.String() != v {
			t.Errorf("--%s = %q, want %q", name, fs.Lookup(name).Value.String(), v)
		}
	}
	t.Setenv("GAVEL_MODEL", "anthropic:claude")
	fs = flags("--model", "anthropic:claude") // as the flag's default would be
	fs.Lookup("model").Changed = false
	got, _ = Apply(f, "calibrate", flagSet(fs))
	for _, s := range got {
		switch s.Key {
		case "models.judge":
			if s.Value != "anthropic:claude" || s.Source != "environment GAVEL_MODEL" {
				t.Errorf("with GAVEL_MODEL: %+v", s)
			}
		case "split":
			if s.Value != "main" {
				t.Errorf("calibrate's split: %+v", s)
			}
		}
	}
	// No file: nothing changes.
	fs = flags()
	if _, err := Apply(nil, "eval", flagSet(fs)); err != nil || fs.Lookup("concurrency").Value.String() != "8" {
		t.Fatalf("no file: %v", err)
	}
}

// flagSet adapts a pflag set, as cmd/gavel does.
func flagSet(fs *pflag.FlagSet) Lookup {
	return func(name string) *Flag {
		fl := fs.Lookup(name)
		if fl == nil {
			return nil
		}
		return &Flag{Changed: fl.Changed, Value: fl.Value.String(), Default: fl.DefValue, Set: fl.Value.Set}
	}
}

// judges: names the team's specs; a flag that names a judge may give the
// name (a --start list element by element); a listing's filter keeps it.
func TestJudgesByName(t *testing.T) {
	f, err := Parse("team/gavel.yaml", []byte("judges:\n  security: specs/security.yaml\njudge: security\n"))
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("judge", "passfail", "")
	fs.String("start", "", "")
	if err := fs.Parse([]string{"--start", "passfail,security"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(f, "calibrate", flagSet(fs)); err != nil {
		t.Fatal(err)
	}
	if got := fs.Lookup("judge").Value.String(); got != "team/specs/security.yaml" {
		t.Errorf("--judge from the file's name: %q", got)
	}
	if got := fs.Lookup("start").Value.String(); got != "passfail,team/specs/security.yaml" {
		t.Errorf("--start: %q", got)
	}
	list := pflag.NewFlagSet("t", pflag.ContinueOnError)
	list.String("judge", "", "")
	list.Parse([]string{"--judge", "security"})
	if _, err := Apply(f, "runs list", flagSet(list)); err != nil || list.Lookup("judge").Value.String() != "security" {
		t.Errorf("a filter: %q, %v", list.Lookup("judge").Value.String(), err)
	}
	if _, err := Parse("p.yaml", []byte("judges:\n  a: [x]\n")); err == nil || !strings.Contains(err.Error(), "p.yaml:2: judges.a") {
		t.Errorf("a bad judges entry: %v", err)
	}
}
