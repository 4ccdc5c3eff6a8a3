package proc

import "os"

// Fallbacks of [MinimalEnv] when the agent's own variables are unset.
const (
	// DefaultPath is the PATH of a child when the agent has none.
	DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// DefaultHome is the HOME of a child when the agent has none.
	DefaultHome = "/"
)

// MinimalEnv returns the environment a child gets when Spec.Env is nil:
// the agent's PATH and HOME (or DefaultPath and DefaultHome) and
// LANG=C.UTF-8. Nothing else of the agent's environment, such as broker
// credentials or API keys, is passed to a tool; an unconfined tool runs as
// the agent's account and can still read what that account can, the
// agent's /proc/PID/environ included (docs/SECURITY.md).
func MinimalEnv() []string {
	path, home := os.Getenv("PATH"), os.Getenv("HOME")
	if path == "" {
		path = DefaultPath
	}
	if home == "" {
		home = DefaultHome
	}
	return []string{"PATH=" + path, "HOME=" + home, "LANG=C.UTF-8"}
}
