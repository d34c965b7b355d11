package kernel

import "iter"

// iterPull adapts iter.Pull2 for tests that need to hold a run open.
func iterPull(seq iter.Seq2[Event, error]) (func() (Event, error, bool), func()) {
	return iter.Pull2(seq)
}
