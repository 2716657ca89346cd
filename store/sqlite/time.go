package sqlite

import (
	"database/sql"
	"fmt"
	"time"
)

// timeLayout is how times are stored: UTC, nanoseconds, fixed width, so that the text sorts
// and compares as the times do.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// dbTime is t as stored: NULL for the zero time.
func dbTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return formatTime(t)
}

// parseTime reads a stored time; NULL is the zero time.
func parseTime(s sql.NullString) (time.Time, error) {
	if !s.Valid {
		return time.Time{}, nil
	}
	t, err := time.Parse(timeLayout, s.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s.String, err)
	}
	return t, nil
}
