//! The proxy's look-ups of topic ids: before a request that names topics by ids the shared
//! [`TopicNames`] book does not know goes on, the proxy asks the broker their names, so
//! that filters that judge topics by name can name them ([`TopicNames::resolve`]).

#[allow(unused_imports)]
use std::{boxed::Box, vec::Vec};

use super::{Decision, Upstream, WaitingFilter};
use crate::ApiKey;
use crate::codec::messages::RequestBodyView;
use crate::codec::types::Uuid;
use crate::filter::{TopicNames, topic_id};
use crate::tools::reflect::walk::{Field, Scalar, Visitor};
use crate::tools::reflect::{self, FieldType, StructSchema};

/// The most ids one lookup asks about (the rest of a request's unknown ids stay unknown).
const MAX_LOOKUP: usize = 1000;

/// Per API key, the request versions (bit N: version N) that carry topic ids.
fn versions_with_ids() -> &'static [u64; 128] {
    static TABLE: std::sync::OnceLock<[u64; 128]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        fn has(s: &'static StructSchema, version: i16, depth: usize) -> bool {
            depth < reflect::walk::MAX_DEPTH
                && s.fields.iter().filter(|f| f.versions.contains(version)).any(|f| {
                    let mut ty = &f.ty;
                    while let FieldType::Array(t) = ty {
                        ty = t;
                    }
                    topic_id(f) || matches!(ty, FieldType::Struct(inner) if has(inner, version, depth + 1))
                })
        }
        let mut table = [0u64; 128];
        for &api in ApiKey::ALL {
            let schema = reflect::request_schema(api);
            let Some(slot) = usize::try_from(api.to_i16()).ok().and_then(|i| table.get_mut(i)) else {
                continue;
            };
            for version in schema.versions.min.max(0)..=schema.versions.max.min(63) {
                if has(schema.body, version, 0) {
                    *slot |= 1 << version;
                }
            }
        }
        table
    })
}

/// Looks up the topic ids of a request that the book does not know: a [`WaitingFilter`]
/// that, before such a request goes on, asks the broker their names (one Metadata v12
/// request by id, on the connection's own broker connection) and notes them in the book.
pub(crate) struct LookUpIds {
    ids: TopicNames,
}

/// The topic ids of a body.
#[derive(Default)]
struct NamedIds(Vec<Uuid>);

impl NamedIds {
    fn add(&mut self, id: Uuid) {
        if id != Uuid::ZERO && !self.0.contains(&id) && self.0.len() < MAX_LOOKUP {
            self.0.push(id);
        }
    }
}

impl<'a> Visitor<'a> for NamedIds {
    fn value(&mut self, field: &Field<'_>, value: Scalar<'a>) {
        if let Scalar::Uuid(id) = value
            && topic_id(field.schema)
        {
            self.add(id);
        }
    }
}

impl LookUpIds {
    /// Look-ups that fill `ids`.
    pub(crate) fn new(ids: TopicNames) -> Self {
        LookUpIds { ids }
    }

    /// The ids the request names that the book does not know.
    fn unknown(&self, frame: &[u8]) -> Vec<Uuid> {
        let Ok(request) = crate::codec::dispatch::parse_request(frame) else { return Vec::new() };
        let (api, version) = (request.body.api_key(), request.header.api_version());
        let mut named = NamedIds::default();
        // The hot APIs through their typed views; the rest through the schema walker.
        match request.body {
            RequestBodyView::Produce(p) => {
                for t in p.topic_data().iter() {
                    named.add(t.topic_id());
                }
                return self.not_known(named);
            }
            RequestBodyView::Fetch(f) => {
                for t in f.topics().iter() {
                    named.add(t.topic_id());
                }
                for t in f.forgotten_topics_data().iter() {
                    named.add(t.topic_id());
                }
                return self.not_known(named);
            }
            _ => {}
        }
        let walked = reflect::walk::walk_body(
            reflect::request_schema(api),
            version,
            request.body.as_bytes(),
            0,
            &mut named,
        );
        if walked.is_err() {
            return Vec::new();
        }
        self.not_known(named)
    }

    fn not_known(&self, mut named: NamedIds) -> Vec<Uuid> {
        self.ids.with(|book| named.0.retain(|id| !book.knows(id)));
        named.0
    }

    /// Asks the broker the names of `ids` and notes them in the book.
    async fn look_up(&self, ids: Vec<Uuid>, upstream: &mut Upstream<'_>) {
        use crate::codec::messages::metadata::MetadataRequestTopic;
        let topics: Vec<MetadataRequestTopic> = ids
            .iter()
            .map(|&topic_id| MetadataRequestTopic { topic_id, name: None, ..Default::default() })
            .collect();
        let request = crate::codec::messages::MetadataRequest {
            topics: Some((&topics[..]).into()),
            allow_auto_topic_creation: false,
            ..Default::default()
        };
        // No answer (or an error) leaves the ids unknown: the tenant's filter then takes
        // them for another tenant's.
        let Ok(answer) = upstream.request(&request, 12).await else { return };
        let Ok((response, _)) = crate::session::conn::read_response(&answer, ApiKey::Metadata, 12) else {
            return;
        };
        let crate::codec::messages::ResponseBodyView::Metadata(view) = response.body else { return };
        self.ids.with(|book| {
            for topic in view.topics().iter() {
                if let (0, Some(name)) = (topic.error_code(), topic.name()) {
                    book.learn(topic.topic_id(), name);
                }
            }
        });
    }
}

impl WaitingFilter for LookUpIds {
    fn wants_request(&self, api_key: ApiKey, version: i16) -> bool {
        let versions = usize::try_from(api_key.to_i16()).ok().and_then(|i| versions_with_ids().get(i));
        matches!((versions, u32::try_from(version)), (Some(bits), Ok(v)) if v < 64 && bits & (1 << v) != 0)
    }

    /// Only a request naming an id the book does not know waits; the rest go on uncopied.
    fn waits_on(&self, frame: &[u8]) -> bool {
        !self.unknown(frame).is_empty()
    }

    fn on_request<'a>(
        &'a mut self,
        frame: Vec<u8>,
        upstream: &'a mut Upstream<'_>,
    ) -> core::pin::Pin<Box<dyn core::future::Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            let unknown = self.unknown(&frame);
            if !unknown.is_empty() {
                self.look_up(unknown, upstream).await;
            }
            Decision::Forward(frame)
        })
    }
}
