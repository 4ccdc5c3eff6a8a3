package skills

import "slices"

// Allowed reports whether tool may run with the granted permissions. Every
// permission the tool declares must be granted; having any one of them is
// not enough, since a tool that needs "shell" and "network" uses both. A
// tool without permissions is always allowed. missing lists the permissions
// not granted, in the tool's order, without repeats.
func Allowed(tool Tool, granted []string) (ok bool, missing []string) {
	for _, p := range tool.Permissions {
		if !slices.Contains(granted, p) && !slices.Contains(missing, p) {
			missing = append(missing, p)
		}
	}
	return len(missing) == 0, missing
}
