package testwait

import "math/rand/v2"

// Seeds chooses the seeds of a randomized model test: only replay when it
// is set (to rerun one failing seed), else fixed plus extra random ones.
// The fixed seeds run in every go test, so it explores the same
// interleavings each time; flags of the test set extra and replay.
func Seeds(fixed []uint64, extra int, replay uint64) []uint64 {
	if replay != 0 {
		return []uint64{replay}
	}
	seeds := append([]uint64(nil), fixed...)
	for range extra {
		seeds = append(seeds, rand.Uint64())
	}
	return seeds
}
