//! The address rewriting of [`RewriteAddresses`](super::RewriteAddresses): each broker
//! address of a response found in the frame's bytes through the typed views, and the
//! renamed hosts and ports spliced into one copy of the frame (the typed rewrite kept for
//! bytes that are not where a canonical encoding puts them).

use super::*;
use crate::codec::messages::ResponseBodyView;
use crate::codec::splice;
use crate::codec::types::{List, Str};
use crate::codec::wire::MAX_STRING_LEN;
use crate::codec::wire::varint::uvarint_len;
use alloc::vec::Vec;

/// The elements of a list, owned so that they can be changed.
fn owned<'l, 'a, T: Clone>(list: &'l mut List<'a, T>) -> &'l mut Vec<T> {
    if let List::Borrowed(items) = list {
        *list = List::Owned(items.to_vec());
    }
    match list {
        List::Owned(v) => v,
        List::Borrowed(_) => unreachable!("made owned above"),
    }
}

/// Asks `route` about one address; rewrites it and returns true if it changes.
fn route_one(route: &mut impl Route, node_id: i32, host: &mut Str<'_>, port: &mut i32) -> bool {
    match route.route(node_id, host.as_str(), *port) {
        Some((h, p)) if h != host.as_str() || p != *port => {
            *host = Str::Owned(h);
            *port = p;
            true
        }
        _ => false,
    }
}

macro_rules! rewrite_list {
    ($route:expr, $list:expr) => {
        rewrite_list!($route, $list, node_id)
    };
    ($route:expr, $list:expr, $id:ident) => {{
        let mut changed = false;
        for item in owned($list).iter_mut() {
            changed |= route_one($route, item.$id, &mut item.host, &mut item.port);
        }
        changed
    }};
}

/// Why [`splice`] did not write a frame.
#[derive(Debug)]
pub(super) enum Failure {
    /// An address's bytes are not where a canonical encoding puts them (a padded
    /// varint, say): the typed path rewrites that response instead.
    NotFound,
    /// A new host is longer than a string can be.
    TooLong(usize),
    /// The edits, made once the route was asked, do not add up (never, unless the splice
    /// itself is wrong): the response is not rewritten a second way, which would ask the
    /// route again about addresses it has answered.
    Broken,
}

/// What [`each`] reports, in wire order.
enum Item<'a> {
    /// An address: node id, host (in the frame), port.
    Address(i32, &'a str, i32),
    /// A list of addresses in a tagged field starts: its first and last elements'
    /// bytes, and its count.
    Open(&'a [u8], &'a [u8], usize),
    /// That list ends.
    Close,
}

/// Calls `f` with the addresses of a response (the ones [`rewrite`] routes, in the same
/// order), and the tagged fields around them.
fn each<'a>(
    response: &Response<'a>,
    f: &mut dyn FnMut(Item<'a>) -> Result<(), Failure>,
) -> Result<(), Failure> {
    #[allow(unused_macros)] // some feature sets carry no such list
    macro_rules! list {
        ($list:expr, $id:ident) => {
            for e in $list.iter() {
                f(Item::Address(e.$id(), e.host(), e.port()))?;
            }
        };
    }
    #[allow(unused_macros)] // without Produce and Fetch
    macro_rules! tagged {
        ($list:expr) => {{
            let list = $list;
            if let (Some(first), Some(last)) = (list.get(0), list.iter().last()) {
                f(Item::Open(first.as_bytes(), last.as_bytes(), list.len()))?;
                list!(list, node_id);
                f(Item::Close)?;
            }
        }};
    }
    match response.body {
        #[cfg(feature = "api-metadata")]
        ResponseBodyView::Metadata(v) => list!(v.brokers(), node_id),
        #[cfg(feature = "api-describe-cluster")]
        ResponseBodyView::DescribeCluster(v) => list!(v.brokers(), broker_id),
        #[cfg(feature = "api-find-coordinator")]
        ResponseBodyView::FindCoordinator(v) => {
            list!(v.coordinators(), node_id);
            // Versions 0-3 answer one coordinator at the top level.
            if v.version() <= 3 {
                f(Item::Address(v.node_id(), v.host(), v.port()))?;
            }
        }
        #[cfg(feature = "api-produce")]
        ResponseBodyView::Produce(v) => tagged!(v.node_endpoints()),
        #[cfg(feature = "api-fetch")]
        ResponseBodyView::Fetch(v) => tagged!(v.node_endpoints()),
        #[cfg(feature = "api-share-fetch")]
        ResponseBodyView::ShareFetch(v) => list!(v.node_endpoints(), node_id),
        #[cfg(feature = "api-share-acknowledge")]
        ResponseBodyView::ShareAcknowledge(v) => list!(v.node_endpoints(), node_id),
        _ => {}
    }
    Ok(())
}

