//! Inclusive version ranges, as Kafka's generator models them: a plain `(lo, hi)` pair
//! that is empty when `lo > hi`.

use std::fmt;

/// The highest version a `"N+"` range reaches.
pub const MAX: i16 = i16::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Versions {
    pub lo: i16,
    pub hi: i16,
}

impl Versions {
    pub const NONE: Versions = Versions { lo: 1, hi: 0 };

    pub fn new(lo: i16, hi: i16) -> Self {
        if lo > hi { Versions::NONE } else { Versions { lo, hi } }
    }

    /// Parses `"none"`, `"N"`, `"N+"` or `"A-B"`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let num = |t: &str| t.trim().parse::<i16>().map_err(|e| format!("bad version {t:?}: {e}"));
        if s == "none" {
            Ok(Versions::NONE)
        } else if let Some(lo) = s.strip_suffix('+') {
            Ok(Versions::new(num(lo)?, MAX))
        } else if let Some((lo, hi)) = s.split_once('-') {
            let v = Versions::new(num(lo)?, num(hi)?);
            if v.is_empty() { Err(format!("empty range {s:?}")) } else { Ok(v) }
        } else {
            let n = num(s)?;
            Ok(Versions::new(n, n))
        }
    }

    pub fn is_empty(self) -> bool {
        self.lo > self.hi
    }

    pub fn contains(self, v: i16) -> bool {
        self.lo <= v && v <= self.hi
    }

    pub fn intersect(self, other: Versions) -> Versions {
        Versions::new(self.lo.max(other.lo), self.hi.min(other.hi))
    }

    /// `self` without `other`; `None` when the result would be two ranges.
    pub fn subtract(self, other: Versions) -> Option<Versions> {
        let o = self.intersect(other);
        if o.is_empty() {
            Some(self)
        } else if o == self {
            Some(Versions::NONE)
        } else if o.lo == self.lo {
            Some(Versions::new(o.hi + 1, self.hi))
        } else if o.hi == self.hi {
            Some(Versions::new(self.lo, o.lo - 1))
        } else {
            None
        }
    }

    pub fn is_subset_of(self, other: Versions) -> bool {
        self.is_empty() || (other.lo <= self.lo && self.hi <= other.hi)
    }

    pub fn iter(self) -> impl Iterator<Item = i16> {
        let hi = if self.is_empty() { self.lo - 1 } else { self.hi };
        self.lo..=hi
    }
}

impl fmt::Display for Versions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            f.write_str("none")
        } else if self.hi == MAX {
            write!(f, "{}+", self.lo)
        } else if self.lo == self.hi {
            write!(f, "{}", self.lo)
        } else {
            write!(f, "{}-{}", self.lo, self.hi)
        }
    }
}

/// How a check "version is in `wanted`" reads when the version is already known to be in
/// `possible` (Kafka's `VersionConditional`): always true, always false, or a condition
/// with only the bounds that can fail.
pub enum Cond {
    Always,
    Never,
    If(String),
}

pub fn cond(wanted: Versions, possible: Versions, var: &str) -> Cond {
    let w = wanted.intersect(possible);
    if w.is_empty() {
        return Cond::Never;
    }
    if w == possible {
        return Cond::Always;
    }
    if w.lo == w.hi {
        return Cond::If(format!("{var} == {}", w.lo));
    }
    let lo = (w.lo > possible.lo).then(|| format!("{var} >= {}", w.lo));
    let hi = (w.hi < possible.hi).then(|| format!("{var} <= {}", w.hi));
    Cond::If(match (lo, hi) {
        (Some(lo), Some(hi)) => format!("{lo} && {hi}"),
        (Some(c), None) | (None, Some(c)) => c,
        (None, None) => unreachable!("handled as Always"),
    })
}

/// The condition "version is *not* in `wanted`", pruned the same way, written without a
/// negation where the complement is one range.
pub fn cond_not(wanted: Versions, possible: Versions, var: &str) -> Cond {
    match possible.subtract(wanted) {
        Some(rest) => cond(rest, possible, var),
        None => match cond(wanted, possible, var) {
            Cond::If(c) => Cond::If(format!("!({c})")),
            Cond::Always => Cond::Never,
            Cond::Never => Cond::Always,
        },
    }
}

/// The values a version-dependent quantity takes over `possible`, as runs of versions
/// with the same value, in order; the last run reaches `possible.hi`.
pub fn runs<T: PartialEq>(possible: Versions, value: impl Fn(i16) -> T) -> Vec<(Versions, T)> {
    let mut runs: Vec<(Versions, T)> = Vec::new();
    for v in possible.iter() {
        let val = value(v);
        match runs.last_mut() {
            Some((r, last)) if *last == val => r.hi = v,
            _ => runs.push((Versions::new(v, v), val)),
        }
    }
    if let Some((r, _)) = runs.last_mut() {
        r.hi = possible.hi;
    }
    runs
}

/// A Rust expression, over `var`, for the value of [`runs`]: a literal when there is one
/// run, else an `if` chain over version ranges, latest first.
pub fn show_runs<T>(runs: &[(Versions, T)], var: &str, show: impl Fn(&T) -> String) -> String {
    if runs.len() == 1 {
        return show(&runs[0].1);
    }
    let mut out = String::new();
    let last = runs.len() - 1;
    for (i, (r, val)) in runs.iter().enumerate().rev() {
        if i == 0 {
            out.push_str(&format!(" else {{ {} }}", show(val)));
        } else {
            let head = if i == last { "if" } else { " else if" };
            out.push_str(&format!("{head} {var} >= {} {{ {} }}", r.lo, show(val)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algebra() {
        let v = |s| Versions::parse(s).unwrap();
        assert_eq!(v("3+").intersect(v("0-4")), v("3-4"));
        assert!(v("0-2").intersect(v("3+")).is_empty());
        assert_eq!(v("0+").subtract(v("3+")), Some(v("0-2")));
        assert_eq!(v("0+").subtract(v("2-3")), None);
        assert_eq!(v("1-10").subtract(v("none")), Some(v("1-10")));
        assert!(v("none").is_subset_of(v("4")));
        assert_eq!(v("4").to_string(), "4");
    }
}
