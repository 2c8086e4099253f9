package toolproc

import (
	"bufio"
	"io"
	"log/slog"
	"time"
)

// Bounds of what a process's stderr may cost the worker's log.
const (
	stderrLineBytes = 4 << 10
	stderrBurst     = 100              // lines logged per window
	stderrWindow    = 10 * time.Second // after which the budget refills
)

// logStderr copies the process's stderr to the log, a record per line,
// each cut to stderrLineBytes, at most stderrBurst lines per window; the
// rest are counted and reported once the window ends. It returns at EOF.
func logStderr(r io.Reader, log *slog.Logger) {
	br := bufio.NewReaderSize(r, stderrLineBytes)
	var (
		start   = time.Now()
		logged  int
		dropped int
	)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			// A line longer than the buffer arrives in pieces; each piece
			// is its own record, which bounds every record.
			if now := time.Now(); now.Sub(start) >= stderrWindow {
				if dropped > 0 {
					log.Warn("tool stderr lines dropped", "lines", dropped)
				}
				start, logged, dropped = now, 0, 0
			}
			if logged < stderrBurst {
				logged++
				log.Info("tool stderr", "line", string(trimNewline(line)))
			} else {
				dropped++
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			if dropped > 0 {
				log.Warn("tool stderr lines dropped", "lines", dropped)
			}
			return
		}
	}
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
