//go:build noconsole

package console

import "embed"

// static is empty: this build leaves the console out.
var static embed.FS
