//! The two printed forms of a tree: aligned columns ([`render_tree`]: name, type, value,
//! `[offset, size]`, description, as the protocol pages draw it) and an annotated hex dump
//! ([`render_hex`]: 16 bytes per row, each byte marked with the part of the frame it
//! belongs to, by a letter and optionally an ANSI colour, and each row naming the fields
//! that start in it).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write as _;

use super::{Node, Region};

/// Descriptions longer than this are cut, with `...`, to keep lines readable.
const ABOUT_MAX: usize = 76;

struct Line {
    name: String,
    ty: String,
    value: String,
    range: String,
    about: String,
}

fn collect(node: &Node, lead: &str, child_lead: &str, out: &mut Vec<Line>) {
    out.push(Line {
        name: format!("{lead}{}", node.name),
        ty: node.ty.clone(),
        value: if node.value.is_empty() { String::new() } else { format!("= {}", node.value) },
        range: format!("[{}0x{:04x}, {}B]", if node.inner { "+" } else { "" }, node.offset, node.size),
        about: shorten(&node.about),
    });
    let n = node.children.len();
    for (i, child) in node.children.iter().enumerate() {
        let last = i + 1 == n;
        let lead = format!("{child_lead}+-- ");
        let next = format!("{child_lead}{}", if last { "    " } else { "|   " });
        collect(child, &lead, &next, out);
    }
}

fn shorten(about: &str) -> String {
    let first_line = about.lines().next().unwrap_or("");
    if first_line.chars().count() <= ABOUT_MAX {
        return first_line.to_string();
    }
    let cut: String = first_line.chars().take(ABOUT_MAX - 3).collect();
    format!("{}...", cut.trim_end())
}

/// Renders a node tree in aligned columns.
pub fn render_tree(root: &Node) -> String {
    let mut lines = Vec::new();
    collect(root, "", "", &mut lines);
    let width = |f: fn(&Line) -> &str| lines.iter().map(|l| f(l).chars().count()).max().unwrap_or(0) + 2;
    let (w_name, w_ty, w_value, w_range) =
        (width(|l| &l.name), width(|l| &l.ty), width(|l| &l.value), width(|l| &l.range));
    let mut out = String::new();
    for l in &lines {
        let line = format!(
            "{}{}{}{}{}",
            pad(&l.name, w_name),
            pad(&l.ty, w_ty),
            pad(&l.value, w_value),
            pad(&l.range, w_range),
            l.about
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn pad(s: &str, width: usize) -> String {
    let n = s.chars().count();
    format!("{s}{}", " ".repeat(width.saturating_sub(n)))
}

// ---------------------------------------------------------------------------------------
// The hex dump.

/// What a byte is, for the dump.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Part(Region),
    Undecoded,
}

impl Mark {
    fn letter(self) -> char {
        match self {
            Mark::Part(Region::Frame) => 'F',
            Mark::Part(Region::Header) => 'H',
            Mark::Part(Region::Body) => 'B',
            Mark::Part(Region::Tagged) => 'T',
            Mark::Undecoded => '?',
        }
    }

    fn colour(self) -> &'static str {
        match self {
            Mark::Part(Region::Frame) => "\x1b[34m",
            Mark::Part(Region::Header) => "\x1b[33m",
            Mark::Part(Region::Body) => "\x1b[32m",
            Mark::Part(Region::Tagged) => "\x1b[35m",
            Mark::Undecoded => "\x1b[31m",
        }
    }
}

const RESET: &str = "\x1b[0m";

fn paint(node: &Node, marks: &mut [Mark]) {
    let end = node.offset.saturating_add(node.size).min(marks.len());
    if let Some(span) = marks.get_mut(node.offset..end) {
        span.fill(Mark::Part(node.region));
    }
    for child in &node.children {
        paint(child, marks);
    }
}

fn leaves<'n>(node: &'n Node, out: &mut Vec<&'n Node>) {
    if node.children.is_empty() {
        out.push(node);
    }
    for child in &node.children {
        leaves(child, out);
    }
}

/// The legend line.
pub fn hex_legend(colour: bool) -> String {
    let items = [
        (Mark::Part(Region::Frame), "frame (size prefix)"),
        (Mark::Part(Region::Header), "header"),
        (Mark::Part(Region::Body), "body"),
        (Mark::Part(Region::Tagged), "tagged fields"),
        (Mark::Undecoded, "not decoded"),
    ];
    let mut out = String::from("legend:");
    for (mark, what) in items {
        if colour {
            let _ = write!(out, "  {}{}{RESET} {what}", mark.colour(), mark.letter());
        } else {
            let _ = write!(out, "  {} {what}", mark.letter());
        }
    }
    out
}

/// Dumps `bytes` (one frame from its size prefix) annotated from its node tree.
pub fn render_hex(root: &Node, bytes: &[u8], colour: bool) -> String {
    let mut marks = vec![Mark::Undecoded; bytes.len()];
    for child in &root.children {
        paint(child, &mut marks);
    }
    let mut fields = Vec::new();
    for child in &root.children {
        leaves(child, &mut fields);
    }
    fields.sort_by_key(|n| n.offset);

    let mut out = String::new();
    let _ = writeln!(out, "{} {}, {} bytes", root.name, root.ty, bytes.len());
    for (row, chunk) in bytes.chunks(16).enumerate() {
        let base = row * 16;
        let mut line = format!("{base:04x}  ");
        let mut letters = String::new();
        for (i, b) in chunk.iter().enumerate() {
            let mark = marks.get(base + i).copied().unwrap_or(Mark::Undecoded);
            if colour {
                let _ = write!(line, "{}{b:02x}{RESET} ", mark.colour());
                let _ = write!(letters, "{}{}{RESET}", mark.colour(), mark.letter());
            } else {
                let _ = write!(line, "{b:02x} ");
                letters.push(mark.letter());
            }
        }
        for _ in chunk.len()..16 {
            line.push_str("   ");
            letters.push(' ');
        }
        let names: Vec<&str> = fields
            .iter()
            .filter(|n| n.size > 0 && n.offset >= base && n.offset < base + 16)
            .map(|n| n.name.as_str())
            .collect();
        let _ = write!(line, " {letters}  {}", names.join(", "));
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
