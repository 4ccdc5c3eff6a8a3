package auditchain

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size of an anchor key in bytes; stored as 64 lower-case
// hex characters.
const KeySize = 32

// Key authenticates a chain's anchors: the retention checkpoints it starts
// from and the seal of its head. The record hashes themselves are unkeyed,
// so anyone can check a chain's internal consistency (the cold tier does);
// only the holder of the key can vouch for where it starts and ends, which
// is what stops a forger who recomputes every hash.
type Key [KeySize]byte

// Anchor kinds, part of what a MAC covers.
const (
	AnchorSeal       = "seal"       // the chain's newest record
	AnchorCheckpoint = "checkpoint" // the last record deleted by retention
)

// anchorDomain starts every MAC'd message.
const anchorDomain = "evoclaw audit anchor v1\x00"

// ErrBadKey reports a key file that does not hold a key.
var ErrBadKey = errors.New("malformed audit key")

// NewKey returns a random key.
func NewKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return k, fmt.Errorf("generate audit key: %w", err)
	}
	return k, nil
}

// ParseKey parses a key as stored: 64 hex characters, surrounding white
// space ignored.
func ParseKey(s string) (Key, error) {
	var k Key
	s = strings.TrimSpace(s)
	if len(s) != 2*KeySize {
		return k, fmt.Errorf("%w: %d characters, want %d hex characters", ErrBadKey, len(s), 2*KeySize)
	}
	if _, err := hex.Decode(k[:], []byte(s)); err != nil {
		return k, fmt.Errorf("%w: not hex", ErrBadKey)
	}
	return k, nil
}

// String returns k as stored: 64 hex characters.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// ID names k without revealing it (16 hex characters), so a database can
// say which key sealed it and a verifier can tell a wrong key from a
// forgery.
func (k Key) ID() string {
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte(anchorDomain + "key id"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// MAC returns the HMAC-SHA256 under k of an anchor of chainID: kind, the
// chain_seq and the hash of the record anchored.
func (k Key) MAC(kind, chainID string, seq int64, hash Digest) Digest {
	var x Hasher
	return x.MAC(k, kind, chainID, seq, hash)
}

// MAC is k.MAC, with the HMAC state kept for the next call under the same
// key.
func (x *Hasher) MAC(k Key, kind, chainID string, seq int64, hash Digest) Digest {
	if x.mac == nil || x.macKey != k {
		x.mac, x.macKey = hmac.New(sha256.New, k[:]), k
	}
	m := x.mac
	m.Reset()
	buf := append(x.buf[:0], anchorDomain...)
	buf = append(buf, kind...)
	buf = append(buf, 0)
	buf = binary.AppendUvarint(buf, uint64(len(chainID)))
	buf = append(buf, chainID...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(seq))
	buf = append(buf, hash[:]...)
	m.Write(buf)
	x.buf = buf[:0]
	return x.sum(m)
}

// MACText is MAC over a text (a summary that is not a record), for kind.
func (k Key) MACText(kind, chainID, text string) Digest {
	return k.MAC(kind, chainID, int64(len(text)), sha256.Sum256([]byte(text)))
}

// CheckMAC reports whether stored (hex, as kept in a database) is k's MAC
// of the anchor, in constant time.
func (k Key) CheckMAC(stored string, kind, chainID string, seq int64, hash Digest) bool {
	got, err := ParseDigest(stored)
	if err != nil {
		return false
	}
	want := k.MAC(kind, chainID, seq, hash)
	return hmac.Equal(got[:], want[:])
}
