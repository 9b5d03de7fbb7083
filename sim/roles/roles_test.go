package roles_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/sim/roles"
)

// The roles stand for real models, so they must not reach the simulated
// world's truth: neither this package nor anything it imports may import
// package sim.
func TestRolesCannotReachTheWorld(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 5 {
		t.Fatalf("go list found only %v", deps)
	}
	for _, d := range deps {
		if d == "github.com/gavelhq/gavel/sim" {
			t.Fatal("sim/roles reaches package sim (the world's truth) through its imports")
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := roles.ParseConfig("")
	if err != nil || c.TeacherError != roles.DefaultTeacherError || c.RandomRules || c.SelfPreferring {
		t.Fatalf("%+v %v", c, err)
	}
	c, err = roles.ParseConfig("teacher-error=0.5,random-rules")
	if err != nil || c.TeacherError != 0.5 || !c.RandomRules {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"teacher-error=2", "teacher-error=x", "clever"} {
		if _, err := roles.ParseConfig(bad); err == nil || !strings.Contains(err.Error(), bad[:5]) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