/// Where `part` (bytes of `body`) starts in it.
fn offset(body: &[u8], part: &[u8]) -> Option<usize> {
    let at = (part.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    (at.checked_add(part.len())? <= body.len()).then_some(at)
}

/// The unsigned varint at `at` in `body`, and its width.
fn uvarint_at(body: &[u8], at: usize) -> Option<(u32, usize)> {
    let mut r = crate::codec::wire::Reader::new(body.get(at..)?);
    let v = r.uvarint("size").ok()?;
    Some((v, r.pos()))
}

/// Where an address's host string starts (its length prefix) and ends, checked
/// against the bytes: the port follows it.
fn locate(body: &[u8], compact: bool, host: &str, port: i32) -> Option<(usize, usize)> {
    let off = offset(body, host.as_bytes())?;
    let len = host.len();
    let at = if compact {
        let width = uvarint_len(len as u32 + 1);
        let at = off.checked_sub(width)?;
        (uvarint_at(body, at)? == (len as u32 + 1, width)).then_some(at)?
    } else {
        let at = off.checked_sub(2)?;
        (body.get(at..off)? == (len as i16).to_be_bytes()).then_some(at)?
    };
    let end = off + len;
    (body.get(end..end + 4)? == port.to_be_bytes()).then_some((at, end))
}

/// Where the size varint of a tagged field holding a list of `count` elements from
/// `first` to `last` starts.
fn locate_tagged(body: &[u8], first: &[u8], last: &[u8], count: usize) -> Option<usize> {
    let count = u32::try_from(count).ok()?.checked_add(1)?;
    let start = offset(body, first)?.checked_sub(uvarint_len(count))?;
    let end = offset(body, last)? + last.len();
    let size = u32::try_from(end.checked_sub(start)?).ok()?;
    let width = uvarint_len(size);
    let at = start.checked_sub(width)?;
    let found = uvarint_at(body, start)? == (count, uvarint_len(count))
        && uvarint_at(body, at)? == (size, width)
        && at.checked_sub(1).and_then(|t| body.get(t)) == Some(&0);
    found.then_some(at)
}

/// What an edit writes.
enum New {
    /// A host string, with its length prefix (compact or not).
    Host(String, bool),
    /// A port.
    Port(i32),
}

/// Bytes `at..end` of the body replaced.
struct Edit {
    at: usize,
    end: usize,
    new: New,
}

impl Edit {
    fn write(&self, out: &mut Vec<u8>) {
        match &self.new {
            New::Host(s, compact) => splice::push_str(out, *compact, s),
            New::Port(v) => out.extend_from_slice(&v.to_be_bytes()),
        }
    }
}

/// Edits kept without allocating (more go to a vector).
const FEW: usize = 16;

/// The edits of one frame, in wire order.
struct Edits {
    few: [Option<Edit>; FEW],
    more: Vec<Edit>,
    n: usize,
}

impl Edits {
    fn push(&mut self, edit: Edit) {
        match self.few.get_mut(self.n) {
            Some(slot) => *slot = Some(edit),
            None => self.more.push(edit),
        }
        self.n += 1;
    }

    fn iter(&self) -> impl Iterator<Item = &Edit> {
        self.few.iter().flatten().chain(self.more.iter())
    }
}

impl From<splice::Error> for Failure {
    fn from(e: splice::Error) -> Self {
        match e {
            splice::Error::TooLong(len) => Failure::TooLong(len),
            splice::Error::Size(_) | splice::Error::Inconsistent => Failure::Broken,
        }
    }
}

/// The response's frame (header, then body) with its addresses routed and spliced in:
/// copied once, each new host written in its place with its length prefix, each new
/// port written over the old, and the size of a tagged field that holds them written
/// again. `Ok(None)` when no address changes. `route` is asked about each address
/// once, in the order [`rewrite`] asks; when the bytes are not where a canonical
/// encoding has them, nothing is asked and the answer is [`Failure::NotFound`].
pub(super) fn splice(
    route: &mut impl Route,
    version: i16,
    api: ApiKey,
    response: &Response<'_>,
) -> Result<Option<Vec<u8>>, Failure> {
    let body = response.body.as_bytes();
    let compact = api.flexible_versions().contains(version);
    // Every address is found before any is routed.
    each(response, &mut |item| match item {
        Item::Address(_, host, port) => locate(body, compact, host, port).map(drop).ok_or(Failure::NotFound),
        Item::Open(first, last, count) => {
            locate_tagged(body, first, last, count).map(drop).ok_or(Failure::NotFound)
        }
        Item::Close => Ok(()),
    })?;
    let mut edits = Edits { few: [const { None }; FEW], more: Vec::new(), n: 0 };
    let mut plan = splice::Plan::new(body);
    // Where the size of the open tagged field starts.
    let mut open: Option<usize> = None;
    each(response, &mut |item| {
        match item {
            Item::Address(node_id, host, port) => {
                let Some((new_host, new_port)) = route.route(node_id, host, port) else { return Ok(()) };
                if new_host == host && new_port == port {
                    return Ok(());
                }
                let (at, end) = locate(body, compact, host, port).ok_or(Failure::Broken)?;
                if new_host != host {
                    if new_host.len() > MAX_STRING_LEN {
                        return Err(Failure::TooLong(new_host.len()));
                    }
                    let len = splice::prefix_len(compact, new_host.len()) + new_host.len();
                    plan.edit((at, end), len, open.as_slice())?;
                    edits.push(Edit { at, end, new: New::Host(new_host, compact) });
                }
                if new_port != port {
                    plan.edit((end, end + 4), 4, open.as_slice())?;
                    edits.push(Edit { at: end, end: end + 4, new: New::Port(new_port) });
                }
            }
            Item::Open(first, last, count) => {
                open = Some(locate_tagged(body, first, last, count).ok_or(Failure::Broken)?);
            }
            Item::Close => open = None,
        }
        Ok(())
    })?;
    let Some(mut writer) = plan.finish()? else { return Ok(None) };
    let header = response.header.as_bytes();
    let mut out = Vec::with_capacity(header.len() + writer.len());
    out.extend_from_slice(header);
    for e in edits.iter() {
        writer.replace(&mut out, (e.at, e.end));
        e.write(&mut out);
    }
    writer.finish(&mut out)?;
    Ok(Some(out))
}

/// The response with its addresses routed, or `None` if none changes.
pub(super) fn rewrite<'a>(route: &mut impl Route, response: &Response<'a>) -> Option<ResponseBody<'a>> {
    // Cheap checks on the view first: most Produce and Fetch responses carry no hints.
    let (changed, body) = match response.body {
        #[cfg(feature = "api-metadata")]
        ResponseBodyView::Metadata(v) => {
            let mut b = crate::codec::messages::MetadataResponse::from(v);
            (rewrite_list!(route, &mut b.brokers, node_id), ResponseBody::Metadata(b))
        }
        #[cfg(feature = "api-describe-cluster")]
        ResponseBodyView::DescribeCluster(v) => {
            let mut b = crate::codec::messages::DescribeClusterResponse::from(v);
            (rewrite_list!(route, &mut b.brokers, broker_id), ResponseBody::DescribeCluster(b))
        }
        #[cfg(feature = "api-find-coordinator")]
        ResponseBodyView::FindCoordinator(v) => {
            let mut b = crate::codec::messages::FindCoordinatorResponse::from(v);
            let mut changed = rewrite_list!(route, &mut b.coordinators, node_id);
            // Versions 0-3 answer one coordinator at the top level.
            if v.coordinators().is_empty() {
                changed |= route_one(route, b.node_id, &mut b.host, &mut b.port);
            }
            (changed, ResponseBody::FindCoordinator(b))
        }
        #[cfg(feature = "api-produce")]
        ResponseBodyView::Produce(v) if !v.node_endpoints().is_empty() => {
            let mut b = crate::codec::messages::ProduceResponse::from(v);
            (rewrite_list!(route, &mut b.node_endpoints, node_id), ResponseBody::Produce(b))
        }
        #[cfg(feature = "api-fetch")]
        ResponseBodyView::Fetch(v) if !v.node_endpoints().is_empty() => {
            let mut b = crate::codec::messages::FetchResponse::from(v);
            (rewrite_list!(route, &mut b.node_endpoints, node_id), ResponseBody::Fetch(b))
        }
        #[cfg(feature = "api-share-fetch")]
        ResponseBodyView::ShareFetch(v) if !v.node_endpoints().is_empty() => {
            let mut b = crate::codec::messages::ShareFetchResponse::from(v);
            (rewrite_list!(route, &mut b.node_endpoints, node_id), ResponseBody::ShareFetch(b))
        }
        #[cfg(feature = "api-share-acknowledge")]
        ResponseBodyView::ShareAcknowledge(v) if !v.node_endpoints().is_empty() => {
            let mut b = crate::codec::messages::ShareAcknowledgeResponse::from(v);
            (rewrite_list!(route, &mut b.node_endpoints, node_id), ResponseBody::ShareAcknowledge(b))
        }
        _ => return None,
    };
    changed.then_some(body)
}
