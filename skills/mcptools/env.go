package mcptools

import "github.com/evoclaw/evoclaw/skills/proc"

// envPath is the PATH a stdio server gets: the agent's, as for tools. No
// other variable of the agent (broker passwords, API keys) reaches it
// unless the configuration names it in env.
func envPath() string {
	for _, kv := range proc.MinimalEnv() {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			return kv[5:]
		}
	}
	return proc.DefaultPath
}
