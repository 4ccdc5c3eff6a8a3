package auditchain

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
)

// HashSize is the size of a record hash in bytes; stored as 64 lower-case
// hex characters.
const HashSize = sha256.Size

// hashDomain starts every hashed encoding, so the hashes cannot be confused
// with SHA-256 of anything else.
const hashDomain = "evoclaw audit chain v1\x00"

// Digest is a record hash.
type Digest [HashSize]byte

// String returns d as 64 lower-case hex characters, as stored.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// ErrBadHash reports a stored hash that is not 64 hex characters.
var ErrBadHash = errors.New("malformed record hash")

// ParseDigest parses a stored hash, which must be exactly what
// Digest.String writes: 64 lower-case hex characters. The stored text is
// what outside records (a head noted elsewhere, the cold tier) compare
// against, so a hash rewritten in upper case is not the same hash.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	if len(s) != 2*HashSize {
		return d, fmt.Errorf("%w: %d characters, want %d", ErrBadHash, len(s), 2*HashSize)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return d, fmt.Errorf("%w: character %d is %q, want lower-case hex", ErrBadHash, i+1, c)
		}
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, fmt.Errorf("%w: %v", ErrBadHash, err)
	}
	return d, nil
}

// Genesis is the hash the first record of chainID chains to.
func Genesis(chainID string) Digest {
	h := sha256.New()
	h.Write([]byte(hashDomain))
	h.Write([]byte("genesis\x00"))
	h.Write([]byte(chainID))
	var d Digest
	h.Sum(d[:0])
	return d
}

// Hash returns the hash of a record of table whose column values, in the
// order of the table's Columns, are vals, chained to prev. Values are
// encoded by type, so 1 and "1" differ: nil (NULL), int64 (and the other
// integer kinds), float64, string, []byte. Any other type is an error.
// The table's Optional columns are covered only when not NULL
// (Table.HashedValues); the count of values is part of the encoding, so a
// row with such a value never hashes like one without.
func Hash(prev Digest, table string, vals []any) (Digest, error) {
	var x Hasher
	return x.Hash(prev, table, vals)
}

// Hasher computes Hash, and Key.MAC (MAC), with the state and buffer it
// keeps from one call to the next: a writer that hashes record after
// record allocates nothing per record. The results are those of Hash and
// Key.MAC. Not safe for concurrent use; the zero value is ready.
type Hasher struct {
	sha hash.Hash
	buf []byte
	mac hash.Hash // HMAC under macKey, once MAC has run
	// macKey is the key of mac.
	macKey Key
	out    []byte // a digest, as Sum returns it
}

// Hash is the package's Hash.
func (x *Hasher) Hash(prev Digest, table string, vals []any) (Digest, error) {
	// The values the hash covers (Table.HashedValues), without a copy.
	t, _ := TableByName(table)
	skipping := len(t.Optional) > 0 && len(vals) == len(t.Columns)
	covered := len(vals)
	if skipping {
		for i, v := range vals {
			if v == nil && t.optional(t.Columns[i]) {
				covered--
			}
		}
	}
	if x.sha == nil {
		x.sha = sha256.New()
		x.buf = make([]byte, 0, 256)
	}
	h := x.sha
	h.Reset()
	buf := x.buf[:0]
	buf = append(buf, hashDomain...)
	buf = append(buf, prev[:]...)
	buf = appendString(buf, 's', table)
	buf = binary.AppendUvarint(buf, uint64(covered))
	n := 0 // index among the covered values
	for i, v := range vals {
		if skipping && v == nil && t.optional(t.Columns[i]) {
			continue
		}
		var err error
		if buf, err = appendValue(buf, v); err != nil {
			return Digest{}, fmt.Errorf("hash %s record: column %d: %w", table, n, err)
		}
		n++
		if len(buf) > 64<<10 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	if cap(buf) <= 64<<10+1<<10 {
		x.buf = buf[:0] // keep it, unless a huge value grew it
	}
	return x.sum(h), nil
}

// sum returns h's digest, through the Hasher's own buffer: a Digest on
// the stack given to the interface's Sum would escape.
func (x *Hasher) sum(h hash.Hash) Digest {
	x.out = h.Sum(x.out[:0])
	return Digest(x.out)
}

// appendValue appends the canonical encoding of v: a type tag, then the
// value (integers as 8 bytes big-endian, float64 as its IEEE bits, text and
// blobs length-prefixed).
func appendValue(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(buf, 'n'), nil
	case int64:
		return binary.BigEndian.AppendUint64(append(buf, 'i'), uint64(x)), nil
	case int:
		return binary.BigEndian.AppendUint64(append(buf, 'i'), uint64(int64(x))), nil
	case int32:
		return binary.BigEndian.AppendUint64(append(buf, 'i'), uint64(int64(x))), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(buf, 'f'), math.Float64bits(x)), nil
	case string:
		return appendString(buf, 's', x), nil
	case []byte:
		return appendString(buf, 'b', string(x)), nil
	}
	return buf, fmt.Errorf("cannot encode a value of type %T", v)
}

func appendString(buf []byte, tag byte, s string) []byte {
	buf = append(buf, tag)
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}
