package hostloop

import "fmt"

// ownerRoom refuses a new session of owner when the owner holds its
// share of the host's sessions already.
func (st *loopState) ownerRoom(owner string) error {
	if n := st.owned[owner]; n >= st.cfg.Limits.MaxSessionsPerOwner {
		return fmt.Errorf("%w: %q holds %d, the most one owner may", ErrOwnerBusy, owner, n)
	}
	return nil
}

// disown counts a session that is done out of its owner's.
func (st *loopState) disown(s *session) {
	if st.owned[s.owner]--; st.owned[s.owner] <= 0 {
		delete(st.owned, s.owner)
	}
}
