//go:build linux

package sqlite

// This file is the writer's VFS, walVFSName: SQLite's own unix VFS with
// the write-ahead log's writes gathered into one pwrite per commit.
//
// SQLite appends a transaction to the log one frame at a time, and each
// frame with two writes, its 24-byte header and then its page: a tool
// call's commit of eight pages made sixteen pwrite calls, 45% of a lone
// writer's CPU time per record (a CPU profile of the serial
// BenchmarkRecordToolCall). This VFS is the unix VFS with the log file's
// write method replaced: writes that continue the previous one are copied
// into a buffer, and the buffer goes to the file in one write as soon as
// the commit frame (the frame whose header carries the database size) is
// complete, inside the very xWrite call that completes it. So:
//
//   - a commit is in the file (the OS's page cache, or the disk after the
//     sync synchronous=FULL asks for) before SQLite publishes it in the
//     wal-index and before the commit returns, exactly as without the
//     buffer; a crash of the process loses only frames of a transaction
//     that never committed, which recovery ignores as it always did;
//   - a failed write (a full disk) fails the write call that completes the
//     commit, so SQLite rolls the transaction back and reports the error;
//   - anything else done to the log (read, sync, truncate, size, file
//     control, close) first writes out what is buffered, so SQLite never
//     sees the file other than it wrote it.
//
// A commit frame's header written with nothing buffered before it (a
// transaction of one page, or SQLite rewriting frame headers to fix their
// checksums) goes to the file at once: only a page continuing a commit
// frame's header ends a gathered write. The log is opened through the unix
// VFS itself and keeps its methods for everything else (locks, shared
// memory), so other connections and processes, which use the plain unix
// VFS, see the same files and locks. A log file on a device without
// SQLITE_IOCAP_POWERSAFE_OVERWRITE (where SQLite pads commits to a sector
// and may split a frame's write around a sync) is left unbuffered.

import (
	"cmp"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// walVFSName is the name the writer's VFS is registered under.
const walVFSName = "evoclaw-walbuf"

// WAL file layout (SQLite's file format).
const (
	walHeaderSize      = 32 // the log's own header, at offset 0
	walFrameHeaderSize = 24 // before every page; bytes 4..8 are the commit's database size
)

// walBufferSize bounds the bytes a log file holds back: a write that would
// overflow it sends what is buffered first. It is the largest write the
// unix VFS makes in one call (it masks a write's length with 0x1ffff, as
// SQLite's own writes are a page or less): 31 frames of 4 KiB pages.
const walBufferSize = 0x1ffff

// walVFS is the registered VFS and what it delegates to.
var walVFS struct {
	once sync.Once
	ok   bool // registered
	real uintptr
	// methods maps the unix VFS's io methods to the copy with the log's
	// methods replaced (C memory, kept for the process: one per distinct
	// unix methods table, so a handful at most).
	mu      sync.Mutex
	methods map[uintptr]uintptr
	files   map[uintptr]*walFile // open log files, by their sqlite3_file
}

// walWrites counts the writes this VFS makes to log files, for tests.
var walWrites atomic.Int64

// walFile is the buffer of one open log file. SQLite uses a file from one
// connection, one call at a time.
type walFile struct {
	real uintptr // the unix VFS's io methods for this file
	buf  uintptr // C memory of walBufferSize bytes, allocated at first use
	off  int64   // file offset of buf's first byte
	n    int32   // bytes buffered
	// commitPage is the offset of the page a commit frame's header just
	// written precedes, or -1: writing it ends the gathered write.
	commitPage int64
}

// registerWALVFS registers the writer's VFS once. It reports whether the
// VFS can be used; when it cannot, the writer uses SQLite's default VFS.
func registerWALVFS() bool {
	walVFS.once.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		real := sqlite3.Xsqlite3_vfs_find(tls, 0)
		if real == 0 {
			return
		}
		name, err := libc.CString(walVFSName)
		if err != nil {
			return
		}
		p := libc.Xcalloc(tls, 1, libc.Tsize_t(unsafe.Sizeof(sqlite3.Tsqlite3_vfs{})))
		if p == 0 {
			libc.Xfree(tls, name)
			return
		}
		v := (*sqlite3.Tsqlite3_vfs)(cptr(p))
		*v = *(*sqlite3.Tsqlite3_vfs)(cptr(real))
		v.FpNext = 0
		v.FzName = name
		v.FxOpen = cFunc(walOpen)
		if sqlite3.Xsqlite3_vfs_register(tls, p, 0) != sqlite3.SQLITE_OK {
			libc.Xfree(tls, p)
			libc.Xfree(tls, name)
			return
		}
		walVFS.real = real
		walVFS.methods = make(map[uintptr]uintptr)
		walVFS.files = make(map[uintptr]*walFile)
		walVFS.ok = true
	})
	return walVFS.ok
}

