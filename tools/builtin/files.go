package builtin

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// The file tools: read_file, write_file, edit_file and list_dir.
//
// Every access goes through ctx.Root, an os.Root opened on the workspace, and
// never through a plain path: the kernel then refuses any path that resolves
// outside the workspace, including through a symlink planted inside it, and
// there is no window between checking a path and using it in which a
// component could be swapped for such a link. resolvePath only turns the
// model's path into a root-relative one and refuses lexical escapes early,
// with a clearer message.

// Limits of read_file. They keep one tool result within what a model can use:
// a line longer than readFileMaxLineBytes is usually minified code or data, and
// 256 KiB of text is already a large share of a context window.
const (
	readFileDefaultLimit   = 2000
	readFileMaxLineBytes   = 2000
	readFileMaxOutputBytes = 256 << 10
	readFileMaxImageBytes  = 5 << 20
	// looksBinarySniffBytes is how much of a file is searched for a NUL
	// byte to decide that it is binary (the heuristic git and grep use).
	looksBinarySniffBytes = 8000
	// editFileMaxBytes bounds the file edit_file loads into memory.
	editFileMaxBytes = 64 << 20
	// listDirMaxEntries bounds the entries list_dir shows.
	listDirMaxEntries = 1000
)

// ReadFile reads a text file with line numbers, or returns an image.
var ReadFile = sync.OnceValue(func() *tools.Tool {
	return tools.Must(tools.New("read_file",
		`Read a file from the workspace.

Text files are returned with line numbers, like "cat -n": each line is the line number right-aligned in 6 columns, a tab, then the line's text. The line number and tab are not part of the file; leave them out of any old_string you pass to edit_file.

- path: the file, relative to the workspace root or absolute inside it.
- offset: the first line to show (1-based, default 1).
- limit: how many lines to show (default 2000).

By default up to 2000 lines are shown from the start. When more remains, the output ends with a note giving the offset to pass next. Lines longer than 2000 bytes are cut and marked. Output also stops at about 256 KiB, again with a note telling you how to continue. Prefer reading a whole file (or a large range) over many small reads.

PNG, JPEG, GIF and WebP images up to 5 MiB are returned as images you can see. Other binary files are refused. For a directory use list_dir; to find files by name use glob.`,
		unprivileged(runReadFile),
		&tools.Options{
			Security:    readOnlySecurity,
			Annotations: &tools.Annotations{Title: "Read file", ReadOnlyHint: true, OpenWorldHint: tools.Bool(false)},
			InputSchema: fileToolSchema[readFileInput](map[string]any{"offset": 1, "limit": readFileDefaultLimit}, []string{"offset", "limit"}),
		}))
})

// WriteFile creates or overwrites a file.
var WriteFile = sync.OnceValue(func() *tools.Tool {
	return tools.Must(tools.New("write_file",
		`Write a file in the workspace, replacing its whole content.

- path: the file, relative to the workspace root or absolute inside it. Missing parent directories are created.
- content: the complete new content of the file, exactly as it should be on disk.

If the file exists it is overwritten in place and keeps its permissions; otherwise it is created. Use this to create new files or to rewrite a file completely. To change part of an existing file, use edit_file instead: it is safer and cheaper. Read an existing file with read_file before overwriting it so that nothing is lost by accident.`,
		unprivileged(runWriteFile),
		&tools.Options{
			Security:    workspaceSecurity,
			Annotations: &tools.Annotations{Title: "Write file", DestructiveHint: tools.Bool(true), OpenWorldHint: tools.Bool(false)},
		}))
})

// EditFile replaces exact text in a file.
var EditFile = sync.OnceValue(func() *tools.Tool {
	return tools.Must(tools.New("edit_file",
		`Edit a text file in the workspace by replacing an exact string.

- path: the file, relative to the workspace root or absolute inside it. It must exist (use write_file to create a file).
- old_string: the exact text to replace, including all whitespace, indentation and line breaks. Copy it from read_file output without the line-number prefix (the number, then a tab).
- new_string: the text to put in its place (may be empty to delete old_string). It must differ from old_string.
- replace_all: replace every occurrence (default false).

Without replace_all, old_string must occur exactly once in the file; if it occurs several times, include more surrounding lines to make it unique, or set replace_all to true to change them all. Read the file with read_file before editing it. The result shows the edited lines with their new line numbers.`,
		unprivileged(runEditFile),
		&tools.Options{
			Security: workspaceSecurity,
			// An edit overwrites existing text: a destructive update in MCP's
			// sense, even though a checkpoint can undo it.
			Annotations: &tools.Annotations{Title: "Edit file", DestructiveHint: tools.Bool(true), OpenWorldHint: tools.Bool(false)},
			InputSchema: fileToolSchema[editFileInput](map[string]any{"replace_all": false}, nil),
		}))
})

