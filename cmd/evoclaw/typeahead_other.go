//go:build !linux

package main

import "os"

// pendingInput is 0 where the chat cannot ask the terminal.
func pendingInput(*os.File) int { return 0 }

// flushTyped drops nothing where the chat cannot ask the terminal.
func flushTyped(*os.File) int { return 0 }
