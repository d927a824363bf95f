//! The split of a request by its schema: the entries that go to the broker, and the
//! refused entries' answers kept for the merge.

use super::response::merge_into;
use super::*;

/// Splits a request body by its schema: what goes to the broker, and what its answer is
/// merged with. `Err` with the reason where it cannot be answered in part.
pub(in crate::filter) fn split(
    api_key: ApiKey,
    version: i16,
    body: &[u8],
    refusals: &impl Refused,
) -> Result<SchemaSplit, String> {
    let Some(layout) = Layout::of(api_key, version) else {
        return Err(alloc::format!("{} v{version} cannot be answered in part", api_key.name()));
    };
    let schema = crate::reflect::request_schema(api_key);
    let mut request = StructValue::decode_body(schema, version, body)
        .map_err(|e| alloc::format!("the {} request does not decode: {e}", api_key.name()))?;
    let mut groups = Vec::new();
    let mut topic_index = 0usize;
    let mut forwarded_any = false;
    match layout.request.group {
        None => {
            let (slots, forwarded) = split_topics(&layout, &mut request, &mut topic_index, refusals);
            forwarded_any = forwarded;
            groups.push(GroupSlot { key: None, topics: slots });
        }
        Some((field, _, key)) => {
            let mut kept = Vec::new();
            for group in take_array(&mut request.fields[field]) {
                let Value::Struct(mut group) = group else { continue };
                let (slots, forwarded) = split_topics(&layout, &mut group, &mut topic_index, refusals);
                groups.push(GroupSlot { key: group.fields[key].clone(), topics: slots });
                // A group with none of its topics left goes nowhere: an empty list may
                // ask for every topic.
                if forwarded {
                    forwarded_any = true;
                    kept.push(Value::Struct(group));
                }
            }
            request.fields[field] = Some(Value::Array(kept));
        }
    }
    let pending = Pending { layout, groups };
    if forwarded_any || layout.forward_when_all_refused() {
        if !forwarded_any && layout.empty_means_all() {
            return Err(alloc::format!(
                "every topic of a {} v{version} request was refused, and an empty list asks for all",
                api_key.name()
            ));
        }
        let bytes = request
            .to_bytes(Encoding::body(schema, version))
            .map_err(|e| alloc::format!("the {} request without its refused entries: {e}", api_key.name()))?;
        return Ok(SchemaSplit::Forward(bytes, Box::new(pending)));
    }
    let response = crate::reflect::response_schema(api_key);
    let body = merge_into(pending, StructValue::new(response.body));
    let bytes = body
        .to_bytes(Encoding::body(response, version))
        .map_err(|e| alloc::format!("the {} answer of refused entries: {e}", api_key.name()))?;
    Ok(SchemaSplit::Answer(bytes))
}

/// Splits the topics of `parent` (the body or a group element): keeps what goes on in
/// `parent`, returns the slots and whether anything goes on.
fn split_topics(
    layout: &Layout,
    parent: &mut StructValue,
    at: &mut usize,
    refusals: &impl Refused,
) -> (Vec<TopicSlot>, bool) {
    let version = layout.version;
    let field = layout.request.topics;
    if matches!(parent.fields[field], Some(Value::Null) | None) {
        // A null list (every topic) has no entries to refuse.
        return (Vec::new(), true);
    }
    let Topic::Struct {
        schema: rt,
        name: r_name,
        error: r_error,
        message: r_message,
        partitions: r_parts,
        ..
    } = layout.response.topic
    else {
        return (Vec::new(), true);
    };
    let mut slots = Vec::new();
    let mut kept = Vec::new();
    for topic in take_array(&mut parent.fields[field]) {
        let t = *at;
        *at += 1;
        let (name, id, parts) = match (&layout.request.topic, &topic) {
            (Topic::Names, Value::String(_)) => (Some(topic.clone()), None, None),
            (Topic::Struct { name, id, partitions, .. }, Value::Struct(s)) => {
                let id = match get(s, *id) {
                    Some(Value::Uuid(u)) => Some(*u),
                    _ => None,
                };
                (name.and_then(|n| s.fields[n].clone()), id, *partitions)
            }
            _ => continue,
        };
        let mut topic = topic;
        let name_for_answer = match (&name, r_name) {
            (Some(Value::Null), Some(n)) if !rt.fields[n].is_nullable(version) => {
                Some(Value::String(String::new()))
            }
            (n, _) => n.clone(),
        };
        let entry = match (parts, r_parts, &mut topic) {
            (None, _, _) => match refusals.topic(t) {
                Some((why, _)) => Entry::Refused(refused(rt, version, r_error, r_message, &why)),
                None => {
                    kept.push(topic);
                    slots.push(TopicSlot { name: name_for_answer, id, entry: Entry::Forwarded });
                    continue;
                }
            },
            (
                Some(rp),
                Some(Parts::Struct { schema: ps, index: pi, error: pe, message: pm, .. }),
                Value::Struct(s),
            ) => {
                let field = match rp {
                    Parts::Indexes(f) => f,
                    Parts::Struct { field, .. } => field,
                };
                let mut part_slots = Vec::new();
                let mut kept_parts = Vec::new();
                let items = take_array(&mut s.fields[field]);
                let had_partitions = !items.is_empty();
                for (p, item) in items.into_iter().enumerate() {
                    let index = match (rp, &item) {
                        (Parts::Indexes(_), Value::Int32(i)) => *i,
                        (Parts::Struct { index, .. }, Value::Struct(ps)) => {
                            int32(get(ps, Some(index))).unwrap_or(-1)
                        }
                        _ => -1,
                    };
                    match refusals.partition(t, p) {
                        Some(why) => {
                            let mut answer = refused(ps, version, pe, pm, &why);
                            answer.fields[pi] = Some(Value::Int32(index));
                            part_slots.push(PartSlot::Refused(answer));
                        }
                        None => {
                            part_slots.push(PartSlot::Forwarded(index));
                            kept_parts.push(item);
                        }
                    }
                }
                let topic_refused = refusals.topic(t).is_some_and(|(_, own)| own);
                if kept_parts.is_empty() && (had_partitions || topic_refused) {
                    Entry::Parts(part_slots)
                } else {
                    s.fields[field] = Some(Value::Array(kept_parts));
                    kept.push(topic);
                    Entry::Parts(part_slots)
                }
            }
            _ => continue,
        };
        slots.push(TopicSlot { name: name_for_answer, id, entry });
    }
    let forwarded = !kept.is_empty();
    parent.fields[field] = Some(Value::Array(kept));
    (slots, forwarded)
}