// ListDir lists the entries of a directory.
var ListDir = sync.OnceValue(func() *tools.Tool {
	return tools.Must(tools.New("list_dir",
		`List the entries of a directory in the workspace, sorted by name.

- path: the directory, relative to the workspace root or absolute inside it (default ".", the workspace root).

Each line is one entry: directories end with "/", symbolic links are shown as "name -> target", and files are followed by their size in bytes. Only the directory itself is listed, not its subdirectories; to find files anywhere below a directory use glob (for example "**/*.go"). At most 1000 entries are shown. A name that contains a line break or another control character, or bytes that are not UTF-8, is shown as a double-quoted string with Go escapes ("a\nb.txt", "\xff.dat"); give such a name to the file tools exactly as shown.`,
		unprivileged(runListDir),
		&tools.Options{
			Security:    readOnlySecurity,
			Annotations: &tools.Annotations{Title: "List directory", ReadOnlyHint: true, OpenWorldHint: tools.Bool(false)},
			InputSchema: fileToolSchema[listDirInput](map[string]any{"path": "."}, nil),
		}))
})

type readFileInput struct {
	Path   string `json:"path" jsonschema:"the file to read, relative to the workspace root or absolute inside it"`
	Offset int    `json:"offset,omitempty" jsonschema:"the 1-based line number to start reading at (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"the maximum number of lines to return (default 2000)"`
}

type writeFileInput struct {
	Path    string `json:"path" jsonschema:"the file to write, relative to the workspace root or absolute inside it"`
	Content string `json:"content" jsonschema:"the complete content to write to the file"`
}

type editFileInput struct {
	Path       string `json:"path" jsonschema:"the file to edit, relative to the workspace root or absolute inside it"`
	OldString  string `json:"old_string" jsonschema:"the exact text to replace; whitespace and indentation must match the file exactly"`
	NewString  string `json:"new_string" jsonschema:"the replacement text; must differ from old_string"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence of old_string instead of requiring exactly one (default false)"`
}

type listDirInput struct {
	Path string `json:"path,omitempty" jsonschema:"the directory to list, relative to the workspace root or absolute inside it (default '.')"`
}

// fileToolSchema infers the input schema of T and adds the defaults (shown to
// the model and applied before the handler runs) and a minimum of 1 for the
// named integer fields. A mistake here is a programming error caught when the
// package is initialised.
func fileToolSchema[T any](defaults map[string]any, positive []string) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Errorf("builtin: inferring the schema of %T: %w", *new(T), err))
	}
	prop := func(name string) *jsonschema.Schema {
		p := s.Properties[name]
		if p == nil {
			panic(fmt.Errorf("builtin: %T has no property %q", *new(T), name))
		}
		return p
	}
	for name, v := range defaults {
		raw, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		prop(name).Default = raw
	}
	one := 1.0
	for _, name := range positive {
		prop(name).Minimum = &one
	}
	return s
}

// ---- read_file ----

