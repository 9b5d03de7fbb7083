package llm

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processRunning reports whether pid is a running process: one that
// exists and is not a zombie waiting for its parent.
func processRunning(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	// pid (comm) state ...: the command may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
