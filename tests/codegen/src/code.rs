//! A small code writer. Statements are nodes: a conditional part is an [`Stmt::If`] with
//! its condition and body, never text to be parsed back. A function is a [`FnBuilder`]:
//! its receiver and parameters are fixed when it is created, and the version parameter is
//! named `ver` or `_` from whether the body asked [`Ver`] for the version while it was built.
//!
//! The text written here is laid out loosely; rustfmt gives it its final form.

use std::cell::Cell;

use crate::versions::{self, Cond, Versions};

/// Where generated code finds the version it runs at: a `ver: Ver` parameter, or the
/// `ver` field of a view (`self.ver`). Every use goes through it and is recorded.
pub struct Ver {
    name: &'static str,
    used: Cell<bool>,
}

impl Ver {
    /// The version as a function's `ver` parameter.
    pub fn param() -> Self {
        Ver { name: "ver", used: Cell::new(false) }
    }

    /// The version as a view's field.
    pub fn field() -> Self {
        Ver { name: "self.ver", used: Cell::new(false) }
    }

    /// The `Ver` value itself, to pass on.
    pub fn value(&self) -> &'static str {
        self.used.set(true);
        self.name
    }

    /// `ver.flexible`.
    pub fn flexible(&self) -> String {
        format!("{}.flexible", self.value())
    }

    fn version(&self) -> String {
        format!("{}.version", self.name)
    }

    fn mark(&self, c: Cond) -> Cond {
        if matches!(c, Cond::If(_)) {
            self.used.set(true);
        }
        c
    }

    /// "The version is in `wanted`", for code that runs only in `possible` (see [`versions::cond`]).
    pub fn cond(&self, wanted: Versions, possible: Versions) -> Cond {
        self.mark(versions::cond(wanted, possible, &self.version()))
    }

    /// "The version is not in `wanted`" (see [`versions::cond_not`]).
    pub fn cond_not(&self, wanted: Versions, possible: Versions) -> Cond {
        self.mark(versions::cond_not(wanted, possible, &self.version()))
    }

    /// A value that depends on the version (see [`versions::runs`]).
    pub fn by_version<T: PartialEq>(
        &self,
        possible: Versions,
        value: impl Fn(i16) -> T,
        show: impl Fn(&T) -> String,
    ) -> ByVersion<T> {
        let runs = versions::runs(possible, value);
        if runs.len() > 1 {
            self.used.set(true);
        }
        let text = versions::show_runs(&runs, &self.version(), show);
        ByVersion { runs, text }
    }

    /// Whether generated code asked for the version.
    pub fn used(&self) -> bool {
        self.used.get()
    }

    /// The name a closure or function parameter for it takes: `ver`, or `_` when unused.
    pub fn param_name(&self) -> &'static str {
        if self.used() { "ver" } else { "_" }
    }
}

/// A value that depends on the version: its runs of versions, and the expression.
pub struct ByVersion<T> {
    runs: Vec<(Versions, T)>,
    /// A literal, or an `if` chain over the version.
    pub text: String,
}

impl<T> ByVersion<T> {
    /// The value, when it is the same in every version.
    pub fn constant(&self) -> Option<&T> {
        match self.runs.as_slice() {
            [(_, v)] => Some(v),
            _ => None,
        }
    }

    /// The expression, in parentheses when it is an `if` chain (so that it can be added to).
    pub fn operand(&self) -> String {
        if self.constant().is_some() { self.text.clone() } else { format!("({})", self.text) }
    }
}

/// A statement of generated code.
pub enum Stmt {
    /// A statement (or the closing expression) as written; it may span lines.
    Line(String),
    /// `if cond { then } else ...`.
    If { cond: String, then: Block, otherwise: Option<Else> },
}

/// What follows `else`.
pub enum Else {
    /// `else if ...`: an [`Stmt::If`].
    If(Box<Stmt>),
    Block(Block),
}

/// Statements in order.
#[derive(Default)]
pub struct Block(pub Vec<Stmt>);

impl Stmt {
    pub fn line(s: impl Into<String>) -> Stmt {
        Stmt::Line(s.into())
    }

    /// `if cond { then }`.
    pub fn when(cond: impl Into<String>, then: impl Into<Block>) -> Stmt {
        Stmt::If { cond: cond.into(), then: then.into(), otherwise: None }
    }

