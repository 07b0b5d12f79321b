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
//!
//! On Unix a store of a page or more is its own anonymous mapping, so that
//! [`Storage::share`] can turn it, in place, into a shared-memory mapping that
//! another process (a C program's, see `python/cellsim/c/`) maps too.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::{Arc, Mutex};

/// A fixed-size, zero-initialised byte store with interior mutability.
pub struct Storage {
    ptr: *mut u8,
    len: usize,
    /// Bytes mapped (a whole number of pages) when the store is its own
    /// mapping; 0 when it came from the allocator.
    mapped: usize,
    /// The shared-memory file behind the store, once shared.
    shared_fd: Mutex<Option<i32>>,
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
        #[cfg(unix)]
        if len >= unix::page_size() {
            let (ptr, mapped) = unix::map_anonymous(len)?;
            return Some(Arc::new(Storage {
                ptr,
                len,
                mapped,
                shared_fd: Mutex::new(None),
            }));
        }
        // Alignment 16 keeps this on calloc, which maps fresh zero pages for
        // large sizes; a larger alignment would make the allocator memset
        // (and so touch) every page.
        let layout = Layout::from_size_align(len.max(1), 16).ok()?;
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        (!ptr.is_null()).then(|| {
            Arc::new(Storage {
                ptr,
                len,
                mapped: 0,
                shared_fd: Mutex::new(None),
            })
        })
    }

    /// Makes the store shared memory, in place (same address, same bytes), and
    /// returns the file descriptor of its memory file (a `memfd`, close-on-exec;
    /// the store owns it): another process that maps it sees and changes the
    /// same bytes. Sharing twice returns the same descriptor. Fails for a store
    /// smaller than a page or off Unix.
    pub fn share(&self) -> std::io::Result<i32> {
        let mut fd = self.shared_fd.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(fd) = *fd {
            return Ok(fd);
        }
        if self.mapped == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "only a store of a page or more (on Unix) can be shared",
            ));
        }
        #[cfg(unix)]
        {
            // SAFETY: [ptr, ptr + mapped) is this store's own mapping, and no
            // reference into it outlives a call (see the module's notes).
            let new = unsafe { unix::share_in_place(self.ptr, self.mapped)? };
            *fd = Some(new);
            Ok(new)
        }
        #[cfg(not(unix))]
        unreachable!("stores are their own mappings only on Unix")
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
        #[cfg(unix)]
        if self.mapped != 0 {
            let fd = self
                .shared_fd
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            // SAFETY: the mapping is this store's, made in `try_new` (or replaced in
            // place by `share`), and nothing uses it after the drop.
            unsafe { unix::unmap(self.ptr, self.mapped, fd) };
            return;
        }
        let layout = Layout::from_size_align(self.len.max(1), 16).expect("storage layout");
        // SAFETY: allocated in `new` with the same layout.
        unsafe { dealloc(self.ptr, layout) }
    }
}

#[cfg(unix)]
mod unix {
    use std::io;

    pub fn page_size() -> usize {
        // SAFETY: sysconf has no preconditions.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p > 0 {
            p as usize
        } else {
            4096
        }
    }

    /// A fresh private anonymous mapping of at least `len` bytes (zero pages,
    /// backed only when touched): its pointer and mapped size.
    pub fn map_anonymous(len: usize) -> Option<(*mut u8, usize)> {
        let page = page_size();
        let mapped = len.checked_add(page - 1)? & !(page - 1);
        // SAFETY: a new mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        (p != libc::MAP_FAILED).then_some((p as *mut u8, mapped))
    }

    /// # Safety
    /// `[ptr, ptr + mapped)` must be one mapping from `map_anonymous`, used by nobody else
    /// during the call.
    pub unsafe fn unmap(ptr: *mut u8, mapped: usize, fd: Option<i32>) {
        libc::munmap(ptr as *mut libc::c_void, mapped);
        if let Some(fd) = fd {
            libc::close(fd);
        }
    }

    /// Which pages of `[ptr, ptr + mapped)` may hold a non-zero byte: those
    /// present or swapped out (`/proc/self/pagemap`); every page where that
    /// cannot be read.
    fn touched_pages(ptr: *mut u8, mapped: usize, page: usize) -> Vec<bool> {
        use std::io::{Read, Seek, SeekFrom};
        let n = mapped / page;
        let read = || -> io::Result<Vec<bool>> {
            let mut f = std::fs::File::open("/proc/self/pagemap")?;
            f.seek(SeekFrom::Start((ptr as usize / page * 8) as u64))?;
            let mut raw = vec![0u8; n * 8];
            f.read_exact(&mut raw)?;
            Ok(raw
                .chunks_exact(8)
                .map(|e| {
                    let v = u64::from_le_bytes(e.try_into().expect("8 bytes"));
                    v >> 62 != 0 // bit 63: present, bit 62: swapped
                })
                .collect())
        };
        read().unwrap_or_else(|_| vec![true; n])
    }

    /// Replaces the private mapping `[ptr, ptr + mapped)` by a shared mapping of a new
    /// memory file holding the same bytes; returns the file's descriptor.
    ///
    /// # Safety
    /// As [`unmap`]: the range is one private anonymous mapping nobody uses meanwhile.
    pub unsafe fn share_in_place(ptr: *mut u8, mapped: usize) -> io::Result<i32> {
        let fail = |fd: i32| {
            let e = io::Error::last_os_error();
            if fd >= 0 {
                libc::close(fd);
            }
            Err(e)
        };
        let fd = libc::memfd_create(c"cellsim-storage".as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 {
            return fail(-1);
        }
        if libc::ftruncate(fd, mapped as libc::off_t) != 0 {
            return fail(fd);
        }
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        let tmp = libc::mmap(std::ptr::null_mut(), mapped, rw, libc::MAP_SHARED, fd, 0);
        if tmp == libc::MAP_FAILED {
            return fail(fd);
        }
        let page = page_size();
        for (i, touched) in touched_pages(ptr, mapped, page).into_iter().enumerate() {
            if !touched {
                continue;
            }
            let src = std::slice::from_raw_parts(ptr.add(i * page), page);
            if src.iter().any(|&b| b != 0) {
                std::ptr::copy_nonoverlapping(src.as_ptr(), (tmp as *mut u8).add(i * page), page);
            }
        }
        libc::munmap(tmp, mapped);
        let at = libc::mmap(
            ptr as *mut libc::c_void,
            mapped,
            rw,
            libc::MAP_SHARED | libc::MAP_FIXED,
            fd,
            0,
        );
        if at == libc::MAP_FAILED {
            return fail(fd);
        }
        Ok(fd)
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

    #[cfg(unix)]
    #[test]
    fn a_shared_store_keeps_its_address_and_bytes() {
        let s = Storage::new(3 * 4096 + 100);
        let at = s.as_ptr();
        s.write(5000, &[7, 8, 9]);
        let fd = s.share().expect("shared");
        assert_eq!(s.share().expect("again"), fd);
        assert_eq!(s.as_ptr(), at);
        let mut out = [0u8; 3];
        s.read(5000, &mut out);
        assert_eq!(out, [7, 8, 9]);
        s.write(12000, &[1]);
        // the memory file holds the same bytes
        let mut byte = [0u8; 1];
        // SAFETY: a valid descriptor and buffer.
        let n = unsafe { libc::pread(fd, byte.as_mut_ptr() as *mut libc::c_void, 1, 12000) };
        assert_eq!((n, byte[0]), (1, 1));
        assert!(Storage::new(100).share().is_err());
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
