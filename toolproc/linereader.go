package toolproc

import (
	"bufio"
	"errors"
	"io"
)

var errLineTooLong = errors.New("line too long")

// lineReader reads newline-terminated lines of at most max bytes, and
// refuses a longer one once it passes max, before buffering the rest: a
// process writing a gigabyte without a newline costs at most max bytes.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline; the slice is valid until
// the following call.
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		frag, err := l.r.ReadSlice('\n')
		if len(l.buf)+len(frag) > l.max+1 {
			return nil, errLineTooLong
		}
		switch {
		case err == nil:
			if len(l.buf) == 0 {
				return frag[:len(frag)-1], nil
			}
			l.buf = append(l.buf, frag...)
			return l.buf[:len(l.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			l.buf = append(l.buf, frag...)
		default:
			if len(frag) > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}
