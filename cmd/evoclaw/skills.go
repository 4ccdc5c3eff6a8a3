package main

import (
	"fmt"
	"io"

	"github.com/evoclaw/evoclaw/skills/shipped"
)

func cmdSkills(args []string, stdout io.Writer) error {
	if len(args) == 3 && args[0] == "install" {
		dest, err := shipped.Install(args[1], args[2])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "installed skill %s in %s\n", args[1], dest)
		return nil
	}
	return fmt.Errorf("%w: evoclaw skills install NAME DIR (shipped skills: %v)", errUsage, shipped.Names())
}
