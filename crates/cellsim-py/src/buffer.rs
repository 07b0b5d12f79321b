//! Simulated memory as a Python buffer.
//!
//! A [`StorageView`] holds the engine's `Arc<Storage>`, so a numpy array made
//! from it (`np.frombuffer(view, dtype)`) stays valid even after the machine
//! is gone, and sees every byte a DMA writes, as a C program's pointer would.

use cellsim_engine::storage::Storage;
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// A writable window on simulated memory (main memory or a local store).
#[pyclass(module = "cellsim._engine", frozen)]
pub struct StorageView {
    store: Arc<Storage>,
    offset: usize,
    len: usize,
}

impl StorageView {
    pub fn new(store: Arc<Storage>, offset: usize, len: usize) -> StorageView {
        StorageView { store, offset, len }
    }
}

#[pymethods]
impl StorageView {
    fn __len__(&self) -> usize {
        self.len
    }

    /// # Safety
    /// Fills `view` with a pointer into the storage, which lives as long as
    /// this object (the buffer holds a reference to it).
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("null view"));
        }
        let me = slf.borrow();
        let ptr = unsafe { me.store.as_ptr().add(me.offset) } as *mut c_void;
        let rc = unsafe {
            ffi::PyBuffer_FillInfo(view, slf.as_ptr(), ptr, me.len as ffi::Py_ssize_t, 0, flags)
        };
        if rc != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}
}
