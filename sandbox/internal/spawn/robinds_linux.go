package spawn

/*
#include <stdlib.h>
#include "confine.h"
*/
import "C"

import "unsafe"

// ReadOnlyBind is an entry bound over itself read-only in every private
// mount namespace of a sandbox (the workspace's .git, sandbox's
// gitguard_linux.go): its canonical path and the identity la_bind_readonly
// must find there, so that an entry swapped since New is refused rather
// than bound.
type ReadOnlyBind struct {
	Path     string
	Dev, Ino uint64
}

// SetReadOnlyBinds hands m the entries la_bind_readonly binds, right after
// the writable roots are attached (nil m, or an empty list: nothing).
func (c *Mounts) SetReadOnlyBinds(list []ReadOnlyBind) {
	if c == nil || len(list) == 0 {
		return
	}
	c.freeReadOnlyBinds()
	arr := (*C.struct_la_mount_root)(C.calloc(C.size_t(len(list)), C.size_t(unsafe.Sizeof(C.struct_la_mount_root{}))))
	cb := unsafe.Slice(arr, len(list))
	for i, m := range list {
		cb[i].path = C.CString(m.Path)
		cb[i].dev, cb[i].ino = C.uint64_t(m.Dev), C.uint64_t(m.Ino)
		c.roPaths = append(c.roPaths, m.Path)
	}
	c.own.ro_binds, c.own.n_ro_binds = arr, C.int(len(list))
}

// freeReadOnlyBinds releases what SetReadOnlyBinds allocated.
func (c *Mounts) freeReadOnlyBinds() {
	o := c.own
	if n := int(o.n_ro_binds); n > 0 {
		for _, b := range unsafe.Slice(o.ro_binds, n) {
			C.free(unsafe.Pointer(b.path))
		}
		C.free(unsafe.Pointer(o.ro_binds))
		o.ro_binds, o.n_ro_binds = nil, 0
	}
	c.roPaths = nil
}

// describeReadOnlyBind names failed read-only bind i (which, from
// LA_RO_BIND_BASE on), or "".
func (c *Mounts) describeReadOnlyBind(i int) string {
	if i -= C.LA_RO_BIND_BASE; c == nil || i < 0 || i >= len(c.roPaths) {
		return ""
	}
	return " (binding " + c.roPaths[i] + " read-only: the .git changed since the sandbox was made; make a new sandbox)"
}
