//! The `hex` output: an annotated hex dump, 16 bytes per row. Each byte is marked with
//! the part of the frame it belongs to (a letter column, and ANSI colours when the output
//! is a terminal), and each row lists the fields that start in it.

use std::fmt::Write as _;

use crate::walk::{Node, Region};

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
pub fn legend(colour: bool) -> String {
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
pub fn render(root: &Node, bytes: &[u8], colour: bool) -> String {
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
