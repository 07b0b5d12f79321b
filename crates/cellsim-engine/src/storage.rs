//! Real bytes: main memory and local stores.
//!
//! A [`Storage`] is one zeroed allocation that lives as long as anyone holds it
//! (the engine, or a Python numpy view). Large allocations come from
//! `alloc_zeroed`, which the operating system backs with untouched zero pages:
//! a 512 MB machine costs nothing until its memory is written.
//!
//! The engine is single-threaded and programs only run while the engine is
//! paused, so reads and writes never overlap; `Storage` still only hands out
//! copies and raw pointers for views, never long-lived references.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::Arc;

/// A fixed-size, zero-initialised byte store with interior mutability.
pub struct Storage {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: Storage is only accessed from the thread that runs the engine; it is
// Send/Sync so that it can be shared (Arc) with the Python buffer objects that
// the same thread uses.
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

impl Storage {
    /// A zeroed store of `len` bytes (lazily backed by the OS for large sizes).
    /// Panics if the host cannot allocate it: use [`Storage::try_new`] for
    /// sizes a user chose.
    pub fn new(len: usize) -> Arc<Storage> {
        Self::try_new(len)
            .unwrap_or_else(|| panic!("out of memory allocating {len} bytes of simulated storage"))
    }

    /// A zeroed store of `len` bytes, or `None` if the host cannot allocate it.
    pub fn try_new(len: usize) -> Option<Arc<Storage>> {
        // Alignment 16 keeps this on calloc, which maps fresh zero pages for
        // large sizes; a larger alignment would make the allocator memset
        // (and so touch) every page.
        let layout = Layout::from_size_align(len.max(1), 16).ok()?;
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        (!ptr.is_null()).then(|| Arc::new(Storage { ptr, len }))
    }

    /// Size in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length store.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `out.len()` bytes starting at `offset` into `out`.
    #[inline]
    pub fn read(&self, offset: usize, out: &mut [u8]) {
        assert!(offset + out.len() <= self.len, "storage read out of range");
        // SAFETY: range checked above; no overlapping mutable access exists.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset), out.as_mut_ptr(), out.len()) }
    }

    /// Copies `data` into the store at `offset`.
    #[inline]
    pub fn write(&self, offset: usize, data: &[u8]) {
        assert!(
            offset + data.len() <= self.len,
            "storage write out of range"
        );
        // SAFETY: range checked above; no overlapping reference exists.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(offset), data.len()) }
    }

    /// Copies `out.len()` (a constant) bytes starting at `offset` into `out`:
    /// inlined as a few vector moves rather than a call to `memcpy`.
    #[inline(always)]
    pub fn read_array<const N: usize>(&self, offset: usize, out: &mut [u8; N]) {
        assert!(offset + N <= self.len, "storage read out of range");
        // SAFETY: range checked above; no overlapping mutable access exists.
        *out = unsafe { std::ptr::read_unaligned(self.ptr.add(offset) as *const [u8; N]) };
    }

    /// Copies `data` (of constant size) into the store at `offset`.
    #[inline(always)]
    pub fn write_array<const N: usize>(&self, offset: usize, data: &[u8; N]) {
        assert!(offset + N <= self.len, "storage write out of range");
        // SAFETY: range checked above; no overlapping reference exists.
        unsafe { std::ptr::write_unaligned(self.ptr.add(offset) as *mut [u8; N], *data) }
    }

    /// Copies `len` bytes from `src` at `src_off` to `dst` at `dst_off`
    /// (the two may be the same store; ranges may overlap).
    #[inline]
    pub fn copy(src: &Storage, src_off: usize, dst: &Storage, dst_off: usize, len: usize) {
        assert!(
            src_off + len <= src.len && dst_off + len <= dst.len,
            "storage copy out of range"
        );
        // SAFETY: ranges checked; `copy` tolerates overlap.
        unsafe { std::ptr::copy(src.ptr.add(src_off), dst.ptr.add(dst_off), len) }
    }

    /// Reads a big-endian u32 (the Cell is big-endian).
    #[inline]
    pub fn read_u32_be(&self, offset: usize) -> u32 {
        let mut b = [0u8; 4];
        self.read(offset, &mut b);
        u32::from_be_bytes(b)
    }

    /// Writes a big-endian u32.
    #[inline]
    pub fn write_u32_be(&self, offset: usize, v: u32) {
        self.write(offset, &v.to_be_bytes())
    }

    /// Reads a big-endian u64.
    #[inline]
    pub fn read_u64_be(&self, offset: usize) -> u64 {
        let mut b = [0u8; 8];
        self.read(offset, &mut b);
        u64::from_be_bytes(b)
    }

    /// Writes a big-endian u64.
    #[inline]
    pub fn write_u64_be(&self, offset: usize, v: u64) {
        self.write(offset, &v.to_be_bytes())
    }

    /// The base pointer, for zero-copy views (Python buffers). The caller must
    /// keep the `Arc<Storage>` alive for as long as the pointer is used.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.len.max(1), 16).expect("storage layout");
        // SAFETY: allocated in `new` with the same layout.
        unsafe { dealloc(self.ptr, layout) }
    }
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Storage({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_stores_are_cheap_until_touched() {
        let s = Storage::new(1 << 30); // 1 GiB, never touched
        s.write_u32_be(123 << 20, 0xdead_beef);
        assert_eq!(s.read_u32_be(123 << 20), 0xdead_beef);
        assert_eq!(s.read_u32_be(0), 0);
    }

    #[test]
    fn copies_between_stores() {
        let a = Storage::new(256);
        let b = Storage::new(256);
        a.write(16, &[1, 2, 3, 4]);
        Storage::copy(&a, 16, &b, 100, 4);
        let mut out = [0u8; 4];
        b.read(100, &mut out);
        assert_eq!(out, [1, 2, 3, 4]);
    }
}