// cptr turns an address in C memory (never Go memory) into a pointer.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// cFunc returns f as a C function pointer, as the transpiled SQLite calls
// them: the address of a Go func value. f must be a top-level function.
func cFunc[T any](f T) uintptr { return *(*uintptr)(unsafe.Pointer(&struct{ f T }{f})) }

// ioMethods returns the io methods table of file p.
func ioMethods(p uintptr) *sqlite3.Tsqlite3_io_methods {
	return (*sqlite3.Tsqlite3_io_methods)(cptr((*sqlite3.Tsqlite3_file)(cptr(p)).FpMethods))
}

// walOpen is the VFS's xOpen: the unix VFS opens every file, and a log
// file gets the buffering methods.
func walOpen(tls *libc.TLS, _ uintptr, name uintptr, file uintptr, flags int32, outFlags uintptr) int32 {
	real := (*sqlite3.Tsqlite3_vfs)(cptr(walVFS.real))
	rc := (*(*func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32)(unsafe.Pointer(&real.FxOpen)))(tls, walVFS.real, name, file, flags, outFlags)
	if rc != sqlite3.SQLITE_OK || flags&sqlite3.SQLITE_OPEN_WAL == 0 {
		return rc
	}
	fileMethods := (*sqlite3.Tsqlite3_file)(cptr(file)).FpMethods
	if fileMethods == 0 {
		return rc
	}
	m := ioMethods(file)
	if m.FxDeviceCharacteristics == 0 ||
		(*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&m.FxDeviceCharacteristics)))(tls, file)&sqlite3.SQLITE_IOCAP_POWERSAFE_OVERWRITE == 0 {
		return rc // SQLite may pad and split writes around syncs: leave it alone
	}
	walVFS.mu.Lock()
	defer walVFS.mu.Unlock()
	ours, ok := walVFS.methods[fileMethods]
	if !ok {
		ours = libc.Xcalloc(tls, 1, libc.Tsize_t(unsafe.Sizeof(sqlite3.Tsqlite3_io_methods{})))
		if ours == 0 {
			return rc // unbuffered
		}
		o := (*sqlite3.Tsqlite3_io_methods)(cptr(ours))
		*o = *m
		o.FxClose = cFunc(walClose)
		o.FxRead = cFunc(walRead)
		o.FxWrite = cFunc(walWrite)
		o.FxTruncate = cFunc(walTruncate)
		o.FxSync = cFunc(walSync)
		o.FxFileSize = cFunc(walFileSize)
		o.FxFileControl = cFunc(walFileControl)
		walVFS.methods[fileMethods] = ours
	}
	walVFS.files[file] = &walFile{real: fileMethods, commitPage: -1}
	(*sqlite3.Tsqlite3_file)(cptr(file)).FpMethods = ours
	return rc
}

// walFileOf returns the buffer of log file p.
func walFileOf(p uintptr) *walFile {
	walVFS.mu.Lock()
	defer walVFS.mu.Unlock()
	return walVFS.files[p]
}

// methods returns the unix VFS's methods of f.
func (f *walFile) methods() *sqlite3.Tsqlite3_io_methods {
	return (*sqlite3.Tsqlite3_io_methods)(cptr(f.real))
}

// write writes n bytes at buf to the file at off, with the unix VFS.
func (f *walFile) write(tls *libc.TLS, file, buf uintptr, n int32, off int64) int32 {
	walWrites.Add(1)
	m := f.methods()
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&m.FxWrite)))(tls, file, buf, n, off)
}

// flush writes out what is buffered. The buffer is empty afterwards even
// when the write fails: SQLite then abandons the transaction the frames
// belong to.
func (f *walFile) flush(tls *libc.TLS, file uintptr) int32 {
	if f.n == 0 {
		return sqlite3.SQLITE_OK
	}
	n := f.n
	f.n = 0
	return f.write(tls, file, f.buf, n, f.off)
}

