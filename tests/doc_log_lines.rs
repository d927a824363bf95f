//! The log lines that `docs/proxy.md` and `docs/cli.md` quote are lines the proxy still prints.
//!
//! The templates are the string literals of the proxy's sources (`src/apps/proxy`, where
//! `TrafficLog` writes its lines, and `src/bin/kwire/proxy`): each `{...}` is a value. A quoted
//! line is
//!
//! - a line of a fenced block that starts with a timestamp (`2026-11-30T10:05:33.775Z conn=14
//!   ...`: the text log as the docs show it), without the timestamp, except in a block that
//!   starts with a `$ kwire decode ...` command (its output, which tests/cli.rs checks); or
//! - an inline code span of the prose that holds a phrase of a log template (`listening on`,
//!   `closing this connection`, ...) and is at least three words long.
//!
//! Each must be one template with its values filled in, where a value is another template
//! (the reason in `closed (...)`, say) or plain text without `;` and without a parenthesized
//! remark (` (`): the parts of a line in brackets and after a `;` are the code's own words, so a
//! doc cannot show one the code no longer writes. A quoted line may leave out the start of
//! the log line (the timestamp, `conn=N`), and `...` in it stands for any text. What a value
//! says (a reason, an address) is free text here: the check holds the code's fixed words, not
//! the values it fills in. Command lines, flags and quoted strings are not log lines.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A template: literal text and values, in order.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Lit(String),
    Value,
}

