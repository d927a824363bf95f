//! A small regular-expression matcher for KIP-848 regex subscriptions
//! (`SubscribedTopicRegex`), matched against whole topic names as Kafka's RE2J `matches()`
//! does. It reads the common subset: literals, `.`, classes (`[a-z]`, `[^...]`, `\d \w \s`
//! and their negations), groups `( )` and `(?: )`, alternation `|`, the quantifiers `* + ?`
//! and `{n}`, `{n,}`, `{n,m}`, and the anchors `^ $`. Matching backtracks within a step
//! budget, so a pathological pattern fails to match instead of running long.

use std::boxed::Box;
use std::string::String;
use std::vec::Vec;

#[derive(Debug, Clone)]
enum Node {
    Char(char),
    Any,
    Class(Vec<(char, char)>, bool),
    Group(Vec<Vec<Node>>),
    Repeat(Box<Node>, u32, Option<u32>),
    Start,
    End,
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub(crate) struct Regex {
    alt: Vec<Vec<Node>>,
}

/// The most steps one match may take.
const BUDGET: usize = 200_000;
/// The most a `{n,m}` count may be.
const MAX_COUNT: u32 = 1000;

struct Parser<'a> {
    s: &'a [char],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.at).copied()
    }

    fn alt(&mut self, depth: usize) -> Result<Vec<Vec<Node>>, String> {
        if depth > 50 {
            return Err("groups nested too deep".into());
        }
        let mut alts = std::vec![self.seq(depth)?];
        while self.peek() == Some('|') {
            self.at += 1;
            alts.push(self.seq(depth)?);
        }
        Ok(alts)
    }

    fn seq(&mut self, depth: usize) -> Result<Vec<Node>, String> {
        let mut seq = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom(depth)?;
            seq.push(self.quantified(atom)?);
        }
        Ok(seq)
    }

    fn number(&mut self) -> Option<u32> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        let text: String = self.s[start..self.at].iter().collect();
        text.parse().ok()
    }

    fn quantified(&mut self, mut atom: Node) -> Result<Node, String> {
        loop {
            let (min, max) = match self.peek() {
                Some('*') => (0, None),
                Some('+') => (1, None),
                Some('?') => (0, Some(1)),
                Some('{') => {
                    self.at += 1;
                    let min = self.number().ok_or("a count expected after {")?;
                    let max = if self.peek() == Some(',') {
                        self.at += 1;
                        if self.peek() == Some('}') {
                            None
                        } else {
                            Some(self.number().ok_or("a count expected")?)
                        }
                    } else {
                        Some(min)
                    };
                    if self.peek() != Some('}') {
                        return Err("missing }".into());
                    }
                    if min > MAX_COUNT || max.is_some_and(|m| m > MAX_COUNT || m < min) {
                        return Err("bad repetition count".into());
                    }
                    (min, max)
                }
                _ => return Ok(atom),
            };
            if matches!(atom, Node::Start | Node::End) {
                return Err("nothing to repeat".into());
            }
            self.at += 1;
            // A lazy or possessive marker is read and matched greedily.
            if matches!(self.peek(), Some('?') | Some('+')) {
                self.at += 1;
            }
            atom = Node::Repeat(Box::new(atom), min, max);
        }
    }

    fn escape_class(c: char) -> Option<(Vec<(char, char)>, bool)> {
        let digits = std::vec![('0', '9')];
        let word = std::vec![('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];
        let space = std::vec![(' ', ' '), ('\t', '\r')];
        Some(match c {
            'd' => (digits, false),
            'D' => (digits, true),
            'w' => (word, false),
            'W' => (word, true),
            's' => (space, false),
            'S' => (space, true),
            _ => return None,
        })
    }

    fn escaped(&mut self) -> Result<Node, String> {
        let c = self.peek().ok_or("trailing \\")?;
        self.at += 1;
        if let Some((ranges, neg)) = Self::escape_class(c) {
            return Ok(Node::Class(ranges, neg));
        }
        match c {
            'n' => Ok(Node::Char('\n')),
            't' => Ok(Node::Char('\t')),
            c if c.is_ascii_alphanumeric() => Err(std::format!("unsupported escape \\{c}")),
            c => Ok(Node::Char(c)),
        }
    }

    fn atom(&mut self, depth: usize) -> Result<Node, String> {
        let c = self.peek().ok_or("unexpected end")?;
        self.at += 1;
        match c {
            '.' => Ok(Node::Any),
            '^' => Ok(Node::Start),
            '$' => Ok(Node::End),
            '\\' => self.escaped(),
            '(' => {
                if self.peek() == Some('?') {
                    if self.s.get(self.at + 1) != Some(&':') {
                        return Err("unsupported group flag".into());
                    }
                    self.at += 2;
                }
                let alt = self.alt(depth + 1)?;
                if self.peek() != Some(')') {
                    return Err("missing )".into());
                }
                self.at += 1;
                Ok(Node::Group(alt))
            }
            '[' => self.class(),
            '*' | '+' | '?' | '{' => Err(std::format!("missing argument to repetition operator: {c}")),
            ')' => Err("unexpected )".into()),
            c => Ok(Node::Char(c)),
        }
    }

    fn class(&mut self) -> Result<Node, String> {
        let negated = self.peek() == Some('^');
        if negated {
            self.at += 1;
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let c = self.peek().ok_or("missing ]")?;
            self.at += 1;
            if c == ']' && !first {
                break;
            }
            first = false;
            let lo = if c == '\\' {
                let e = self.peek().ok_or("trailing \\")?;
                self.at += 1;
                if let Some((r, false)) = Self::escape_class(e) {
                    ranges.extend(r);
                    continue;
                }
                if e.is_ascii_alphanumeric() {
                    return Err(std::format!("unsupported escape \\{e} in a class"));
                }
                e
            } else {
                c
            };
            if self.peek() == Some('-') && self.s.get(self.at + 1).is_some_and(|&n| n != ']') {
                self.at += 1;
                let mut hi = self.peek().ok_or("missing ]")?;
                self.at += 1;
                if hi == '\\' {
                    hi = self.peek().ok_or("trailing \\")?;
                    self.at += 1;
                }
                if hi < lo {
                    return Err("bad character class range".into());
                }
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        Ok(Node::Class(ranges, negated))
    }
}

struct Matcher<'a> {
    input: &'a [char],
    steps: usize,
}

impl Matcher<'_> {
    fn seq(&mut self, seq: &[Node], pos: usize, k: &mut dyn FnMut(&mut Self, usize) -> bool) -> bool {
        match seq.split_first() {
            None => k(self, pos),
            Some((n, rest)) => self.node(n, pos, &mut |m: &mut Self, p| m.seq(rest, p, k)),
        }
    }

    fn node(&mut self, n: &Node, pos: usize, k: &mut dyn FnMut(&mut Self, usize) -> bool) -> bool {
        self.steps += 1;
        if self.steps > BUDGET {
            return false;
        }
        match n {
            Node::Char(c) => self.input.get(pos) == Some(c) && k(self, pos + 1),
            Node::Any => pos < self.input.len() && k(self, pos + 1),
            Node::Class(ranges, negated) => match self.input.get(pos) {
                Some(&c) => {
                    (ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated) && k(self, pos + 1)
                }
                None => false,
            },
            Node::Group(alt) => alt.iter().any(|seq| self.seq(seq, pos, k)),
            Node::Repeat(inner, min, max) => self.repeat(inner, *min, *max, 0, pos, k),
            Node::Start => pos == 0 && k(self, pos),
            Node::End => pos == self.input.len() && k(self, pos),
        }
    }

    fn repeat(
        &mut self,
        inner: &Node,
        min: u32,
        max: Option<u32>,
        count: u32,
        pos: usize,
        k: &mut dyn FnMut(&mut Self, usize) -> bool,
    ) -> bool {
        if self.steps > BUDGET {
            return false;
        }
        if max.is_none_or(|m| count < m) {
            let more = self.node(inner, pos, &mut |m: &mut Self, p| {
                // An empty match ends the repetition (else it would loop).
                p != pos && m.repeat(inner, min, max, count + 1, p, k)
            });
            if more {
                return true;
            }
        }
        count >= min && k(self, pos)
    }
}

impl Regex {
    /// Compiles a pattern; the error says what is wrong with it.
    pub fn new(pattern: &str) -> Result<Regex, String> {
        let chars: Vec<char> = pattern.chars().collect();
        // Bounded: matching recurses about once per node, on a connection's thread.
        if chars.len() > 1000 {
            return Err("pattern too long".into());
        }
        let mut p = Parser { s: &chars, at: 0 };
        let alt = p.alt(0)?;
        if p.at != chars.len() {
            return Err("unexpected )".into());
        }
        Ok(Regex { alt })
    }

    /// Whether the whole of `text` matches.
    pub fn is_match(&self, text: &str) -> bool {
        let input: Vec<char> = text.chars().collect();
        let mut m = Matcher { input: &input, steps: 0 };
        let len = input.len();
        let group = Node::Group(self.alt.clone());
        m.node(&group, 0, &mut |_, p| p == len)
    }
}

#[cfg(test)]
mod tests {
    use super::Regex;

    fn is(p: &str, t: &str) -> bool {
        Regex::new(p).unwrap().is_match(t)
    }

    #[test]
    fn matches_whole_names() {
        assert!(is("orders.*", "orders-eu"));
        assert!(!is("orders", "orders-eu"));
        assert!(is("(orders|payments)-[a-z]{2}", "payments-eu"));
        assert!(!is("(orders|payments)-[a-z]{2}", "payments-eu1"));
        assert!(is("t\\d+", "t42"));
        assert!(is("^a[^b]c$", "axc"));
        assert!(!is("a[^b]c", "abc"));
        assert!(is("x?y+z*", "yy"));
        assert!(is("(?:ab)+", "ababab"));
        assert!(is("[-.a]+", "a.-"));
        // A pattern that would take exponential time gives up instead.
        assert!(!is("(a*)*b", &"a".repeat(40)));
        // The longest pattern of empty-matching nodes recurses within a thread's stack.
        assert!(!is(&"a?".repeat(500), "b"));
        assert!(is(&"a?".repeat(500), &"a".repeat(249)));
        assert!(Regex::new(&"a".repeat(1001)).is_err());
    }

    #[test]
    fn bad_patterns_are_errors() {
        for p in ["(", "a)", "*a", "[a", "a{2,1}", "\\q", "(?i)a"] {
            assert!(Regex::new(p).is_err(), "{p}");
        }
    }
}
