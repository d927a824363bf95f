//! A `#![no_std]` staticlib that uses kwire. Linking it fails with a duplicate
//! `panic_impl` lang item if anything in kwire's dependency tree links `std`, and with "no
//! global memory allocator found" if the core configuration needs `alloc`.

#![no_std]

use kwire::dispatch;
use kwire::frame::{self, FrameStatus};
use kwire::messages::{ListOffsetsRequest, RequestBodyView, list_offsets};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

#[cfg(feature = "alloc")]
mod heap {
    use core::alloc::{GlobalAlloc, Layout};

    /// Never hands out memory; it only has to exist for the link to succeed.
    struct NoHeap;

    // SAFETY: returning null is how an allocator reports failure.
    unsafe impl GlobalAlloc for NoHeap {
        unsafe fn alloc(&self, _: Layout) -> *mut u8 {
            core::ptr::null_mut()
        }
        unsafe fn dealloc(&self, _: *mut u8, _: Layout) {}
    }

    #[global_allocator]
    static HEAP: NoHeap = NoHeap;
}

/// Parses a request frame from a stream buffer and returns the number of ListOffsets
/// partitions in it (-1 on any error).
#[unsafe(no_mangle)]
pub extern "C" fn kwire_count_partitions(buf: &[u8; 64]) -> i32 {
    let Ok(FrameStatus::Complete { frame, .. }) = frame::split_frame(buf, 1 << 20) else { return -1 };
    let Ok(req) = dispatch::parse_request(frame) else { return -1 };
    let RequestBodyView::ListOffsets(body) = req.body else { return -1 };
    let mut n = 0;
    for topic in body.topics() {
        n += topic.partitions().len() as i32;
    }
    n
}

/// Encodes a ListOffsets request frame from data on the stack, without an allocator.
#[unsafe(no_mangle)]
pub extern "C" fn kwire_encode(out: &mut [u8; 128]) -> i32 {
    let partitions =
        [list_offsets::ListOffsetsPartition { partition_index: 0, timestamp: -1, ..Default::default() }];
    let topics = [list_offsets::ListOffsetsTopic {
        name: "t".into(),
        partitions: (&partitions).into(),
        ..Default::default()
    }];
    let body = ListOffsetsRequest { replica_id: -1, topics: (&topics).into(), ..Default::default() };
    match dispatch::encode_request(&body, 10, 1, Some("embedded"), out) {
        Ok(n) => n as i32,
        Err(_) => -1,
    }
}