func runReadFile(ctx *tools.Context, in readFileInput) (*tools.Result, error) {
	if in.Path == "" {
		return nil, errors.New("path is empty; give the file to read, relative to the workspace root")
	}
	rel, err := resolvePath(ctx, in.Path)
	if err != nil {
		return nil, err
	}
	offset, limit := in.Offset, in.Limit
	if offset < 1 {
		offset = 1
	}
	if limit < 1 {
		limit = readFileDefaultLimit
	}

	// Stat before opening: opening a FIFO would block until a writer comes.
	info, err := ctx.Root.Stat(rel)
	if err != nil {
		return nil, rootErr(ctx, in.Path, err)
	}
	if info.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a file; use list_dir to see its entries", in.Path)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s); read_file only reads regular files", in.Path, fileTypeName(info.Mode()))
	}
	f, err := ctx.Root.Open(rel)
	if err != nil {
		return nil, rootErr(ctx, in.Path, err)
	}
	defer f.Close()
	// Check again on the open file, in case the path changed in between.
	if info, err = f.Stat(); err != nil {
		return nil, rootErr(ctx, in.Path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s); read_file only reads regular files", in.Path, fileTypeName(info.Mode()))
	}
	size := info.Size()

	head := make([]byte, looksBinarySniffBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, rootErr(ctx, in.Path, err)
	}
	head = head[:n]
	if n == 0 {
		return tools.Text("(empty file)"), nil
	}

	if mime := fileImageMIME(rel, head); mime != "" {
		if size > readFileMaxImageBytes {
			return nil, fmt.Errorf("%s is a %s image of %d bytes, larger than the %d MiB read_file returns; it cannot be shown", in.Path, mime, size, readFileMaxImageBytes>>20)
		}
		rest, err := io.ReadAll(io.LimitReader(f, readFileMaxImageBytes+1-int64(n)))
		if err != nil {
			return nil, rootErr(ctx, in.Path, err)
		}
		data := append(head, rest...)
		if len(data) > readFileMaxImageBytes {
			return nil, fmt.Errorf("%s is a %s image larger than the %d MiB read_file returns; it cannot be shown", in.Path, mime, readFileMaxImageBytes>>20)
		}
		return &tools.Result{Content: []tools.Content{
			tools.TextContent(fmt.Sprintf("Image %s (%s, %d bytes):", in.Path, mime, len(data))),
			tools.ImageContent(data, mime),
		}}, nil
	}
	if looksBinary(head) {
		return nil, fmt.Errorf("%s is a binary file (%d bytes); read_file only shows text and PNG, JPEG, GIF or WebP images. If you must inspect it, use a shell command such as `file` or `xxd | head`", in.Path, size)
	}

	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(head), f), 64<<10)
	var out strings.Builder
	line := 0 // lines consumed so far
	shown := 0
	stop := "" // why output stopped before the end of the file, if it did
	for {
		if line%1024 == 0 {
			if err := ctx.Context().Err(); err != nil {
				return nil, err
			}
		}
		want := line+1 >= offset
		text, total, ok, err := fileReadLine(br, want)
		if err != nil {
			return nil, rootErr(ctx, in.Path, err)
		}
		if !ok {
			break
		}
		line++
		if !want {
			continue
		}
		formatted := fileFormatLine(line, text, total)
		if out.Len()+len(formatted)+1 > readFileMaxOutputBytes {
			stop = "size" // this line was read but is not shown
			break
		}
		if out.Len() > 0 {
			out.WriteByte('\n')
		}
		out.WriteString(formatted)
		shown++
		if shown == limit {
			stop = "limit"
			break
		}
	}
	if shown == 0 && stop == "" {
		return nil, fmt.Errorf("offset %d is past the end of %s, which has %d lines", offset, in.Path, line)
	}
	if stop != "" {
		// Count what is left so that the note can give the total.
		rest, err := fileCountLines(ctx, br)
		if err != nil {
			return nil, rootErr(ctx, in.Path, err)
		}
		totalLines := line + rest
		last := offset + shown - 1
		switch {
		case stop == "size":
			fmt.Fprintf(&out, "\n\n(Output stopped after line %d of %d to stay under %d KiB. To continue, call read_file with offset=%d; use a smaller limit if the lines are long.)", last, totalLines, readFileMaxOutputBytes>>10, last+1)
		case totalLines > last:
			fmt.Fprintf(&out, "\n\n(Showing lines %d-%d of %d. To continue, call read_file with offset=%d.)", offset, last, totalLines, last+1)
		}
	}
	return tools.Text(out.String()), nil
}

// fileFormatLine formats one line like cat -n, cutting it at
// readFileMaxLineBytes (on a UTF-8 boundary) with a marker. total is the
// line's full length; text holds at least its first readFileMaxLineBytes+4
// bytes.
func fileFormatLine(n int, text []byte, total int) string {
	if total <= readFileMaxLineBytes {
		return fmt.Sprintf("%6d\t%s", n, text)
	}
	cut := readFileMaxLineBytes
	for cut > 0 && cut < len(text) && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return fmt.Sprintf("%6d\t%s… [line truncated: %d bytes in total]", n, text[:cut], total)
}

