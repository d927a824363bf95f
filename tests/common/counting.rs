//! A counting global allocator, for the tests that check that a path allocates nothing.
//! A test file installs it with
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: common::counting::Counting = common::counting::Counting;
//! ```
//!
//! and measures with [`allocations`], which fails if it is not installed (so that a count
//! of zero cannot come from a missing allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Forwards to the system allocator and counts allocations and reallocations per thread.
pub struct Counting;

thread_local! {
    // Per thread, so that tests running in parallel do not count each other's allocations.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

/// Bytes requested by allocations and reallocations on every thread, since the start.
static BYTES: AtomicUsize = AtomicUsize::new(0);

fn count(bytes: usize) {
    // `try_with`: the slot may be gone while the thread shuts down.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    BYTES.fetch_add(bytes, Ordering::Relaxed);
}

// SAFETY: forwards every call to the system allocator unchanged; only counts them.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `f` and returns how many allocations it made on this thread, with its result.
/// Panics if [`Counting`] is not the global allocator.
pub fn allocations<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let probe = ALLOCATIONS.with(Cell::get);
    drop(std::hint::black_box(Box::new(0u64)));
    assert!(ALLOCATIONS.with(Cell::get) > probe, "common::counting::Counting is not the global allocator");
    let before = ALLOCATIONS.with(Cell::get);
    let out = f();
    (ALLOCATIONS.with(Cell::get) - before, out)
}

/// Runs `f` and returns how many bytes every thread of the process asked the allocator
/// for meanwhile (a reallocation counts its new size), with its result. Other threads'
/// allocations count too, so a test measuring a server it runs is alone in its binary.
/// Panics if [`Counting`] is not the global allocator.
pub fn bytes_allocated<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let probe = BYTES.load(Ordering::Relaxed);
    drop(std::hint::black_box(Box::new([0u8; 64])));
    assert!(
        BYTES.load(Ordering::Relaxed) >= probe + 64,
        "common::counting::Counting is not the global allocator"
    );
    let before = BYTES.load(Ordering::Relaxed);
    let out = f();
    (BYTES.load(Ordering::Relaxed) - before, out)
}
