package launch

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// randomString draws from the characters netstrings must survive: their
// own separators, digits, newlines, '=' and non-ASCII.
func randomString(r *rand.Rand) string {
	const alphabet = "ab:,0123456789\n\t =é漢"
	rs := []rune(alphabet)
	n := r.IntN(12)
	var b strings.Builder
	for range n {
		b.WriteRune(rs[r.IntN(len(rs))])
	}
	return b.String()
}

func randomConfig(r *rand.Rand) Config {
	c := Config{Path: "/" + randomString(r), Dir: randomString(r), UID: r.IntN(70000) - 1, GID: r.IntN(70000) - 1,
		Mounts: r.IntN(2) == 0, CgroupP: randomString(r), Init: r.IntN(2) == 0, Self: randomString(r), Nest: r.IntN(2) == 0, Direct: r.IntN(2) == 0, Hide: randomString(r), Disk: r.Int64N(1 << 40), DiskCap: r.IntN(2) == 0,
		InCgroup: r.IntN(2) == 0, PIDNS: r.IntN(2) == 0, DidMounts: r.IntN(2) == 0, OwnProc: r.IntN(2) == 0}
	for range r.IntN(7) {
		c.Limits = append(c.Limits, Rlimit{Name: randomString(r), Resource: r.IntN(16), Value: r.Uint64(), UnlessCgroup: r.IntN(2) == 0})
	}
	c.Argv = []string{randomString(r)}
	for range r.IntN(5) {
		c.Argv = append(c.Argv, randomString(r))
	}
	for range r.IntN(5) {
		c.Env = append(c.Env, randomString(r))
	}
	return c
}

// Every configuration reads back as it was written.
func TestConfigRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		c := randomConfig(r)
		got, ok := DecodeConfig(c.Encode())
		if !ok {
			t.Fatalf("%d: %q does not decode", i, c.Encode())
		}
		if c.Env == nil {
			c.Env = []string{}
		}
		if !reflect.DeepEqual(*got, c) {
			t.Fatalf("%d: round trip\n got %+v\nwant %+v", i, *got, c)
		}
	}
}

// A hand-worked encoding: the format is a contract between two binaries
// that may come from different builds (gavel and gavel-sandbox).
func TestConfigEncoding(t *testing.T) {
	c := Config{Path: "/bin/true", Argv: []string{"true", "a,b"}, Env: []string{"X=1:2"}, Dir: "/w", UID: 65534, GID: -1,
		Mounts: true, Limits: []Rlimit{{Name: "cpu", Resource: 0, Value: 20}}, Init: true, Self: "/s", Direct: true, PIDNS: true}
	want := "1:3,9:/bin/true,2:/w,5:65534,2:-1,1:1,0:,1:1,2:/s,1:0,1:1,0:,1:0,1:0,1:0,1:1,1:0,1:0,1:1,3:cpu,1:0,2:20,1:0,1:2,4:true,3:a,b,1:1,5:X=1:2,"
	if got := c.Encode(); got != want {
		t.Fatalf("encoding\n got %s\nwant %s", got, want)
	}
}

// Anything cut short, lengthened or altered in its lengths is refused,
// never read as some other configuration.
func TestConfigRefusesDamage(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		c := randomConfig(r)
		s := c.Encode()
		for _, bad := range []string{
			s[:r.IntN(len(s))], // cut short
			s + "1:x,",         // something after the end
			"4" + s[1:],        // another version
			strings.Replace(s, ":", ";", 1),
			strings.Replace(s, ",", ".", 1),
		} {
			if got, ok := DecodeConfig(bad); ok {
				t.Fatalf("%q decoded as %+v", bad, got)
			}
		}
	}
	for _, bad := range []string{"", "1:2,", "99999999999999999999:x,", "1:2,9:/bin/true,2:/w,1:x,"} {
		if _, ok := DecodeConfig(bad); ok {
			t.Fatalf("%q decoded", bad)
		}
	}
}

func TestReportRoundTrip(t *testing.T) {
	for _, r := range []Report{{}, {Mounts: true, Cgroup: true, PIDNS: true, OwnProc: true, User: "uid 65534"}, {Error: "setuid: operation not permitted, 1:2,"}} {
		got, ok := DecodeReport(r.Encode())
		if !ok || got != r {
			t.Fatalf("report %+v read back as %+v (%v)", r, got, ok)
		}
	}
	// A launcher that died before it reported wrote nothing.
	if _, ok := DecodeReport(nil); ok {
		t.Fatal("an empty report decodes")
	}
}
