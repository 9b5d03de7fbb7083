package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// inDir runs gavel in dir with no --db, so that the store is the project
// file's, and no ambient GAVEL_* setting.
func inDir(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(gavelBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"GAVEL_DB=", "GAVEL_MODEL=", "GAVEL_CONFIG=", "GAVEL_PRICES="}, env...)...)
	return runCmd(t, cmd)
}

func mustInDir(t *testing.T, dir string, args ...string) string {
	t.Helper()
	r := inDir(t, dir, nil, args...)
	if r.code != 0 {
		t.Fatalf("gavel %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

type shownJSON struct {
	File     string `json:"file"`
	Command  string `json:"command"`
	Settings []struct {
		Key    string `json:"key"`
		Value  string `json:"value"`
		Source string `json:"source"`
	} `json:"settings"`
}

func (s shownJSON) get(key string) (string, string) {
	for _, st := range s.Settings {
		if st.Key == key {
			return st.Value, st.Source
		}
	}
	return "", "missing"
}

// A project file drives eval and calibrate with no model, judge, split or
// store flag; a flag overrides it, the environment too; a bad key is
// reported with the file and the line; config show names each value's
// source.
func TestProjectFileDrivesEvalAndCalibrate(t *testing.T) {
	dir := t.TempDir()
	file := "# the team's settings\nstore: data/gavel.db\nmodels:\n  judge: sim\n  teacher: sim\njudge: passfail\nsplit: main\nresamples: 200\ncalibrate:\n  max_iter: 1\n"
	if err := os.WriteFile(filepath.Join(dir, "gavel.yaml"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "data"), 0o755)
	mustInDir(t, dir, "sim", "records", "--n", "120", "--seed", "4", "-o", "world.jsonl")
	mustInDir(t, dir, "ingest", "world.jsonl")
	mustInDir(t, dir, "split", "main", "--exclude-status", "draft")
	if _, err := os.Stat(filepath.Join(dir, "data", "gavel.db")); err != nil {
		t.Fatalf("the store is not the project file's: %v", err)
	}
	var ev struct {
		Model, Judge, Split string
	}
	decodeJSON(t, mustInDir(t, dir, "eval", "--json"), &ev)
	if ev.Model != "sim" || ev.Judge != "passfail" || ev.Split != "main:test" {
		t.Fatalf("eval from the project file: %+v", ev)
	}
	var cal struct {
		Split string `json:"split"`
	}
	decodeJSON(t, mustInDir(t, dir, "calibrate", "--json"), &cal)
	if cal.Split != "main" {
		t.Fatalf("calibrate from the project file: %+v", cal)
	}
	// A flag wins.
	decodeJSON(t, mustInDir(t, dir, "eval", "--model", "sim:family=b", "--split", "main:val", "--json"), &ev)
	if ev.Model != "sim:family=b" || ev.Split != "main:val" {
		t.Fatalf("flags over the file: %+v", ev)
	}
	// config show says where each value came from.
	var shown shownJSON
	decodeJSON(t, mustInDir(t, dir, "config", "show", "eval", "--json"), &shown)
	for key, want := range map[string][2]string{
		"store":              {filepath.Join("data", "gavel.db"), "gavel.yaml:2"},
		"models.judge":       {"sim", "gavel.yaml:4"},
		"split":              {"main:test", "gavel.yaml:7"},
		"resamples":          {"200", "gavel.yaml:8"},
		"limits.concurrency": {"8", "default"},
	} {
		if v, src := shown.get(key); v != want[0] || src != want[1] {
			t.Errorf("config show eval: %s = %q from %q; want %q from %q", key, v, src, want[0], want[1])
		}
	}
	r := inDir(t, dir, []string{"GAVEL_MODEL=sim:family=c"}, "--db", "other.db", "config", "show", "eval", "--json")
	decodeJSON(t, r.stdout, &shown)
	if v, src := shown.get("models.judge"); v != "sim:family=c" || src != "environment GAVEL_MODEL" {
		t.Errorf("with GAVEL_MODEL: %q from %q", v, src)
	}
	if v, src := shown.get("store"); v != "other.db" || src != "flag --db" {
		t.Errorf("with --db: %q from %q", v, src)
	}
	// A bad key or value: exit 2, the file and the line named, nothing run.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("store: data/gavel.db\nmodels:\n  jduge: sim\n"), 0o644)
	if r := inDir(t, dir, nil, "--config", bad, "eval"); r.code != 2 || !strings.Contains(r.stderr, bad+`:3: unknown key "models.jduge"`) {
		t.Fatalf("a bad key: %+v", r)
	}
	os.WriteFile(bad, []byte("limits:\n  rpm: fast\n"), 0o644)
	if r := inDir(t, dir, []string{"GAVEL_CONFIG=" + bad}, "eval"); r.code != 2 || !strings.Contains(r.stderr, bad+`:2: limits.rpm: want a whole number, got "fast"`) {
		t.Fatalf("a bad value through GAVEL_CONFIG: %+v", r)
	}
	// init writes a commented file that every command reads, and keeps an
	// existing one.
	fresh := t.TempDir()
	mustInDir(t, fresh, "init")
	if r := inDir(t, fresh, nil, "init"); r.code != 2 || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("init over a file: %+v", r)
	}
	decodeJSON(t, mustInDir(t, fresh, "config", "show", "--json"), &shown)
	// A broken file does not stop init --force from replacing it.
	os.WriteFile(filepath.Join(fresh, "gavel.yaml"), []byte("modle: x\n"), 0o644)
	if r := inDir(t, fresh, nil, "records", "stats"); r.code != 2 {
		t.Fatalf("a broken project file: %+v", r)
	}
	mustInDir(t, fresh, "init", "--force")
	if v, src := shown.get("store"); shown.File != "gavel.yaml" || v != "gavel.db" || !strings.HasPrefix(src, "gavel.yaml:") {
		t.Fatalf("the init file: %+v", shown)
	}
}
