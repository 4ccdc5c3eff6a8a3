//go:build !noconsole

package console

import "embed"

// static holds the console's files.
//
//go:embed static
var static embed.FS