// fileReadLine reads one line from br. It returns the line's first
// readFileMaxLineBytes+4 bytes (only if keep is set) without the line ending,
// the line's full length, and ok=false at the end of the input. A trailing
// "\r" is treated as part of the line ending, so CRLF files read cleanly.
// Memory stays bounded however long the line is.
func fileReadLine(br *bufio.Reader, keep bool) (text []byte, total int, ok bool, err error) {
	const maxKeep = readFileMaxLineBytes + 4
	var last byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			ok = true
		}
		if err == nil {
			chunk = chunk[:len(chunk)-1] // the '\n'
		}
		if len(chunk) > 0 {
			last = chunk[len(chunk)-1]
		}
		if keep && len(text) < maxKeep {
			text = append(text, chunk[:min(len(chunk), maxKeep-len(text))]...)
		}
		total += len(chunk)
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil, io.EOF:
			if last == '\r' {
				total--
				if len(text) > total {
					text = text[:total]
				}
			}
			return text, total, ok, nil
		default:
			return nil, 0, false, err
		}
	}
}

// fileCountLines counts the lines left in br, a final line without a newline
// included.
func fileCountLines(ctx *tools.Context, br *bufio.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	count := 0
	var last byte = '\n'
	for {
		if err := ctx.Context().Err(); err != nil {
			return 0, err
		}
		n, err := br.Read(buf)
		if n > 0 {
			count += bytes.Count(buf[:n], []byte{'\n'})
			last = buf[n-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		count++
	}
	return count, nil
}

// looksBinary reports whether data, the start of a file, holds a NUL byte in
// its first looksBinarySniffBytes bytes: text in any common encoding except
// UTF-16/32 has none.
func looksBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), looksBinarySniffBytes)], 0) >= 0
}

// fileImageMIME returns the MIME type of an image that read_file returns as
// an image: the name must have an image extension and the content the
// matching kind of magic bytes, so that neither a misnamed binary nor a
// renamed text file is sent as an image.
func fileImageMIME(name string, head []byte) string {
	var byMagic string
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		byMagic = "image/png"
	case bytes.HasPrefix(head, []byte{0xff, 0xd8, 0xff}):
		byMagic = "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		byMagic = "image/gif"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		byMagic = "image/webp"
	default:
		return ""
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp":
		return byMagic
	}
	return ""
}

// fileTypeName names a non-regular file type for error messages.
func fileTypeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}

// ---- write_file ----

// recordOtherNames records the pre-image of every other workspace name of
// rel's file when it has hard links: the tools write in place (keeping
// mode, owner and links), so the bytes change under each name, and a
// rewind must bring them back under each (the sandbox's hard-link rule,
// one implementation: sandbox.HardLinkNames).
func recordOtherNames(ctx *tools.Context, display, rel string) error {
	names, err := sandbox.HardLinkNames(ctx.Root.FS(), filepath.ToSlash(rel))
	if err != nil {
		return fmt.Errorf("%s has other hard links and they could not all be found (%w), so nothing was written; remove the extra links or copy the file first", display, err)
	}
	for _, n := range names {
		if n == filepath.ToSlash(rel) {
			continue
		}
		if err := ctx.RecordSnapshot(filepath.FromSlash(n)); err != nil {
			return fmt.Errorf("could not record a checkpoint of %s, a hard link to %s, so nothing was written: %w", n, display, err)
		}
	}
	return nil
}