/// The string literals of a Rust file (plain `"..."` literals, escapes resolved; raw strings
/// and comments skipped).
fn literals(code: &str) -> Vec<String> {
    let b = code.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < b.len() {
        if code[i..].starts_with("//") {
            i = code[i..].find('\n').map_or(b.len(), |n| i + n);
        } else if code[i..].starts_with("/*") {
            i = code[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 2);
        } else if b[i] == b'\'' {
            // A char literal ('"' included) or a lifetime.
            if i + 2 < b.len() && b[i + 1] == b'\\' {
                i = code[i + 2..].find('\'').map_or(b.len(), |n| i + 2 + n + 1);
            } else if i + 2 < b.len() && b[i + 2] == b'\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if b[i] == b'r'
            && i + 1 < b.len()
            && (b[i + 1] == b'#' || b[i + 1] == b'"')
            && (i == 0 || !b[i - 1].is_ascii_alphanumeric() && b[i - 1] != b'_')
        {
            let hashes = code[i + 1..].bytes().take_while(|&c| c == b'#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let start = i + 1 + hashes + 1;
            i = code.get(start..).and_then(|s| s.find(&close)).map_or(b.len(), |n| start + n + close.len());
        } else if b[i] == b'"' {
            let mut s = String::new();
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                if b[j] == b'\\' && j + 1 < b.len() {
                    match b[j + 1] {
                        b'n' | b'\n' => {
                            // `\` at a line's end skips the newline and the indentation.
                            if b[j + 1] == b'\n' {
                                j += 2;
                                while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                                    j += 1;
                                }
                                continue;
                            }
                            s.push('\n')
                        }
                        b't' => s.push('\t'),
                        b'"' => s.push('"'),
                        b'\\' => s.push('\\'),
                        b'\'' => s.push('\''),
                        _ => s.push('?'),
                    }
                    j += 2;
                } else {
                    let c = code[j..].chars().next().unwrap();
                    s.push(c);
                    j += c.len_utf8();
                }
            }
            out.push(s);
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// A literal as a template: `{...}` are values, `{{` and `}}` braces.
fn template(lit: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = lit.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                text.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                text.push('}');
            }
            '{' => {
                for d in chars.by_ref() {
                    if d == '}' {
                        break;
                    }
                }
                if !text.is_empty() {
                    pieces.push(Piece::Lit(std::mem::take(&mut text)));
                }
                pieces.push(Piece::Value);
            }
            _ => text.push(c),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Lit(text));
    }
    pieces
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

struct Templates {
    /// Templates of log lines: those with words of their own.
    lines: Vec<Vec<Piece>>,
    /// Every literal, as a template: what a value may be.
    values: Vec<Vec<Piece>>,
    /// Templates of what is appended to a line: a literal starting with a space and holding
    /// a word.
    suffixes: Vec<Vec<Piece>>,
}

/// Whether a template has words of its own: one of three letters or more, `conn` aside (a
/// template of `conn={id} {words}` alone says nothing of the line).
fn has_words(t: &[Piece]) -> bool {
    t.iter().any(|p| match p {
        Piece::Lit(s) => s.split(|c: char| !c.is_ascii_alphabetic()).any(|w| w.len() >= 3 && w != "conn"),
        Piece::Value => false,
    })
}

fn templates() -> Templates {
    let mut files = Vec::new();
    rs_files(&root().join("src/apps/proxy"), &mut files);
    rs_files(&root().join("src/bin/kwire/proxy"), &mut files);
    assert!(files.len() > 5, "the proxy's sources: {files:?}");
    let mut values: Vec<Vec<Piece>> = Vec::new();
    for f in &files {
        for lit in literals(&std::fs::read_to_string(f).unwrap()) {
            if !lit.is_empty() && !lit.contains('\n') {
                values.push(template(&lit));
            }
        }
    }
    values.sort_by_key(|t| format!("{t:?}"));
    values.dedup();
    let mut lines: Vec<Vec<Piece>> = values.iter().filter(|t| has_words(t)).cloned().collect();
    // A line of no words of its own (`{t} conn={id} {words}`) is written with the words of
    // another template: the two together are a line template.
    for weak in values.iter().filter(|t| !has_words(t) && t.len() > 1 && t.last() == Some(&Piece::Value)) {
        for words in values.iter().filter(|t| has_words(t) && matches!(t.first(), Some(Piece::Lit(_)))) {
            let mut joined = weak[..weak.len() - 1].to_vec();
            match (joined.last_mut(), words.first()) {
                (Some(Piece::Lit(a)), Some(Piece::Lit(b))) => {
                    a.push_str(b);
                    joined.extend_from_slice(&words[1..]);
                }
                _ => joined.extend_from_slice(words),
            }
            lines.push(joined);
        }
    }
    let suffixes = values
        .iter()
        .filter(|t| has_words(t) && matches!(t.first(), Some(Piece::Lit(s)) if s.starts_with(' ')))
        .cloned()
        .collect();
    Templates { lines, values, suffixes }
}

/// Plain text a value may be (empty too): no `;` and no parenthesized remark after a space.
fn plain(s: &str) -> bool {
    !s.contains(';') && !s.contains(" (")
}

/// Whether `text` (with `...` in it standing for anything) is `pieces` filled in, from the
/// start of `text` to its end. `depth` bounds values that are templates themselves.
fn matches(pieces: &[Piece], text: &str, t: &Templates, depth: u32) -> bool {
    if let Some(rest) = text.strip_prefix("...") {
        // An elision: it stands for the pieces it skips, and for the start of the piece it
        // ends in.
        return (0..=pieces.len()).any(|k| {
            matches(&pieces[k..], rest, t, depth)
                || match pieces.get(k) {
                    Some(Piece::Lit(s)) => (1..s.len()).filter(|&i| s.is_char_boundary(i)).any(|i| {
                        let mut p = vec![Piece::Lit(s[i..].to_string())];
                        p.extend_from_slice(&pieces[k + 1..]);
                        matches(&p, rest, t, depth)
                    }),
                    _ => false,
                }
        });
    }
    match pieces.split_first() {
        // A line may go on with a part the code appends (` errors=...`, ` (broker addresses
        // rewritten)`): a literal that starts with a space and its own words.
        None => text.is_empty() || t.suffixes.iter().any(|sfx| matches(sfx, text, t, depth)),
        Some((Piece::Lit(s), rest)) => {
            text.strip_prefix(s.as_str()).is_some_and(|after| matches(rest, after, t, depth))
        }
        Some((Piece::Value, rest)) => (0..=text.len()).filter(|&i| text.is_char_boundary(i)).any(|i| {
            let (value, after) = text.split_at(i);
            value_ok(value, t, depth) && matches(rest, after, t, depth)
        }),
    }
}

fn value_ok(value: &str, t: &Templates, depth: u32) -> bool {
    plain(value) || (depth > 0 && t.values.iter().any(|v| {
        // A template that starts with its own words, so that most are refused at once.
        matches!(v.first(), Some(Piece::Lit(s)) if value.starts_with(s.as_str()) || value.starts_with("..."))
            && v.len() > 1
            && matches(v, value, t, depth - 1)
    }))
}

/// Whether `line` is a log line the code prints, or the end of one (its start left out).
fn printed(line: &str, t: &Templates) -> bool {
    let Some(first) = line.chars().next() else { return false };
    t.lines.iter().any(|tpl| {
        (0..tpl.len()).any(|k| match &tpl[k] {
            // The quoted line starts inside this literal piece.
            Piece::Lit(s) => s.match_indices(first).map(|(i, _)| i).any(|i| {
                let mut p = vec![Piece::Lit(s[i..].to_string())];
                p.extend_from_slice(&tpl[k + 1..]);
                matches(&p, line, t, 1)
            }),
            Piece::Value => k == 0 && matches(tpl, line, t, 1),
        })
    })
}

/// The quoted log lines of a doc: (line number, text).
fn quoted(doc: &str, t: &Templates) -> Vec<(usize, String)> {
    let phrases: Vec<String> = t
        .lines
        .iter()
        .flatten()
        .filter_map(|p| match p {
            Piece::Lit(s) => {
                let s = s.trim_matches(|c: char| !c.is_ascii_alphanumeric());
                (s.len() >= 10 && s.contains(' ')).then(|| s.to_string())
            }
            Piece::Value => None,
        })
        .collect();
    let mut out = Vec::new();
    let (mut fence, mut para, mut para_start): (Option<String>, String, usize) = (None, String::new(), 0);
    let is_time = |s: &str| {
        let b = s.as_bytes();
        b.len() > 20 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[10] == b'T'
    };
    let flush = |para: &mut String, start: usize, out: &mut Vec<(usize, String)>| {
        let mut rest = para.as_str();
        while let Some(a) = rest.find('`') {
            let Some(b) = rest[a + 1..].find('`') else { break };
            let span = &rest[a + 1..a + 1 + b];
            // Command lines (`kwire proxy --quiet`), flags and quoted strings are not log lines.
            let command = span.starts_with("kwire ") || span.starts_with('-') || span.starts_with('"');
            if !command
                && span.split_whitespace().count() >= 3
                && phrases.iter().any(|p| span.contains(p.as_str()))
            {
                out.push((start, span.to_string()));
            }
            rest = &rest[a + 1 + b + 1..];
        }
        para.clear();
    };
    for (n, line) in doc.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            flush(&mut para, para_start, &mut out);
            fence = if fence.is_some() { None } else { Some(trimmed.to_string()) };
            continue;
        }
        if fence.is_some() {
            // A block that shows a `kwire decode` run quotes that command's output (capture
            // summary lines), which tests/cli.rs checks against a real run, not the proxy's.
            if trimmed.starts_with("$ kwire decode ") {
                fence = Some("decode".into());
            }
            if is_time(trimmed) && fence.as_deref() != Some("decode") {
                let (_, rest) = trimmed.split_once(' ').unwrap();
                out.push((n + 1, rest.to_string()));
            }
            continue;
        }
        if trimmed.is_empty() {
            flush(&mut para, para_start, &mut out);
            continue;
        }
        if para.is_empty() {
            para_start = n + 1;
        } else {
            para.push(' ');
        }
        para.push_str(trimmed);
    }
    flush(&mut para, para_start, &mut out);
    out
}

