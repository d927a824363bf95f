//! The `tree` output: the object tree as the protocol pages draw it, one line per node
//! with its name, type, value, `[offset, size]` and a short description, in aligned
//! columns.

use crate::walk::Node;

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
pub fn render(root: &Node) -> String {
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
