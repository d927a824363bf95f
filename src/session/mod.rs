//! Layer 2, sessions: what a connection keeps between frames, without I/O. It uses the
//! [`codec`](crate::codec) only.
//!
//! - `conn` (feature `alloc`): sans-IO client and server connections, requests in flight,
//!   frame buffers, and tokio codecs (feature `tokio`);
//! - [`secrets`]: the fields that carry credentials, and masked copies of frames for logs.

#[cfg(feature = "alloc")]
pub mod conn;
pub mod secrets;