func runWriteFile(ctx *tools.Context, in writeFileInput) (string, error) {
	rel, err := resolvePath(ctx, in.Path)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", errors.New("path must name a file inside the workspace, not the workspace directory itself")
	}
	if err := refuseGitPath(ctx, in.Path, rel); err != nil {
		return "", err
	}

	// Find the parent directories that do not exist yet, top-down.
	missing, err := fileMissingParents(ctx, in.Path, rel)
	if err != nil {
		return "", err
	}

	// What is at the path now. Stat follows symlinks inside the root and
	// fails with "escapes" for one that leads outside.
	existed := false
	var oldSize int64
	if len(missing) == 0 {
		linfo, err := ctx.Root.Lstat(rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return "", rootErr(ctx, in.Path, err)
		default:
			info, err := ctx.Root.Stat(rel)
			if err != nil {
				if linfo.Mode()&fs.ModeSymlink != 0 && errors.Is(err, fs.ErrNotExist) {
					target, _ := ctx.Root.Readlink(rel)
					return "", fmt.Errorf("%s is a symbolic link to %q, which does not exist; write to the target path directly", in.Path, target)
				}
				return "", rootErr(ctx, in.Path, err)
			}
			if info.IsDir() {
				return "", fmt.Errorf("%s is a directory; write_file can only write files", in.Path)
			}
			if !info.Mode().IsRegular() {
				return "", fmt.Errorf("%s is not a regular file (%s); write_file will not write to it", in.Path, fileTypeName(info.Mode()))
			}
			existed = true
			oldSize = info.Size()
		}
	}

	// Record every pre-image before changing anything: a change that
	// cannot be recorded cannot be rewound, so it must not happen.
	for _, dir := range missing {
		if err := ctx.RecordSnapshot(dir); err != nil {
			return "", fmt.Errorf("could not record a checkpoint of %s before creating it, so nothing was written: %w", dir, storeFullHint(err))
		}
	}
	if err := ctx.RecordSnapshot(rel); err != nil {
		return "", fmt.Errorf("could not record a checkpoint of %s before writing it, so nothing was written: %w", in.Path, storeFullHint(err))
	}
	if err := recordOtherNames(ctx, in.Path, rel); err != nil {
		return "", err
	}

	for _, dir := range missing {
		if err := ctx.Root.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", rootErr(ctx, dir, err)
		}
	}
	// Truncated in place: an existing file keeps its mode, owner and
	// hard links. The mode only applies to a new file. Not O_TRUNC: the
	// file opened is checked first (the .git rule), before it loses a
	// byte.
	f, err := ctx.Root.OpenFile(rel, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return "", rootErr(ctx, in.Path, err)
	}
	if err := checkOpenedNotGit(ctx, in.Path, f); err != nil {
		f.Close()
		if !existed {
			ctx.Root.Remove(rel) // the empty file this call made
		}
		return "", err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return "", rootErr(ctx, in.Path, err)
	}
	if _, err := io.WriteString(f, in.Content); err != nil {
		f.Close()
		return "", rootErr(ctx, in.Path, err)
	}
	if err := f.Close(); err != nil {
		return "", rootErr(ctx, in.Path, err)
	}
	// What this call wrote, so that another writer's edit meanwhile is
	// never taken for the agent's.
	// RecordWrite only reads (hashes) the bytes: the content's own bytes
	// are lent, not copied — a large file would otherwise be held twice.
	ctx.RecordWrite(rel, unsafe.Slice(unsafe.StringData(in.Content), len(in.Content)))

	var msg string
	if existed {
		msg = fmt.Sprintf("Overwrote %s with %d bytes (it had %d bytes).", in.Path, len(in.Content), oldSize)
	} else {
		msg = fmt.Sprintf("Created %s with %d bytes.", in.Path, len(in.Content))
	}
	if len(missing) > 0 {
		dirs := make([]string, len(missing))
		for i, d := range missing {
			dirs[i] = filepath.ToSlash(d) + "/"
		}
		msg += " Created directories: " + strings.Join(dirs, ", ") + "."
	}
	return msg, nil
}

// fileMissingParents returns the ancestors of rel that do not exist, from the
// top down, and refuses a parent that exists but is not a directory.
func fileMissingParents(ctx *tools.Context, given, rel string) ([]string, error) {
	dir := filepath.Dir(rel)
	if dir == "." {
		return nil, nil
	}
	var missing []string
	parts := strings.Split(dir, string(filepath.Separator))
	for i := range parts {
		p := filepath.Join(parts[:i+1]...)
		if len(missing) > 0 {
			missing = append(missing, p)
			continue
		}
		info, err := ctx.Root.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = append(missing, p)
		case err != nil:
			return nil, rootErr(ctx, given, err)
		case !info.IsDir():
			return nil, fmt.Errorf("cannot write %s: %s is not a directory", given, filepath.ToSlash(p))
		}
	}
	return missing, nil
}

// ---- edit_file ----

