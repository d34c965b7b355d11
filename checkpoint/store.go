package checkpoint

import (
	"bytes"
	"compress/flate"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The object store. Objects are file contents named by their SHA-256. Two
// layouts share one namespace:
//
//   - small objects (raw size below looseThreshold) are appended to a pack
//     file, one pack per writer (a Recorder or a rewind), never shared, so
//     that no two processes append to the same file. A pack entry is one
//     write(2): magic, hash, flags, raw and stored length, data. Beside each
//     pack an index file lists (hash, offset) of its entries; it is a cache
//     that makes dedupe cheap across runs — a pack's entries past the end of
//     its index (a crash between the two writes) are found again by scanning;
//   - large objects are loose files objects/ab/cdef…, written the classic
//     atomic way: a temporary file, fsync, rename, fsync of the directory.
//
// Packing exists for the store-size target: on ext4 every file takes at
// least one 4 KiB block, so storing each small pre-image as its own file
// would cost several times its size. Contents are deflated when that makes
// them smaller. Every read re-hashes what it returns, so a corrupt object is
// reported, never restored.

const (
	packMagic  = "LAP1"
	looseMagic = "LAO1"

	flagRaw     = 0
	flagDeflate = 1

	// looseThreshold is the raw size from which an object is a loose file.
	looseThreshold = 512 << 10
	idxEntrySize   = sha256.Size + 8
	// maxEntryHeader bounds a pack entry header: magic, hash, flag, two
	// uvarints.
	maxEntryHeader = 4 + sha256.Size + 1 + 2*binary.MaxVarintLen64
)

// Hash names an object: the SHA-256 of its content.
type Hash [sha256.Size]byte

func (h Hash) String() string { return hex.EncodeToString(h[:]) }

func parseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*sha256.Size {
		return h, fmt.Errorf("bad object name %q", s)
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("bad object name %q", s)
	}
	return h, nil
}

// objLoc is where a packed object lives.
type objLoc struct {
	pack string // pack base name, without extension
	off  int64
}

// store is the object store of one state directory. It is safe for
// concurrent use.
type store struct {
	dir string // <stateDir>/checkpoints/objects

	mu      sync.Mutex
	loaded  bool
	index   map[Hash]objLoc
	w       *packWriter
	readers map[string]*os.File
	// lost names where load found index entries without their bytes
	// (readPackIndex): skipped, so that they block nothing else, and named
	// when a read needs them.
	lost map[Hash]string
	// written counts the bytes this store added (the store cap's count).
	written atomic.Int64
	// ceiling, when set, refuses new objects once base+written passes it
	// (ErrStoreCap): a session cannot grow the store past its cap.
	ceiling func() error
}

func newStore(objectsDir string) *store {
	return &store{dir: objectsDir, index: map[Hash]objLoc{}, readers: map[string]*os.File{}, lost: map[Hash]string{}}
}

func (s *store) packDir() string { return filepath.Join(s.dir, "pack") }
func (s *store) tmpDir() string  { return filepath.Join(s.dir, "tmp") }

func (s *store) loosePath(h Hash) string {
	x := h.String()
	return filepath.Join(s.dir, x[:2], x[2:])
}

// load reads the pack indexes once. Callers hold s.mu.
func (s *store) loadLocked() error {
	if s.loaded {
		return nil
	}
	packs, err := listPacks(s.packDir())
	if err != nil {
		return err
	}
	for _, p := range packs {
		entries, _, lost, err := readPackIndex(s.packDir(), p)
		if err != nil {
			return err
		}
		for _, e := range lost {
			s.lost[e.hash] = fmt.Sprintf("pack %s, offset %d", p, e.off)
		}
		for _, e := range entries {
			if _, dup := s.index[e.hash]; !dup {
				s.index[e.hash] = objLoc{pack: p, off: e.off}
			}
		}
	}
	s.loaded = true
	return nil
}

// listPacks returns the base names of the pack files in dir.
func listPacks(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: %w", err)
	}
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".pack"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

type packEntry struct {
	hash      Hash
	off       int64
	flag      byte
	rawLen    int64
	storedLen int64
	hdrLen    int64
}

func (e packEntry) end() int64 { return e.off + e.hdrLen + e.storedLen }

