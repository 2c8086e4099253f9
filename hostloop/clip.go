package hostloop

import (
	"strconv"
	"unicode/utf8"
)

// maxEchoBytes bounds what an error repeats of a caller-supplied id, so a
// 100 KB id sent to the API does not come back in its error.
const maxEchoBytes = 64

// quoteID quotes id for an error message, cut between runes to
// maxEchoBytes with an ellipsis and its length when longer.
func quoteID[S ~string](id S) string {
	s := string(id)
	if len(s) <= maxEchoBytes {
		return strconv.Quote(s)
	}
	cut := maxEchoBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}