    pub fn render(&self, indent: usize, out: &mut String) {
        let pad = "    ".repeat(indent);
        match self {
            Stmt::Line(s) => {
                for l in s.lines() {
                    out.push_str(&pad);
                    out.push_str(l);
                    out.push('\n');
                }
            }
            Stmt::If { .. } => {
                out.push_str(&pad);
                self.render_if(indent, out);
                out.push('\n');
            }
        }
    }

    /// `if ... }` without the leading indent or the line end, so that it can follow `else`.
    fn render_if(&self, indent: usize, out: &mut String) {
        let Stmt::If { cond, then, otherwise } = self else { unreachable!("an if") };
        let pad = "    ".repeat(indent);
        out.push_str(&format!("if {cond} {{\n"));
        then.render(indent + 1, out);
        out.push_str(&pad);
        out.push('}');
        match otherwise {
            None => {}
            Some(Else::If(next)) => {
                out.push_str(" else ");
                next.render_if(indent, out);
            }
            Some(Else::Block(b)) => {
                out.push_str(" else {\n");
                b.render(indent + 1, out);
                out.push_str(&pad);
                out.push('}');
            }
        }
    }
}

impl From<Stmt> for Block {
    fn from(s: Stmt) -> Block {
        Block(vec![s])
    }
}

impl From<Vec<Stmt>> for Block {
    fn from(v: Vec<Stmt>) -> Block {
        Block(v)
    }
}

impl Block {
    pub fn new() -> Self {
        Block(Vec::new())
    }

    pub fn push(&mut self, s: Stmt) {
        self.0.push(s);
    }

    pub fn line(&mut self, s: impl Into<String>) {
        self.0.push(Stmt::Line(s.into()));
    }

    pub fn extend(&mut self, b: Block) {
        self.0.extend(b.0);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `body` where it runs only under `c`: as it is, not at all, or in an `if`. An `if`
    /// without `else` under a condition becomes one `if` over both conditions.
    pub fn under(&mut self, c: &Cond, body: impl Into<Block>) {
        let body = body.into();
        if body.is_empty() {
            return;
        }
        match c {
            Cond::Always => self.extend(body),
            Cond::Never => {}
            Cond::If(c) => match <[Stmt; 1]>::try_from(body.0) {
                Ok([Stmt::If { cond, then, otherwise: None }]) => {
                    self.push(Stmt::when(format!("{c} && {}", paren_or(&cond)), then));
                }
                Ok([one]) => self.push(Stmt::when(c.clone(), one)),
                Err(many) => self.push(Stmt::when(c.clone(), many)),
            },
        }
    }

    pub fn render(&self, indent: usize, out: &mut String) {
        for s in &self.0 {
            s.render(indent, out);
        }
    }
}

/// `e` in parentheses when it is a disjunction (so that it can be joined with `&&`).
pub fn paren_or(e: &str) -> String {
    if e.contains("||") { format!("({e})") } else { e.to_string() }
}

/// A parameter of a generated function.
enum Param {
    Named(&'static str, &'static str),
    /// A parameter the function ignores: `_: ty`.
    Unused(&'static str),
    /// The version: `ver: Ver`, or `_: Ver` when the body does not ask for it.
    Ver,
}

/// A function (or method) of generated code. Its receiver and parameters are set when it
/// is made; its body is built with [`FnBuilder::ver`], which records whether the version is
/// used, and [`FnBuilder::finish`] writes signature and body together.
pub struct FnBuilder {
    attrs: Vec<String>,
    vis: &'static str,
    name: String,
    receiver: Option<&'static str>,
    params: Vec<Param>,
    ret: Option<String>,
    pub ver: Ver,
}

impl FnBuilder {
    /// A function whose version is its `ver` parameter.
    pub fn new(name: impl Into<String>) -> Self {
        FnBuilder {
            attrs: Vec::new(),
            vis: "",
            name: name.into(),
            receiver: None,
            params: Vec::new(),
            ret: None,
            ver: Ver::param(),
        }
    }

    /// A `&self` method of a view, whose version is `self.ver`.
    pub fn view_method(name: impl Into<String>) -> Self {
        FnBuilder { receiver: Some("&self"), ver: Ver::field(), ..FnBuilder::new(name) }
    }

    /// A `&self` method with a version parameter.
    pub fn method(name: impl Into<String>) -> Self {
        FnBuilder { receiver: Some("&self"), ..FnBuilder::new(name) }
    }

