// Package levels orders the words lite-agent uses for how far something
// reaches — network modes (sandbox.NetworkMode), filesystem and
// side-effect scopes (tools.Filesystem, tools.SideEffects) — each a short
// ladder from narrowest to widest. It is the one implementation of "is A
// within B", of "the narrower" and of "the wider" of two levels: a
// declaration is judged against a preset, narrowed to the policy it runs
// under and joined with its neighbours' by the same rule, so the places
// that compare levels cannot drift apart (they did: one copy ranked an
// unknown filesystem word as the narrowest, the others an unknown network
// word as the widest).
//
// Each vocabulary keeps its own type, declared where it belongs, and its
// ladder beside it; its methods call these functions.
//
// # Unknown words
//
// The empty word is the narrowest level (every vocabulary reads "" as
// "none"). A word the ladder does not know fails closed: it ranks above
// the widest, so it is within no limit, never wins a narrowing and always
// wins a widening; and as a limit it contains nothing, not even itself — a
// limit nobody can read allows nothing.
package levels

// rank is v's position on ladder, narrowest first: "" is 0, a word the
// ladder does not know is len(ladder).
func rank[T ~string](ladder []T, v T) int {
	if v == "" {
		return 0
	}
	for i, w := range ladder {
		if w == v {
			return i
		}
	}
	return len(ladder)
}

// Within reports whether a reaches no further than b.
func Within[T ~string](ladder []T, a, b T) bool {
	rb := rank(ladder, b)
	return rb < len(ladder) && rank(ladder, a) <= rb
}

// Narrower returns the narrower of a and b, "" as the narrowest word.
func Narrower[T ~string](ladder []T, a, b T) T {
	if rank(ladder, b) < rank(ladder, a) {
		a = b
	}
	if a == "" {
		return ladder[0]
	}
	return a
}

// Wider returns the wider of a and b, "" as the narrowest word; a word the
// ladder does not know is wider than every known one.
func Wider[T ~string](ladder []T, a, b T) T {
	if rank(ladder, b) > rank(ladder, a) {
		a = b
	}
	if a == "" {
		return ladder[0]
	}
	return a
}
