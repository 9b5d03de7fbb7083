package sqlite

import "time"

// SetBusyTimeout sets how long one statement waits for a lock, for tests
// that provoke contention; it returns the previous value.
func SetBusyTimeout(d time.Duration) time.Duration {
	old := busyTimeout
	busyTimeout = d
	return old
}

// SetImportMemoryLimit sets how many bytes of records an import holds in
// memory before it stages them, so that tests can take both ways; it
// returns the previous value.
func SetImportMemoryLimit(n int) int {
	old := memoryLimit
	memoryLimit = n
	return old
}