func runEditFile(ctx *tools.Context, in editFileInput) (string, error) {
	if err := checkEditInput(in); err != nil {
		return "", err
	}
	rel, err := resolvePath(ctx, in.Path)
	if err != nil {
		return "", err
	}
	if err := refuseGitPath(ctx, in.Path, rel); err != nil {
		return "", err
	}
	info, err := ctx.Root.Stat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s does not exist; edit_file only changes existing files (use write_file to create one)", in.Path)
	}
	if err != nil {
		return "", rootErr(ctx, in.Path, err)
	}
	if info.IsDir() {
		return "", fmt.Errorf("%s is a directory, not a file", in.Path)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (%s); edit_file only edits regular files", in.Path, fileTypeName(info.Mode()))
	}
	if info.Size() > editFileMaxBytes {
		return "", fmt.Errorf("%s is %d bytes, more than the %d MiB edit_file handles", in.Path, info.Size(), editFileMaxBytes>>20)
	}
	data, err := ctx.Root.ReadFile(rel)
	if err != nil {
		return "", rootErr(ctx, in.Path, err)
	}
	if looksBinary(data) {
		return "", fmt.Errorf("%s is a binary file; edit_file only edits text files", in.Path)
	}
	res, err := applyEdit(string(data), in)
	if err != nil {
		return "", err
	}
	updated, count, first, newS, crlf := res.updated, res.count, res.first, res.newS, res.crlf

	if err := ctx.RecordSnapshot(rel); err != nil {
		return "", fmt.Errorf("could not record a checkpoint of %s before editing it, so nothing was changed: %w", in.Path, storeFullHint(err))
	}
	if err := recordOtherNames(ctx, in.Path, rel); err != nil {
		return "", err
	}
	// Write in place, without O_CREATE: the file keeps its mode, and if it
	// vanished meanwhile the edit fails instead of recreating it. Checked
	// (the .git rule) before it is truncated.
	f, err := ctx.Root.OpenFile(rel, os.O_WRONLY, 0)
	if err != nil {
		return "", rootErr(ctx, in.Path, err)
	}
	if err := checkOpenedNotGit(ctx, in.Path, f); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return "", rootErr(ctx, in.Path, err)
	}
	if _, err := io.WriteString(f, updated); err != nil {
		f.Close()
		return "", rootErr(ctx, in.Path, err)
	}
	if err := f.Close(); err != nil {
		return "", rootErr(ctx, in.Path, err)
	}
	ctx.RecordWrite(rel, []byte(updated))

	var b strings.Builder
	if count == 1 {
		fmt.Fprintf(&b, "Edited %s: replaced 1 occurrence.", in.Path)
	} else {
		fmt.Fprintf(&b, "Edited %s: replaced %d occurrences.", in.Path, count)
	}
	if crlf {
		b.WriteString(" (The file uses CRLF line endings; they were kept.)")
	}
	b.WriteString("\n")
	b.WriteString(fileEditSnippet(updated, first, len(newS), count > 1))
	return b.String(), nil
}

// checkEditInput refuses an edit that cannot mean anything, before the
// file is looked at.
func checkEditInput(in editFileInput) error {
	if in.OldString == "" {
		return errors.New("old_string is empty; to create a file or replace its whole content use write_file, otherwise give the exact text to replace")
	}
	if in.OldString == in.NewString {
		return errors.New("old_string and new_string are identical, so there is nothing to change")
	}
	return nil
}

// editResult is what an edit makes of a file's content.
type editResult struct {
	updated string
	count   int    // occurrences replaced
	first   int    // byte offset of the first replacement
	newS    string // the replacement as written (CRLF-adjusted)
	crlf    bool   // the file's CRLF line endings were kept
}

