//! Layer 3, tools: generic work over any message, driven by the schemas as data. It uses
//! the [`codec`](crate::codec) and [`session`](crate::session).
//!
//! - [`reflect`]: the schema walker, dynamic values, building frames from values, JSON
//!   (feature `json`) and annotated explanations (feature `explain`).

pub mod reflect;
