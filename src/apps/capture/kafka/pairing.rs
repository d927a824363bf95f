//! Pairing: each frame reported as an event, requests remembered in a
//! [`crate::session::conn::InFlight`] and each response paired with the request it answers.

use std::prelude::rust_2024::*;

use std::net::SocketAddr;

use super::super::{Event, Frame, RequestOf, Timestamp};
use super::{Ctx, Kafka};
use crate::codec::frame::{
    RequestHeaderView, request_api_key, request_api_version, request_ids, response_correlation_id,
};
use crate::{ApiKey, Direction};

/// A request awaiting its answer.
pub(super) struct Asked {
    index: u64,
    ts: Timestamp,
    size: usize,
    client_id: Option<String>,
}

impl Kafka {
    /// Reports the current frame of `side` (whole, or cut as its `cut` says).
    pub(super) fn emit(
        &mut self,
        side: usize,
        ts: Timestamp,
        addrs: [SocketAddr; 2],
        id: u64,
        ctx: &mut Ctx<'_>,
    ) {
        let (client, broker) = self.ends(addrs);
        let direction = self.direction(side);
        let f = &mut self.framers[side];
        let cut = f.cut;
        let want = f.want;
        let bytes = f.reset();
        *ctx.next_index += 1;
        let index = *ctx.next_index;
        let size = want.map(|w| (w - 4) as u32);
        // The frame after its size prefix (empty when cut before it).
        let body = bytes.get(4..).unwrap_or_default();
        let mut frame = Frame {
            index,
            conn: id,
            client,
            broker,
            direction,
            ts,
            size,
            correlation_id: None,
            api_key: None,
            api_version: None,
            client_id: None,
            cut,
            request: None,
            bytes: Vec::new(),
        };
        match direction {
            Direction::Request => {
                // A frame cut inside its header reports the fields before the cut.
                frame.api_key = request_api_key(body);
                frame.api_version = request_api_version(body);
                frame.correlation_id = request_ids(body).map(|(_, _, corr)| corr);
                frame.client_id = bytes
                    .get(4..)
                    .and_then(|b| RequestHeaderView::peek(b).ok())
                    .and_then(|p| p.client_id.map(str::to_string));
                if let (Some(key), Some(version), Some(corr)) =
                    (frame.api_key, frame.api_version, frame.correlation_id)
                    && let Some(api) = ApiKey::from_i16(key)
                {
                    let answered = cut.is_some()
                        || crate::session::conn::frame_expects_response(&bytes[4..]).unwrap_or(true);
                    if answered {
                        if self.in_flight.is_full()
                            && let Some(oldest) = self.in_flight.oldest().map(|p| p.correlation_id)
                        {
                            let _ = self.in_flight.complete(oldest);
                        }
                        let asked = Asked {
                            index,
                            ts,
                            size: bytes.len().max(want.unwrap_or(0) as usize),
                            client_id: frame.client_id.clone(),
                        };
                        let _ = self.in_flight.push(corr, api, version, asked);
                    }
                }
            }
            Direction::Response => {
                frame.correlation_id = response_correlation_id(body);
                if let Some(corr) = frame.correlation_id
                    && self.in_flight.iter().any(|p| p.correlation_id == corr)
                {
                    // Kafka answers in order: requests older than the one answered got no
                    // answer in the capture.
                    while let Some(oldest) = self.in_flight.oldest().map(|p| p.correlation_id) {
                        let Ok(p) = self.in_flight.complete(oldest) else { break };
                        if oldest == corr {
                            frame.api_key = Some(p.api_key.to_i16());
                            frame.api_version = Some(p.api_version);
                            frame.client_id = p.payload.client_id.clone();
                            frame.request = Some(RequestOf {
                                index: p.payload.index,
                                ts: p.payload.ts,
                                size: p.payload.size,
                                client_id: p.payload.client_id,
                            });
                            break;
                        }
                    }
                }
            }
        }
        frame.bytes = bytes;
        ctx.events.push_back(Event::Frame(frame));
    }
}
