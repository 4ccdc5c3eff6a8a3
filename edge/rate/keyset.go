package rate

// DefaultMaxKeys bounds the keys Inbound and Quota track.
const DefaultMaxKeys = 4096

// keySet is the per-key state of a limiter for at most max keys. It is not
// safe for concurrent use: the limiter that owns it guards it.
type keySet[V any] struct {
	max int
	m   map[string]V
}

func newKeySet[V any](max int) keySet[V] {
	return keySet[V]{max: max, m: map[string]V{}}
}

// get returns the state of key, adding the one made by mk for a key not
// seen before. While max keys are tracked, a new key first evicts the keys
// whose state idle reports carries nothing worth keeping; if none does, the
// key is not added and ok is false.
func (s *keySet[V]) get(key string, idle func(V) bool, mk func() V) (v V, ok bool) {
	if v, ok := s.m[key]; ok {
		return v, true
	}
	if len(s.m) >= s.max {
		for k, old := range s.m {
			if idle(old) {
				delete(s.m, k)
			}
		}
		if len(s.m) >= s.max {
			return v, false
		}
	}
	v = mk()
	s.m[key] = v
	return v, true
}
