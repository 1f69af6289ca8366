package verdict

import (
	"fmt"
	"time"
)

// Pct renders a share as a whole percentage.
func Pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

// Millis renders a duration in milliseconds with one decimal.
func Millis(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// OrNever renders a measured duration, or "never" when there is none.
func OrNever(d time.Duration, ok bool) string {
	if !ok {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}

// OrOK renders an outcome: "ok", or the error.
func OrOK(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