// applyEdit is edit_file's rule for what an edit does to content: the one
// place it is decided, used by the tool and by PreviewChange (the diff a
// person approves must be the change the tool then makes).
func applyEdit(content string, in editFileInput) (editResult, error) {
	if err := checkEditInput(in); err != nil {
		return editResult{}, err
	}
	oldS, newS := in.OldString, in.NewString
	count := strings.Count(content, oldS)
	crlf := false
	if count == 0 && strings.Contains(content, "\r\n") && strings.Contains(oldS, "\n") && !strings.Contains(oldS, "\r\n") {
		// read_file shows CRLF lines without their "\r", so the model's
		// text has bare newlines: match it with the file's line endings.
		oldS = strings.ReplaceAll(oldS, "\n", "\r\n")
		newS = strings.ReplaceAll(strings.ReplaceAll(newS, "\r\n", "\n"), "\n", "\r\n")
		if count = strings.Count(content, oldS); count > 0 {
			crlf = true
		}
	}
	switch {
	case count == 0:
		return editResult{}, fmt.Errorf("old_string was not found in %s. It must match the file exactly, including whitespace, indentation and line breaks, and must not include read_file's line-number prefix. Use read_file to see the current content, then try again", in.Path)
	case count > 1 && !in.ReplaceAll:
		return editResult{}, fmt.Errorf("old_string was found %d times in %s, but it must be unique. Add surrounding lines to old_string so that it matches only the place you want to change, or set replace_all to true to replace all %d occurrences", count, in.Path, count)
	}

	first := strings.Index(content, oldS)
	var updated string
	if in.ReplaceAll {
		updated = strings.ReplaceAll(content, oldS, newS)
	} else {
		updated = strings.Replace(content, oldS, newS, 1)
	}

	return editResult{updated: updated, count: count, first: first, newS: newS, crlf: crlf}, nil
}

// fileEditSnippet shows the lines around the replacement that starts at byte
// start of content and is n bytes long, numbered like read_file, with up to
// three lines of context on each side and at most 30 lines in all.
func fileEditSnippet(content string, start, n int, more bool) string {
	const context, maxLines = 3, 30
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	first := strings.Count(content[:start], "\n") + 1
	last := first + strings.Count(content[start:start+n], "\n")
	from := max(1, first-context)
	to := min(len(lines), last+context)
	cut := false
	if to-from+1 > maxLines {
		to = from + maxLines - 1
		cut = true
	}
	var b strings.Builder
	label := "the edit"
	if more {
		label = "the first edit"
	}
	fmt.Fprintf(&b, "Lines %d-%d after %s:\n", from, to, label)
	for i := from; i <= to; i++ {
		line := strings.TrimSuffix(lines[i-1], "\r")
		b.WriteString(fileFormatLine(i, []byte(line), len(line)))
		b.WriteByte('\n')
	}
	if cut {
		fmt.Fprintf(&b, "(… the replacement continues to line %d)\n", last)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ---- list_dir ----

func runListDir(ctx *tools.Context, in listDirInput) (string, error) {
	rel, err := resolvePath(ctx, in.Path)
	if err != nil {
		return "", err
	}
	shown := in.Path
	if shown == "" {
		shown = "."
	}
	info, err := ctx.Root.Stat(rel)
	if err != nil {
		return "", rootErr(ctx, shown, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("%s is a file, not a directory; use read_file to read it", shown)
	}
	d, err := ctx.Root.Open(rel)
	if err != nil {
		return "", rootErr(ctx, shown, err)
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return "", rootErr(ctx, shown, err)
	}
	if len(entries) == 0 {
		return fmt.Sprintf("(%s is an empty directory)", shown), nil
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })

	var b strings.Builder
	for i, e := range entries {
		if i == listDirMaxEntries {
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		name := quoteName(e.Name())
		switch t := e.Type(); {
		case t.IsDir():
			b.WriteString(name + "/")
		case t&fs.ModeSymlink != 0:
			// Readlink does not follow the link, so even a link that
			// leads outside the workspace is listed (not followed).
			target, err := ctx.Root.Readlink(path.Join(filepath.ToSlash(rel), e.Name()))
			if err != nil {
				target = "?"
			} else {
				target = quotePath(target)
			}
			fmt.Fprintf(&b, "%s -> %s", name, target)
		case t.IsRegular():
			if fi, err := e.Info(); err == nil {
				fmt.Fprintf(&b, "%s (%d bytes)", name, fi.Size())
			} else {
				b.WriteString(name)
			}
		default:
			fmt.Fprintf(&b, "%s (%s)", name, fileTypeName(t))
		}
	}
	if len(entries) > listDirMaxEntries {
		fmt.Fprintf(&b, "\n\n(Showing the first %d of %d entries. Use glob with a pattern to find specific files.)", listDirMaxEntries, len(entries))
	}
	return b.String(), nil
}