#[test]
fn quoted_log_lines_are_printed() {
    let t = templates();
    let mut checked = 0;
    let mut stale = Vec::new();
    for doc in ["docs/proxy.md", "docs/cli.md"] {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        for (n, line) in quoted(&text, &t) {
            checked += 1;
            if !printed(&line, &t) {
                stale.push(format!("{doc}:{n}: `{line}`"));
            }
        }
    }
    eprintln!("doc_log_lines: {checked} quoted log lines checked");
    assert!(checked >= 10, "found only {checked} quoted log lines: the extraction broke");
    assert!(stale.is_empty(), "log lines the proxy does not print:\n{}", stale.join("\n"));
}

#[test]
fn the_check_refuses_words_the_code_does_not_print() {
    let t = templates();
    // What the code prints passes, whole or without its start.
    assert!(printed("conn=3 127.0.0.1:5555: closed (the broker closed the connection)", &t));
    assert!(printed("listening on 10.0.0.5:19102 for broker 2 at b2.internal:9092 (by node id)", &t));
    assert!(printed("cannot connect to b1:9092: Connection refused; closing this connection", &t));
    // A remark or a tail the code does not write fails.
    assert!(!printed("listening on 10.0.0.5:19102 for broker 2 at b2.internal:9092 (--broker-ports)", &t));
    assert!(!printed("cannot connect to b1:9092: Connection refused; closing", &t));
    assert!(!printed("conn=3 127.0.0.1:5555: closed because the broker went away", &t));
    assert!(!printed("the TLS handshake did not finish within 10s (--tls-handshake-timeout)", &t));
    assert!(!printed(
        "conn=2 framing violation from the client: frame size 9 is over the limit of 8 bytes (--max-frame-bytes); closing this connection",
        &t
    ));
}
