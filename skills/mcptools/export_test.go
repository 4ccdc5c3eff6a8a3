package mcptools

// RelistCounts returns the notifications/tools/list_changed that server
// name of s received and the listings they caused, for the tests of
// package mcptools_test.
func RelistCounts(s *Set, name string) (notices, relistings int) {
	s.mu.Lock()
	srv := s.sessions[name]
	s.mu.Unlock()
	if srv == nil {
		return 0, 0
	}
	return relistCounts(srv)
}
