package sqlite

import "time"

// SetBusyTimeout sets how long one statement waits for a lock, for tests
// that provoke contention; it returns the previous value.
func SetBusyTimeout(d time.Duration) time.Duration {
	old := busyTimeout
	busyTimeout = d
	return old
}

// SetImportMemoryLimit sets how many bytes of records the imports of
// stores opened from now on hold in memory before they stage them, so
// that tests can take both ways; it returns the previous value.
func SetImportMemoryLimit(n int) int {
	old := 64 << 20
	if importMemoryLimit != nil {
		old = *importMemoryLimit
	}
	importMemoryLimit = &n
	return old
}
