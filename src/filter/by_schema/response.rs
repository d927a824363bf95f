//! The merge of the broker's answer with the refused entries, in the client's order.

use super::*;

/// The broker's answer (a response body) with the refused entries merged in.
pub(in crate::filter) fn merge(pending: Box<Pending>, body: &[u8]) -> Result<Vec<u8>, String> {
    let api_key = pending.layout.api_key;
    let version = pending.layout.version;
    let schema = crate::reflect::response_schema(api_key);
    let response = StructValue::decode_body(schema, version, body)
        .map_err(|e| alloc::format!("the {} answer does not decode: {e}", api_key.name()))?;
    merge_into(*pending, response)
        .to_bytes(Encoding::body(schema, version))
        .map_err(|e| alloc::format!("a partial {} answer merged: {e}", api_key.name()))
}

fn same_group(key: &Option<Value>, at: usize, g: &Value) -> bool {
    matches!(g, Value::Struct(g) if g.fields.get(at).and_then(Option::as_ref) == key.as_ref())
}

/// `response` (the broker's, or an empty one) with the refused entries merged in.
pub(super) fn merge_into(pending: Pending, mut response: StructValue) -> StructValue {
    let layout = pending.layout;
    match layout.response.group {
        None => {
            let mut groups = pending.groups;
            if let Some(group) = groups.pop() {
                merge_topics(&layout, &mut response, group.topics);
            }
        }
        Some((field, gs, key)) => {
            let mut broker: Vec<Option<Value>> =
                take_array(&mut response.fields[field]).into_iter().map(Some).collect();
            let mut out = Vec::new();
            for group in pending.groups {
                let found =
                    broker.iter_mut().find(|b| b.as_ref().is_some_and(|g| same_group(&group.key, key, g)));
                let mut element = match found.and_then(Option::take) {
                    Some(Value::Struct(g)) => g,
                    _ => {
                        let mut g = StructValue::new(gs);
                        g.fields[key] = group.key.clone();
                        g
                    }
                };
                merge_topics(&layout, &mut element, group.topics);
                out.push(Value::Struct(element));
            }
            out.extend(broker.into_iter().flatten());
            response.fields[field] = Some(Value::Array(out));
        }
    }
    response
}

/// Whether a response topic element is the request's topic: by name, or by id where the
/// request named it by id only.
fn same_topic(layout: &Layout, slot: &TopicSlot, t: &Value) -> bool {
    let Topic::Struct { name, id, .. } = layout.response.topic else { return false };
    let Value::Struct(t) = t else { return false };
    match &slot.name {
        Some(Value::String(n)) if !n.is_empty() => {
            matches!(get(t, name), Some(Value::String(b)) if b == n)
        }
        _ => slot.id.is_some() && matches!(get(t, id), Some(Value::Uuid(b)) if Some(*b) == slot.id),
    }
}

fn merge_topics(layout: &Layout, parent: &mut StructValue, slots: Vec<TopicSlot>) {
    let Topic::Struct { schema: ts, name, id, partitions, .. } = layout.response.topic else { return };
    let field = layout.response.topics;
    let mut broker: Vec<Option<Value>> =
        take_array(&mut parent.fields[field]).into_iter().map(Some).collect();
    let mut out = Vec::new();
    for slot in slots {
        let found = broker
            .iter_mut()
            .find(|b| b.as_ref().is_some_and(|t| same_topic(layout, &slot, t)))
            .and_then(Option::take);
        let TopicSlot { name: slot_name, id: slot_id, entry } = slot;
        let parts = match entry {
            Entry::Forwarded => {
                out.extend(found);
                continue;
            }
            Entry::Refused(mut answer) => {
                name_topic(&mut answer, (name, id), (&slot_name, slot_id));
                out.push(Value::Struct(answer));
                out.extend(found);
                continue;
            }
            Entry::Parts(parts) => parts,
        };
        let Some(Parts::Struct { field: pf, index, .. }) = partitions else { continue };
        let mut topic = match found {
            Some(Value::Struct(t)) => t,
            _ => {
                if !parts.iter().any(|p| matches!(p, PartSlot::Refused(_))) {
                    continue;
                }
                let mut t = StructValue::new(ts);
                name_topic(&mut t, (name, id), (&slot_name, slot_id));
                t
            }
        };
        let mut answered = take_array(&mut topic.fields[pf]);
        let mut merged = Vec::with_capacity(parts.len() + answered.len());
        for part in parts {
            match part {
                PartSlot::Refused(answer) => merged.push(Value::Struct(answer)),
                PartSlot::Forwarded(i) => {
                    let at = answered
                        .iter()
                        .position(|p| matches!(p, Value::Struct(p) if int32(get(p, Some(index))) == Some(i)));
                    if let Some(at) = at {
                        merged.push(answered.remove(at));
                    }
                }
            }
        }
        merged.extend(answered);
        topic.fields[pf] = Some(Value::Array(merged));
        out.push(Value::Struct(topic));
    }
    out.extend(broker.into_iter().flatten());
    parent.fields[field] = Some(Value::Array(out));
}

/// Names a topic element (its name and id fields) as the request named the topic.
fn name_topic(
    t: &mut StructValue,
    (name, id): (Option<usize>, Option<usize>),
    (n, u): (&Option<Value>, Option<Uuid>),
) {
    if let Some(at) = name {
        t.fields[at] = n.clone();
    }
    if let (Some(i), Some(u)) = (id, u) {
        t.fields[i] = Some(Value::Uuid(u));
    }
}