// readPackIndex returns the entries of pack name: those its index lists,
// then any found by scanning the pack past the last indexed entry (written
// just before a crash, before their index entry). tailGarbage is the number
// of bytes at the end of the pack that are no complete entry (a write torn
// by a crash): they are never referenced, and gc drops them. lost are the
// index entries whose bytes are not in the pack (cut short, as a power loss
// can leave a pack whose index was written back first): they are left out
// of entries, so that the rest of the store stays usable and the object
// can be stored again; gc drops them from the index.
func readPackIndex(dir, name string) (entries []packEntry, tailGarbage int64, lost []packEntry, err error) {
	pf, err := os.Open(filepath.Join(dir, name+".pack"))
	if err != nil {
		return nil, 0, nil, fmt.Errorf("checkpoint store: %w", err)
	}
	defer pf.Close()
	fi, err := pf.Stat()
	if err != nil {
		return nil, 0, nil, err
	}
	size := fi.Size()
	idx, err := os.ReadFile(filepath.Join(dir, name+".idx"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil, fmt.Errorf("checkpoint store: %w", err)
	}
	// A torn final index entry is ignored: the scan below finds its object.
	idx = idx[:len(idx)-len(idx)%idxEntrySize]
	scanFrom := int64(0)
	for i := 0; i < len(idx); i += idxEntrySize {
		var e packEntry
		copy(e.hash[:], idx[i:i+sha256.Size])
		e.off = int64(binary.LittleEndian.Uint64(idx[i+sha256.Size:]))
		if e.off < 0 || e.off >= size {
			lost = append(lost, e)
			continue
		}
		// Only the header is needed to know where the entry ends.
		h, err := readEntryHeader(pf, e.off, size)
		if err != nil || h.hash != e.hash {
			lost = append(lost, e)
			continue
		}
		entries = append(entries, e)
		scanFrom = max(scanFrom, h.end())
	}
	// Scan the tail: entries whose index write did not happen.
	for off := scanFrom; off < size; {
		h, err := readEntryHeader(pf, off, size)
		if err != nil {
			return entries, size - off, lost, nil
		}
		// A complete header with a torn body: the hash check decides.
		if _, err := readEntryData(pf, h); err != nil {
			return entries, size - off, lost, nil
		}
		entries = append(entries, h)
		off = h.end()
	}
	return entries, 0, lost, nil
}

func readEntryHeader(f *os.File, off, size int64) (packEntry, error) {
	buf := make([]byte, maxEntryHeader)
	n, err := f.ReadAt(buf, off)
	if err != nil && err != io.EOF {
		return packEntry{}, err
	}
	buf = buf[:n]
	if len(buf) < 4+sha256.Size+1 || string(buf[:4]) != packMagic {
		return packEntry{}, errors.New("no pack entry here")
	}
	e := packEntry{off: off}
	copy(e.hash[:], buf[4:4+sha256.Size])
	e.flag = buf[4+sha256.Size]
	p := 4 + sha256.Size + 1
	raw, k := binary.Uvarint(buf[p:])
	if k <= 0 {
		return packEntry{}, errors.New("bad pack entry length")
	}
	p += k
	stored, k := binary.Uvarint(buf[p:])
	if k <= 0 {
		return packEntry{}, errors.New("bad pack entry length")
	}
	p += k
	e.rawLen, e.storedLen, e.hdrLen = int64(raw), int64(stored), int64(p)
	if e.rawLen < 0 || e.storedLen < 0 || e.flag > flagDeflate || e.end() > size || e.end() < off {
		return packEntry{}, errors.New("pack entry runs past the end of the pack")
	}
	return e, nil
}

// readEntryData returns the verified raw content of a pack entry.
func readEntryData(f *os.File, e packEntry) ([]byte, error) {
	stored := make([]byte, e.storedLen)
	if _, err := f.ReadAt(stored, e.off+e.hdrLen); err != nil {
		return nil, err
	}
	return decodeVerify(e.hash, e.flag, stored, e.rawLen)
}

// ErrCorrupt is wrapped by errors about objects whose content does not match
// their name: the store refuses to return them.
var ErrCorrupt = errors.New("checkpoint store: corrupt object")

var flateReaders sync.Pool // of io.ReadCloser that are flate.Resetter

func decodeVerify(h Hash, flag byte, stored []byte, rawLen int64) ([]byte, error) {
	raw := stored
	if flag == flagDeflate {
		if rawLen > looseThreshold {
			return nil, fmt.Errorf("%w %s: a packed object claims %d bytes", ErrCorrupt, h, rawLen)
		}
		src := bytes.NewReader(stored)
		fr, _ := flateReaders.Get().(io.ReadCloser)
		if fr == nil {
			fr = flate.NewReader(src)
		} else {
			_ = fr.(flate.Resetter).Reset(src, nil)
		}
		raw = make([]byte, rawLen+1)
		n, err := io.ReadFull(fr, raw)
		flateReaders.Put(fr)
		switch {
		case (err == io.ErrUnexpectedEOF || err == io.EOF) && int64(n) == rawLen:
			raw = raw[:n]
		case err == nil:
			return nil, fmt.Errorf("%w %s: longer than its recorded length", ErrCorrupt, h)
		default:
			return nil, fmt.Errorf("%w %s: %v", ErrCorrupt, h, err)
		}
	}
	if int64(len(raw)) != rawLen || sha256.Sum256(raw) != h {
		return nil, fmt.Errorf("%w %s: content does not match its hash", ErrCorrupt, h)
	}
	return raw, nil
}

// packWriter appends to the pack of one writer.
type packWriter struct {
	name  string
	pack  *os.File
	idx   *os.File
	size  int64
	dirty bool
}

func (s *store) newPackWriterLocked() (*packWriter, error) {
	if err := os.MkdirAll(s.packDir(), 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint store: %w", err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("%d-%x", time.Now().UnixNano(), rnd)
	pack, err := os.OpenFile(filepath.Join(s.packDir(), name+".pack"), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: %w", err)
	}
	idx, err := os.OpenFile(filepath.Join(s.packDir(), name+".idx"), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		pack.Close()
		return nil, fmt.Errorf("checkpoint store: %w", err)
	}
	// The new names must survive a power loss before anything refers to
	// objects inside them, and so must the directories made for them.
	if err := syncDirs(s.packDir(), 3); err != nil {
		pack.Close()
		idx.Close()
		return nil, err
	}
	return &packWriter{name: name, pack: pack, idx: idx}, nil
}

var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

// compress returns the deflated form of raw when it is smaller, else raw.
func compress(raw []byte) (byte, []byte) {
	if len(raw) < 64 {
		return flagRaw, raw
	}
	var buf bytes.Buffer
	buf.Grow(len(raw) / 2)
	w := flateWriters.Get().(*flate.Writer)
	w.Reset(&buf)
	_, _ = w.Write(raw)
	_ = w.Close()
	flateWriters.Put(w)
	if buf.Len() >= len(raw) {
		return flagRaw, raw
	}
	return flagDeflate, buf.Bytes()
}

// has reports whether object h is stored. Callers hold s.mu.
func (s *store) hasLocked(h Hash) bool {
	if _, ok := s.index[h]; ok {
		return true
	}
	_, err := os.Lstat(s.loosePath(h))
	return err == nil
}

// put stores raw (a whole small file) and returns its hash. Identical
// content is stored once.
func (s *store) put(raw []byte) (Hash, error) {
	h := Hash(sha256.Sum256(raw))
	s.mu.Lock()
	if err := s.loadLocked(); err != nil {
		s.mu.Unlock()
		return h, err
	}
	if s.hasLocked(h) {
		s.mu.Unlock()
		return h, nil
	}
	s.mu.Unlock()
	if s.ceiling != nil {
		if err := s.ceiling(); err != nil {
			return h, err
		}
	}
	if len(raw) >= looseThreshold {
		return h, s.putLoose(h, bytes.NewReader(raw))
	}
	flag, stored := compress(raw)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hasLocked(h) {
		return h, nil
	}
	if s.w == nil {
		w, err := s.newPackWriterLocked()
		if err != nil {
			return h, err
		}
		s.w = w
	}
	w := s.w
	hdr := make([]byte, 0, maxEntryHeader+len(stored))
	hdr = append(hdr, packMagic...)
	hdr = append(hdr, h[:]...)
	hdr = append(hdr, flag)
	hdr = binary.AppendUvarint(hdr, uint64(len(raw)))
	hdr = binary.AppendUvarint(hdr, uint64(len(stored)))
	entry := append(hdr, stored...)
	// One write per entry: a crash leaves whole entries and at most one
	// torn one at the end, which nothing refers to.
	if _, err := w.pack.Write(entry); err != nil {
		return h, fmt.Errorf("checkpoint store: writing pack %s: %w", w.name, err)
	}
	off := w.size
	w.size += int64(len(entry))
	w.dirty = true
	var ie [idxEntrySize]byte
	copy(ie[:], h[:])
	binary.LittleEndian.PutUint64(ie[sha256.Size:], uint64(off))
	if _, err := w.idx.Write(ie[:]); err != nil {
		return h, fmt.Errorf("checkpoint store: writing pack index %s: %w", w.name, err)
	}
	s.index[h] = objLoc{pack: w.name, off: off}
	s.written.Add(int64(len(entry) + idxEntrySize))
	return h, nil
}

// putFile stores the content of a large file read from r. The content is
// hashed while it is copied to a temporary file, which is then renamed to
// the object's name (or dropped when the object already exists).
func (s *store) putFile(r io.Reader) (Hash, int64, error) {
	if s.ceiling != nil {
		if err := s.ceiling(); err != nil {
			return Hash{}, 0, err
		}
	}
	if err := os.MkdirAll(s.tmpDir(), 0o700); err != nil {
		return Hash{}, 0, fmt.Errorf("checkpoint store: %w", err)
	}
	tmp, err := os.CreateTemp(s.tmpDir(), "obj-*")
	if err != nil {
		return Hash{}, 0, fmt.Errorf("checkpoint store: %w", err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	// Sample the start to decide whether deflate is worth it.
	br := make([]byte, 64<<10)
	n, err := io.ReadFull(r, br)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return Hash{}, 0, err
	}
	head := br[:n]
	flag, c := compress(head)
	if flag == flagDeflate && len(c) > len(head)*9/10 {
		flag = flagRaw // barely compressible: not worth the CPU
	}
	if _, err := tmp.Write([]byte{looseMagic[0], looseMagic[1], looseMagic[2], looseMagic[3], flag}); err != nil {
		return Hash{}, 0, err
	}
	hs := sha256.New()
	var dst io.Writer = tmp
	var fw *flate.Writer
	if flag == flagDeflate {
		fw, _ = flate.NewWriter(tmp, flate.BestSpeed)
		dst = fw
	}
	size, err := io.Copy(io.MultiWriter(dst, hs), io.MultiReader(bytes.NewReader(head), r))
	if err != nil {
		return Hash{}, 0, err
	}
	if fw != nil {
		if err := fw.Close(); err != nil {
			return Hash{}, 0, err
		}
	}
	var h Hash
	hs.Sum(h[:0])
	s.mu.Lock()
	exists := s.hasLocked(h)
	s.mu.Unlock()
	if exists {
		return h, size, nil
	}
	if fi, err := tmp.Stat(); err == nil {
		s.written.Add(fi.Size())
	}
	return h, size, s.commitLoose(tmp, h)
}

func (s *store) putLoose(h Hash, r io.Reader) error {
	got, _, err := s.putFile(r)
	if err == nil && got != h {
		err = fmt.Errorf("checkpoint store: content changed while it was stored")
	}
	return err
}

// commitLoose makes tmp the loose object h: fsync, rename, fsync the
// directory, so that the object exists whole or not at all, even after a
// power loss.
func (s *store) commitLoose(tmp *os.File, h Hash) error {
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	final := s.loosePath(h)
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	if err := syncDir(filepath.Dir(final)); err != nil {
		return err
	}
	return syncDir(s.dir)
}

// sync makes every packed object written so far durable, and the index
// entries naming them, so that after a power loss a sealed checkpoint's
// objects are found through the index as they were (not by a scan, and
// never an index entry without its bytes). Called before a record that
// refers to them is made durable.
func (s *store) sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil || !s.w.dirty {
		return nil
	}
	if err := fdatasync(s.w.pack); err != nil {
		return fmt.Errorf("checkpoint store: syncing pack %s: %w", s.w.name, err)
	}
	if err := fdatasync(s.w.idx); err != nil {
		return fmt.Errorf("checkpoint store: syncing pack index %s: %w", s.w.name, err)
	}
	s.w.dirty = false
	return nil
}

// get returns the verified content of object h.
func (s *store) get(h Hash) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := s.copyTo(h, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// copyTo writes the content of object h to w and checks its hash. When the
// error wraps ErrCorrupt, w has received bad data and must be discarded.
func (s *store) copyTo(h Hash, w io.Writer) (int64, error) {
	s.mu.Lock()
	if err := s.loadLocked(); err != nil {
		s.mu.Unlock()
		return 0, err
	}
	loc, packed := s.index[h]
	lostAt := s.lost[h]
	var pf *os.File
	if packed {
		pf = s.readers[loc.pack]
		if pf == nil {
			f, err := os.Open(filepath.Join(s.packDir(), loc.pack+".pack"))
			if err != nil {
				s.mu.Unlock()
				return 0, fmt.Errorf("checkpoint store: object %s: %w", h, err)
			}
			s.readers[loc.pack] = f
			pf = f
		}
	}
	s.mu.Unlock()
	if packed {
		fi, err := pf.Stat()
		if err != nil {
			return 0, err
		}
		e, err := readEntryHeader(pf, loc.off, fi.Size())
		if err != nil {
			return 0, fmt.Errorf("%w %s (pack %s, offset %d): %v", ErrCorrupt, h, loc.pack, loc.off, err)
		}
		if e.hash != h {
			return 0, fmt.Errorf("%w %s (pack %s, offset %d): the entry there is %s", ErrCorrupt, h, loc.pack, loc.off, e.hash)
		}
		raw, err := readEntryData(pf, e)
		if err != nil {
			if errors.Is(err, ErrCorrupt) {
				return 0, fmt.Errorf("%w (pack %s, offset %d)", err, loc.pack, loc.off)
			}
			return 0, fmt.Errorf("checkpoint store: object %s: %w", h, err)
		}
		n, err := w.Write(raw)
		return int64(n), err
	}
	f, err := os.Open(s.loosePath(h))
	if errors.Is(err, fs.ErrNotExist) {
		if lostAt != "" {
			return 0, fmt.Errorf("%w: object %s is missing from the store: its bytes were cut off the end of its pack (%s), as a power loss can leave it", ErrCorrupt, h, lostAt)
		}
		return 0, fmt.Errorf("%w: object %s is missing from the store", ErrCorrupt, h)
	}
	if err != nil {
		return 0, fmt.Errorf("checkpoint store: object %s: %w", h, err)
	}
	defer f.Close()
	return copyLoose(f, h, w)
}

func copyLoose(f io.Reader, h Hash, w io.Writer) (int64, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil || string(hdr[:4]) != looseMagic || hdr[4] > flagDeflate {
		return 0, fmt.Errorf("%w %s: bad header", ErrCorrupt, h)
	}
	var src io.Reader = f
	if hdr[4] == flagDeflate {
		fr := flate.NewReader(f)
		defer fr.Close()
		src = fr
	}
	hs := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, hs), src)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return n, err
		}
		return n, fmt.Errorf("%w %s: %v", ErrCorrupt, h, err)
	}
	var got Hash
	hs.Sum(got[:0])
	if got != h {
		return n, fmt.Errorf("%w %s: content does not match its hash", ErrCorrupt, h)
	}
	return n, nil
}

