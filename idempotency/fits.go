package idempotency

// Fitter is implemented by journals that can tell ahead of Finish that a
// result's size is within their bound, so a caller may write the result
// and publish it at once instead of one after the other.
type Fitter interface {
	// Fits reports that Finish will not refuse r with ErrResultTooLarge.
	// It may be conservative: false only means "not known to fit".
	Fits(r Result) bool
}

// escapeFactor is the most JSON escaping grows a string (a control byte
// becomes \u00XX); recordOverhead covers a record's other fields.
const (
	escapeFactor   = 6
	recordOverhead = 4 << 10
)

// Fits implements Fitter: within the result bound, and small enough that
// the encoded record fits in one message whatever its escaping.
func (j *KVJournal) Fits(r Result) bool {
	n := r.Size()
	return n <= j.maxResult && escapeFactor*n+recordOverhead <= j.maxValue
}

// Fits implements Fitter.
func (m *Memory) Fits(r Result) bool { return r.Size() <= m.maxResult }

var (
	_ Fitter = (*KVJournal)(nil)
	_ Fitter = (*Memory)(nil)
)
