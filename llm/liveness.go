package llm

import (
	"os"
	"strconv"
	"strings"
)

// deadHere reports whether a claim's owner (host/pid/random) was a process
// of this machine that is no longer running. An owner of another machine,
// or one that cannot be told, is taken to be alive: its claim expires.
// Machines that share a store need distinct host names (containers get
// their own by default): two with one name could each drop the other's
// claims, which sends a request twice but never loses an answer.
func deadHere(owner string) bool {
	parts := strings.SplitN(owner, "/", 3)
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(parts[1])
	if err != nil || parts[0] != host || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return !processRunning(pid)
}