// verifyObject re-hashes object h without keeping its content.
func (s *store) verifyObject(h Hash) error {
	_, err := s.copyTo(h, io.Discard)
	return err
}

func (s *store) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	if s.w != nil {
		if s.w.dirty {
			for _, f := range []*os.File{s.w.pack, s.w.idx} {
				if err := fdatasync(f); err != nil && first == nil {
					first = err
				}
			}
		}
		for _, f := range []*os.File{s.w.pack, s.w.idx} {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
		}
		s.w = nil
	}
	for k, f := range s.readers {
		f.Close()
		delete(s.readers, k)
	}
	return first
}

// fdatasync flushes f's data (and the size that reaches it) to the disk;
// a variable so that tests can see what is synced when.
var fdatasync = func(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// syncDir fsyncs a directory so that entries created or renamed in it
// survive a power loss.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	defer d.Close()
	if err := fdatasync(d); err != nil {
		return fmt.Errorf("checkpoint store: syncing %s: %w", dir, err)
	}
	return nil
}

// syncDirs fsyncs dir and its n-1 nearest ancestors: a name made in dir
// survives a power loss only when the directories above it do too.
func syncDirs(dir string, n int) error {
	for ; n > 0; n-- {
		if err := syncDir(dir); err != nil {
			return err
		}
		dir = filepath.Dir(dir)
	}
	return nil
}
