//! A capture's request/response pairs as one line each (feature `explain`), as `kwire
//! decode` of a capture prints them (docs/cli.md, "Reading a capture").

use std::format;
use std::prelude::rust_2024::*;

use std::collections::BTreeMap;

use super::{Frame, FrameView};
use crate::filter::TopicNames;
use crate::tools::reflect::explain::summary::{push_about, push_errors};
use crate::tools::reflect::explain::{self, api_name};
use crate::{ApiKey, Direction};

/// Requests held waiting for their answers: past it, the oldest is printed without one.
pub const MAX_WAITING: usize = 100_000;

/// The line of each request/response pair of a capture, fed the frames in the order the
/// [`Reader`](super::Reader) reports them: `2026-12-06T02:43:22.269Z conn=3
/// 10.0.0.2:50312 -> 10.0.0.1:9092 app Produce v9 corr=4 req=120B topics=orders records=3
/// zstd resp=60B 1.204ms`. A request's line waits for its response and is printed with it
/// (its size, the latency, what it is about, its error codes); a request that expects no
/// answer (`acks=0`), a cut frame, a request of an API kwire does not know and an unpaired
/// response get a line of their own; requests never answered are printed at the end
/// ([`PairLines::finish`]).
///
/// Topics named by id only (Fetch v13 and later, Produce v13) are named from the
/// capture's earlier answers that pair names with ids (Metadata, CreateTopics,
/// DescribeTopicPartitions).
#[derive(Debug, Default)]
pub struct PairLines {
    /// Request lines by frame index, waiting for their responses.
    waiting: BTreeMap<u64, String>,
    topic_names: TopicNames,
}

impl PairLines {
    /// No frame seen yet.
    pub fn new() -> Self {
        PairLines::default()
    }

    /// The lines to print after frame `f` (each ending in a newline; often none, while a
    /// request waits for its response). `problem` is why a whole frame does not decode, if
    /// it does not: said on its line, and a response with one is not read further.
    pub fn frame(&mut self, f: &Frame, problem: Option<&str>) -> String {
        let mut text = self.line(f, problem).unwrap_or_default();
        // A request pushed out of the table by many unanswered ones is printed now.
        while self.waiting.len() > MAX_WAITING {
            if let Some((_, line)) = self.waiting.pop_first() {
                text.push_str(&line);
                text.push('\n');
            }
        }
        text
    }

    /// The lines of the requests that had no response in the capture.
    pub fn finish(self) -> String {
        self.waiting.into_values().map(|line| format!("{line} no response in the capture\n")).collect()
    }

    fn line(&mut self, f: &Frame, problem: Option<&str>) -> Option<String> {
        let api = |key: Option<i16>| key.map(api_name).unwrap_or_else(|| "?".into());
        let version = f.api_version.map(|v| format!("v{v}")).unwrap_or_else(|| "v?".into());
        let corr = f.correlation_id.map(|c| c.to_string()).unwrap_or_else(|| "?".into());
        let head = format!(
            "{} conn={} {} -> {} {}",
            f.ts,
            f.conn,
            f.client,
            f.broker,
            f.client_id.as_deref().unwrap_or("-")
        );
        let len = f.bytes.len();
        let size = f.size.map(|s| u64::from(s) + 4).unwrap_or(len as u64);
        let trouble = |line: &mut String| {
            if let Some(c) = f.cut {
                line.push_str(&format!(" cut ({c}; {len} of {size} bytes captured)"));
            }
            if let Some(p) = problem {
                line.push_str(&format!(" malformed: {p}"));
            }
        };
        match f.direction {
            Direction::Request => {
                let mut line = format!("{head} {} {version} corr={corr} req={size}B", api(f.api_key));
                if f.cut.is_none() {
                    let mut summary = explain::about_request(f.payload());
                    summary.name_topic_ids(|id| self.topic_names.name(id).map(|n| n.to_string()));
                    push_about(&mut line, summary);
                }
                trouble(&mut line);
                let answered = f.api().is_some() && f.correlation_id.is_some();
                if answered && f.cut.is_none() && !f.expects_response() {
                    return Some(format!("{line} no response expected (acks=0)\n"));
                }
                if answered {
                    self.waiting.insert(f.index, line);
                    None
                } else {
                    Some(format!("{line}\n"))
                }
            }
            Direction::Response => {
                let Some(req) = &f.request else {
                    let mut line = format!(
                        "{head} response corr={corr} resp={size}B unpaired: its request is not in the capture"
                    );
                    trouble(&mut line);
                    return Some(format!("{line}\n"));
                };
                let mut line = match self.waiting.remove(&req.index) {
                    Some(line) => line,
                    None => format!("{head} {} {version} corr={corr} req={}B", api(f.api_key), req.size),
                };
                // The pair's line starts at the request's time and tells the latency.
                let latency = (f.ts.as_nanos() - req.ts.as_nanos()) as f64 / 1e6;
                line.push_str(&format!(" resp={size}B {latency:.3}ms"));
                if f.cut.is_none()
                    && problem.is_none()
                    && let (Some(key), Some(v)) = (f.api_key, f.api_version)
                {
                    if let Some(api) = ApiKey::from_i16(key) {
                        push_about(&mut line, explain::about_response(f.payload(), api, v));
                        if TopicNames::learns_from(api)
                            && let Ok(FrameView::Response(response)) = f.view()
                        {
                            self.topic_names.learn_from(&response);
                        }
                    }
                    push_errors(&mut line, f.payload(), key, v);
                }
                trouble(&mut line);
                Some(format!("{line}\n"))
            }
        }
    }
}
