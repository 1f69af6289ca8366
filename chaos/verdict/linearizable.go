package verdict

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/batchkv/batchkv/internal/linz"
)

// CheckLinearizable checks the history's ops with porcupine, for at most
// timeout, and records the outcome; an illegal history is drawn to
// htmlPath.
func (r *Result) CheckLinearizable(ops []porcupine.Operation, timeout time.Duration, htmlPath string) {
	t0 := time.Now()
	res, err := linz.Check(ops, timeout, htmlPath)
	got := map[porcupine.CheckResult]string{porcupine.Ok: "linearizable", porcupine.Illegal: "NOT linearizable (see linearizability.html)",
		porcupine.Unknown: "checker timed out"}[res]
	if err != nil {
		got += "; " + err.Error()
	}
	r.Check("checked history is linearizable", "linearizable",
		fmt.Sprintf("%s: %d ops, checked in %v", got, len(ops), time.Since(t0).Round(time.Millisecond)), res == porcupine.Ok)
}