// walWrite is the log's xWrite.
func walWrite(tls *libc.TLS, file, buf uintptr, n int32, off int64) int32 {
	f := walFileOf(file)
	if f == nil {
		return sqlite3.SQLITE_IOERR_WRITE
	}
	endsCommit := f.commitPage >= 0 && off == f.commitPage
	f.commitPage = -1
	commitHeader := n == walFrameHeaderSize && off >= walHeaderSize &&
		binary.BigEndian.Uint32(unsafe.Slice((*byte)(cptr(buf)), n)[4:8]) != 0
	if f.n > 0 && off != f.off+int64(f.n) {
		if rc := f.flush(tls, file); rc != sqlite3.SQLITE_OK {
			return rc
		}
	}
	if f.n+n > walBufferSize {
		if rc := f.flush(tls, file); rc != sqlite3.SQLITE_OK {
			return rc
		}
	}
	if (commitHeader && f.n == 0) || n > walBufferSize {
		// A commit frame's header with nothing before it, or a write
		// larger than the buffer: straight to the file.
		rc := f.write(tls, file, buf, n, off)
		if rc == sqlite3.SQLITE_OK && commitHeader {
			f.commitPage = off + walFrameHeaderSize
		}
		return rc
	}
	if f.buf == 0 {
		if f.buf = libc.Xmalloc(tls, walBufferSize); f.buf == 0 {
			return f.write(tls, file, buf, n, off)
		}
	}
	if f.n == 0 {
		f.off = off
	}
	copy(unsafe.Slice((*byte)(cptr(f.buf+uintptr(f.n))), n), unsafe.Slice((*byte)(cptr(buf)), n))
	f.n += n
	switch {
	case commitHeader:
		f.commitPage = off + walFrameHeaderSize
	case endsCommit:
		return f.flush(tls, file)
	}
	return sqlite3.SQLITE_OK
}

// flushed writes out what log file p buffers and returns its unix VFS
// methods, or a nonzero rc: missing when p is not a log file of this VFS,
// or the failed write's.
func flushed(tls *libc.TLS, file uintptr, missing int32) (*sqlite3.Tsqlite3_io_methods, int32) {
	f := walFileOf(file)
	if f == nil {
		return nil, missing
	}
	if rc := f.flush(tls, file); rc != sqlite3.SQLITE_OK {
		return nil, rc
	}
	return f.methods(), sqlite3.SQLITE_OK
}

// walRead is the log's xRead.
func walRead(tls *libc.TLS, file, buf uintptr, n int32, off int64) int32 {
	m, rc := flushed(tls, file, sqlite3.SQLITE_IOERR_READ)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&m.FxRead)))(tls, file, buf, n, off)
}

// walTruncate is the log's xTruncate.
func walTruncate(tls *libc.TLS, file uintptr, size int64) int32 {
	m, rc := flushed(tls, file, sqlite3.SQLITE_IOERR_TRUNCATE)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int64) int32)(unsafe.Pointer(&m.FxTruncate)))(tls, file, size)
}

// walSync is the log's xSync.
func walSync(tls *libc.TLS, file uintptr, flags int32) int32 {
	m, rc := flushed(tls, file, sqlite3.SQLITE_IOERR_FSYNC)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&m.FxSync)))(tls, file, flags)
}

// walFileSize is the log's xFileSize.
func walFileSize(tls *libc.TLS, file, size uintptr) int32 {
	m, rc := flushed(tls, file, sqlite3.SQLITE_IOERR_FSTAT)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&m.FxFileSize)))(tls, file, size)
}

// walFileControl is the log's xFileControl.
func walFileControl(tls *libc.TLS, file uintptr, op int32, arg uintptr) int32 {
	m, rc := flushed(tls, file, sqlite3.SQLITE_NOTFOUND)
	if rc != sqlite3.SQLITE_OK || m.FxFileControl == 0 {
		return cmp.Or(rc, sqlite3.SQLITE_NOTFOUND)
	}
	return (*(*func(*libc.TLS, uintptr, int32, uintptr) int32)(unsafe.Pointer(&m.FxFileControl)))(tls, file, op, arg)
}

// walClose is the log's xClose: it writes out what is buffered, closes the
// file with the unix VFS and frees the buffer.
func walClose(tls *libc.TLS, file uintptr) int32 {
	walVFS.mu.Lock()
	f := walVFS.files[file]
	delete(walVFS.files, file)
	walVFS.mu.Unlock()
	if f == nil {
		return sqlite3.SQLITE_IOERR_CLOSE
	}
	frc := f.flush(tls, file)
	m := f.methods()
	rc := (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&m.FxClose)))(tls, file)
	if f.buf != 0 {
		libc.Xfree(tls, f.buf)
		f.buf = 0
	}
	if frc != sqlite3.SQLITE_OK {
		return frc
	}
	return rc
}
