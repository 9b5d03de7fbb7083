package sqlite

import "time"

// SetBusyTimeout sets how long one statement waits for a lock, for tests
// that provoke contention; it returns the previous value.
func SetBusyTimeout(d time.Duration) time.Duration {
	old := busyTimeout
	busyTimeout = d
	return old
}
