package persistence

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// RecordIDLen is the length of the ids NewRecordID returns, in characters.
const RecordIDLen = 32

// NewRecordID returns a new unique record id: 32 lower-case hex characters,
// the current Unix time in milliseconds (12 characters) followed by 80 random
// bits, so ids sort by creation time to the millisecond.
func NewRecordID() string {
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	// crypto/rand.Read never returns an error (it aborts the program if
	// the system source fails).
	rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}