    /// The receiver, e.g. `&'b self` (a method's is `&self`).
    pub fn receiver(mut self, receiver: &'static str) -> Self {
        self.receiver = Some(receiver);
        self
    }

    pub fn doc(mut self, line: impl AsRef<str>) -> Self {
        self.attrs.push(format!("/// {}", line.as_ref()));
        self
    }

    pub fn inline(mut self) -> Self {
        self.attrs.push("#[inline]".into());
        self
    }

    /// `#[inline(always)]`, for a step of a pass that must make no call.
    pub fn inline_always(mut self) -> Self {
        self.attrs.push("#[inline(always)]".into());
        self
    }

    pub fn public(mut self) -> Self {
        self.vis = "pub ";
        self
    }

    /// `pub(crate)`.
    pub fn crate_public(mut self) -> Self {
        self.vis = "pub(crate) ";
        self
    }

    pub fn param(mut self, name: &'static str, ty: &'static str) -> Self {
        self.params.push(Param::Named(name, ty));
        self
    }

    pub fn unused(mut self, ty: &'static str) -> Self {
        self.params.push(Param::Unused(ty));
        self
    }

    pub fn ver_param(mut self) -> Self {
        self.params.push(Param::Ver);
        self
    }

    pub fn returns(mut self, ty: impl Into<String>) -> Self {
        self.ret = Some(ty.into());
        self
    }

    /// The function, indented as an item of an `impl` block.
    pub fn finish(self, body: impl Into<Block>) -> String {
        let mut params: Vec<String> = self.receiver.iter().map(|r| r.to_string()).collect();
        for p in &self.params {
            params.push(match p {
                Param::Named(n, t) => format!("{n}: {t}"),
                Param::Unused(t) => format!("_: {t}"),
                Param::Ver => format!("{}: Ver", self.ver.param_name()),
            });
        }
        let ret = self.ret.as_ref().map(|r| format!(" -> {r}")).unwrap_or_default();
        let mut out = String::new();
        for a in &self.attrs {
            out.push_str(&format!("    {a}\n"));
        }
        out.push_str(&format!("    {}fn {}({}){ret} {{\n", self.vis, self.name, params.join(", ")));
        body.into().render(2, &mut out);
        out.push_str("    }\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Versions {
        Versions::parse(s).unwrap()
    }

    #[test]
    fn the_version_parameter_is_named_from_what_the_body_asked() {
        let f = FnBuilder::new("fixed").ver_param().returns("usize");
        // Always true in the versions the code runs in: no test, so no use of `ver`.
        assert!(matches!(f.ver.cond(v("0+"), v("2-4")), Cond::Always));
        assert!(f.finish(Stmt::line("4")).contains("fn fixed(_: Ver) -> usize {"));

        let f = FnBuilder::method("size").ver_param().unused("&'static str");
        let Cond::If(c) = f.ver.cond(v("3+"), v("2-4")) else { panic!("a test") };
        assert_eq!(c, "ver.version >= 3");
        let text = f.finish(Stmt::when(c, Stmt::line("n += 1;")));
        assert!(text.contains("fn size(&self, ver: Ver, _: &'static str) {"), "{text}");

        // A view's method reads its own `ver`, and has no version parameter to name.
        let f = FnBuilder::view_method("name").public().returns("i32");
        let Cond::If(c) = f.ver.cond(v("0-1"), v("0+")) else { panic!("a test") };
        assert_eq!(c, "self.ver.version <= 1");
        assert!(f.ver.used());
    }

    #[test]
    fn an_if_under_a_condition_becomes_one_if() {
        let mut b = Block::new();
        b.under(&Cond::If("a".into()), Stmt::when("x || y", Stmt::line("f();")));
        // With an else, it stays nested.
        let nested = Stmt::If {
            cond: "b".into(),
            then: Stmt::line("g();").into(),
            otherwise: Some(Else::Block(Stmt::line("h();").into())),
        };
        b.under(&Cond::If("a".into()), nested);
        b.under(&Cond::Never, Stmt::line("never();"));
        b.under(&Cond::Always, Stmt::line("always();"));
        let mut out = String::new();
        b.render(0, &mut out);
        assert_eq!(
            out,
            "if a && (x || y) {\n    f();\n}\nif a {\n    if b {\n        g();\n    } else {\n        h();\n    }\n}\nalways();\n"
        );
    }
}
