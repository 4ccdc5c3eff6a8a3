//go:build linux

package sshops_test

import (
	"crypto/ed25519"
	"crypto/rand"
)

func edKey() (ed25519.PublicKey, ed25519.PrivateKey, error) { return ed25519.GenerateKey(rand.Reader) }
