//go:build !linux

package llm

// processRunning cannot tell here: every process is taken to be running.
func processRunning(int) bool { return true }
