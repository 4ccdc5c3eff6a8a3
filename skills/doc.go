// Package skills loads skill directories and runs their tools.
//
// A skill is a directory holding a skill.toml and the tool binaries it
// names. The edge agent offers the tools to the LLM (see [Tool.Schema]),
// checks each call ([Allowed], [Tool.Validate]) and runs the binary
// ([Execute]).
//
// # Toolsets
//
// A [Catalog] holds the skills of a list of directories and reloads them
// when a skill.toml changes. A [Toolset] puts a catalog's tools together
// with tools implemented in Go ([GoTool]: the built-ins of package builtin,
// the MCP tools of package mcptools), offers those whose permissions are
// all granted ([Toolset.Defs], JSON schemas plus an "x-evoclaw" extension)
// and runs a call by name ([Toolset.Call]) into an [Output] of content
// blocks (text, image, error with a stable code), sanitized for the model
// and convertible to the flat wire result ([Output.Legacy]).
//
// # skill.toml
//
//	[skill]
//	name = "system"                   # ^[a-zA-Z0-9_-]{1,64}$
//	version = "1.0.0"
//	description = "Linux / Raspberry Pi health"
//
//	[[tools]]
//	name = "cpu_temp"                 # ^[a-zA-Z0-9_-]{1,64}$, unique across all skills
//	binary = "bin/cpu_temp"           # relative to the skill directory, never leaving it
//	description = "CPU temperature in °C"
//	timeout_ms = 5000                 # optional; 0 = the caller's default
//	permissions = ["hw_read"]         # optional; all must be granted
//	sandboxing = "none"               # optional: none | bubblewrap | firejail
//	[tools.parameters]
//	required = ["zone"]
//	[tools.parameters.properties.zone]
//	type = "integer"                  # string | integer | number | boolean | array | object
//	description = "thermal zone index"
//	default = 0                       # optional; must match type
//	[tools.metadata]
//	category = "hardware"             # free strings
//
// Unknown or miscased keys are errors, as are wrong types, so a typo never
// silently drops a setting. Parameter names follow the tool-name rule,
// since they become command-line flags.
//
// # How a tool binary is called
//
// The binary runs with the skill directory as working directory, in a
// process group of its own (see package proc), and receives the arguments,
// with defaults filled in, in two forms; it may use either:
//
//   - on standard input, one JSON object on a single line, ended by a
//     newline: {"verbose":true,"zone":0}
//   - as command-line arguments, one "--name value" pair per argument, in
//     sorted name order: --verbose true --zone 0. Strings are passed as
//     they are (one argument each, even when they contain spaces or start
//     with "-"), booleans as true or false, numbers as in JSON (3, 2.5,
//     1e+21) and arrays and objects as compact JSON.
//
// Its environment is ExecOptions.Env, or a minimal PATH, HOME and
// LANG=C.UTF-8, plus EVOCLAW_TOOL=<tool name>. Exit status 0 means success
// and stdout is the result given to the LLM; status 69 (ExitUnavailable)
// means the hardware or resource the tool reads is absent (not_found); any
// other status is a failure (execution_failed) whose message carries the
// exit code and the end of stderr. Output beyond
// ExecOptions.MaxOutput per stream is dropped and counted.
//
// # Concurrency
//
// Load, LoadDir, Allowed, Execute and the methods of Tool are safe for
// concurrent use as long as no one modifies the Tool values they share.
// Catalog and Toolset are safe for concurrent use; a Catalog serialises
// its reloads under one mutex.
package skills
