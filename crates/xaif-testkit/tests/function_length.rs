//! Functions in the library crates stay under 150 lines: one step a
//! function, named after the step, so that a reader can follow an
//! algorithm step by step. This test scans the sources of the library
//! crates and fails on every function longer than that, unless the
//! function is listed, with its reason, in the section
//! [`SECTION`] of `docs/decisions.md`: the exceptions and their reasons
//! live in that one place, and an entry that no longer names a long
//! function fails the test too, so the list cannot go stale.
//!
//! The scanner is a small Rust lexer (line and nested block comments,
//! string, raw string, byte and character literals, lifetimes, raw
//! identifiers) and a brace matcher over its tokens. A function's length
//! is the number of lines from its `fn` keyword to its closing brace,
//! less the lines of the functions nested in it (they are functions of
//! their own, measured separately); closures count as part of the
//! function they are written in. Items under `#[cfg(test)]` or `#[test]`
//! are tests, not library code, and are not measured.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The longest a library function may be, in lines.
const LIMIT: usize = 150;

/// The crates whose `src` is library code.
const LIBRARY_CRATES: [&str; 8] = [
    "xaif-model",
    "xaif-linearize",
    "xaif-elim",
    "xaif-cfrev",
    "xaif-dataflow",
    "xaif-interp",
    "xaif-trace",
    "xaif-revolve",
];

/// The heading, in `docs/decisions.md`, of the section listing the
/// functions allowed to be longer, one `` - `PATH` `NAME`: reason `` line
/// each.
const SECTION: &str = "## Functions longer than 150 lines";

/// One lexical token of Rust source, as much as the measure needs.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// An identifier or keyword (raw identifiers keep their `r#`), or a
    /// number.
    Word(String),
    /// A single punctuation character.
    Punct(char),
    /// A string, character or byte literal (its text does not matter).
    Literal,
    /// A lifetime or label, `'a`.
    Lifetime,
}

/// A token and the 1-based line it starts on.
#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

/// Whether `c` may continue an identifier (or a number).
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Splits Rust source into tokens, dropping comments and whitespace.
/// Malformed source (an unterminated literal or comment) ends the token
/// stream at that point rather than failing: the compiler, not this test,
/// judges the source.
fn lex(src: &str) -> Vec<Token> {
    let s: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    // Advances over `s[from..to]`, counting the newlines it passes.
    let count = |from: usize, to: usize, line: &mut usize| {
        *line += s[from..to.min(s.len())]
            .iter()
            .filter(|&&c| c == '\n')
            .count();
    };
    while i < s.len() {
        let c = s[i];
        let start_line = line;
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && s.get(i + 1) == Some(&'/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && s.get(i + 1) == Some(&'*') {
            let mut depth = 0usize;
            let from = i;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            count(from, i, &mut line);
        } else if let Some(end) = raw_string_end(&s, i) {
            count(i, end, &mut line);
            i = end;
            out.push(Token {
                tok: Tok::Literal,
                line: start_line,
            });
        } else if c == '"' || ((c == 'b' || c == 'c') && s.get(i + 1) == Some(&'"')) {
            let from = i;
            i += if c == '"' { 1 } else { 2 };
            while i < s.len() && s[i] != '"' {
                i += if s[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            count(from, i, &mut line);
            out.push(Token {
                tok: Tok::Literal,
                line: start_line,
            });
        } else if c == '\'' || (c == 'b' && s.get(i + 1) == Some(&'\'')) {
            let q = if c == '\'' { i } else { i + 1 };
            if s.get(q + 1) == Some(&'\\') {
                // An escaped character: past the escaped character, up to
                // the closing quote.
                i = q + 3;
                while i < s.len() && s[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push(Token {
                    tok: Tok::Literal,
                    line: start_line,
                });
            } else if s.get(q + 2) == Some(&'\'') {
                i = q + 3;
                out.push(Token {
                    tok: Tok::Literal,
                    line: start_line,
                });
            } else {
                // A lifetime or a label.
                i = q + 1;
                while i < s.len() && is_word_char(s[i]) {
                    i += 1;
                }
                out.push(Token {
                    tok: Tok::Lifetime,
                    line: start_line,
                });
            }
        } else if is_word_char(c) {
            let from = i;
            if c == 'r' && s.get(i + 1) == Some(&'#') {
                i += 2;
            }
            while i < s.len() && is_word_char(s[i]) {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Word(s[from..i].iter().collect()),
                line: start_line,
            });
        } else {
            out.push(Token {
                tok: Tok::Punct(c),
                line: start_line,
            });
            i += 1;
        }
    }
    out
}

/// When a raw string literal (`r"…"`, `r#"…"#`, `br…`, `cr…`) starts at
/// `i`, the index just past it.
fn raw_string_end(s: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if matches!(s.get(j), Some('b') | Some('c')) {
        j += 1;
    }
    if s.get(j) != Some(&'r') {
        return None;
    }
    // Not the end of a longer identifier such as `bar"`.
    if i > 0 && is_word_char(s[i - 1]) {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while s.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if s.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < s.len() {
        if s[j] == '"' && (1..=hashes).all(|k| s.get(j + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(s.len())
}

/// A function found in a file: its name, the line of its `fn` keyword and
/// its length in lines (nested functions excluded).
#[derive(Debug, Clone, PartialEq)]
struct Function {
    name: String,
    line: usize,
    lines: usize,
}

/// An open brace: what it opened.
struct Frame {
    /// The function whose body it is, if it is one: its name and the line
    /// of its `fn`.
    function: Option<(String, usize)>,
    /// Lines of the functions nested directly in this function.
    nested: usize,
    /// Whether this brace belongs to a test item.
    test: bool,
}

/// Every function with a body in `src`, outside test items, in the order
/// their bodies close; `None` when the braces, brackets or parentheses do
/// not balance (the scanner misread the file).
fn functions(src: &str) -> Option<Vec<Function>> {
    let toks = lex(src);
    let mut found = Vec::new();
    let mut frames: Vec<Frame> = Vec::new();
    // Parenthesis and bracket depth: a function's body is the first `{`
    // at the depth of its `fn`, and a `;` there means it has none.
    let mut depth = 0usize;
    // A `fn NAME` whose body has not started: name, line, depth.
    let mut pending: Option<(String, usize, usize)> = None;
    // A test attribute whose item has not started: depth.
    let mut pending_test: Option<usize> = None;
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        match &t.tok {
            Tok::Punct('#') if toks.get(i + 1).map(|t| &t.tok) == Some(&Tok::Punct('[')) => {
                let end = attribute_end(&toks, i + 1);
                if is_test_attribute(&toks[i + 2..end.saturating_sub(1).max(i + 2)]) {
                    pending_test = Some(depth);
                }
                i = end;
                continue;
            }
            Tok::Word(w) if w == "fn" => {
                if let Some(Tok::Word(name)) = toks.get(i + 1).map(|t| &t.tok) {
                    pending = Some((name.clone(), t.line, depth));
                    i += 2;
                    continue;
                }
            }
            Tok::Punct('(') | Tok::Punct('[') => depth += 1,
            Tok::Punct(')') | Tok::Punct(']') => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return None,
            },
            Tok::Punct(';') => {
                if pending.as_ref().is_some_and(|p| p.2 == depth) {
                    pending = None;
                }
                if pending_test == Some(depth) {
                    pending_test = None;
                }
            }
            Tok::Punct('{') => {
                let outer_test = frames.last().is_some_and(|f| f.test);
                let function = match &pending {
                    Some((name, line, d)) if *d == depth => {
                        let f = Some((name.clone(), *line));
                        pending = None;
                        f
                    }
                    _ => None,
                };
                let test = outer_test || pending_test.take().is_some();
                frames.push(Frame {
                    function,
                    nested: 0,
                    test,
                });
            }
            Tok::Punct('}') => {
                let frame = frames.pop()?;
                if let Some((name, line)) = frame.function {
                    let span = t.line - line + 1;
                    if !frame.test {
                        found.push(Function {
                            name,
                            line,
                            lines: span - frame.nested.min(span - 1),
                        });
                    }
                    if let Some(outer) = frames.iter_mut().rev().find(|f| f.function.is_some()) {
                        outer.nested += span;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    (frames.is_empty() && depth == 0).then_some(found)
}

/// The index just past the `]` closing the attribute whose `[` is at `open`.
fn attribute_end(toks: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.tok {
            Tok::Punct('[') => depth += 1,
            Tok::Punct(']') => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// Whether the attribute with these tokens (between `#[` and `]`) marks a
/// test item: `test`, or a `cfg` that needs `test` and does not negate.
fn is_test_attribute(body: &[Token]) -> bool {
    let word = |t: &Token, w: &str| t.tok == Tok::Word(w.to_string());
    match body.first() {
        Some(t) if word(t, "test") => body.len() == 1,
        Some(t) if word(t, "cfg") => {
            body.iter().any(|t| word(t, "test")) && !body.iter().any(|t| word(t, "not"))
        }
        _ => false,
    }
}

/// The workspace root (two levels above this crate).
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The exceptions listed in `docs/decisions.md`: (path, function name).
/// Fails when an entry has no reason or the section is missing.
fn exceptions(decisions: &str) -> BTreeSet<(String, String)> {
    let mut lines = decisions.lines().skip_while(|l| l.trim_end() != SECTION);
    assert!(
        lines.next().is_some(),
        "docs/decisions.md has no section `{SECTION}`"
    );
    let mut out = BTreeSet::new();
    for l in lines.take_while(|l| !l.starts_with("## ")) {
        let Some(entry) = l.strip_prefix("- `") else {
            continue;
        };
        let parsed = entry.split_once("` `").and_then(|(path, rest)| {
            let (name, reason) = rest.split_once("`:")?;
            Some((path, name, reason.trim()))
        });
        let Some((path, name, reason)) = parsed else {
            panic!("docs/decisions.md, `{SECTION}`: `{l}` is not `- `PATH` `NAME`: reason`");
        };
        assert!(
            !reason.is_empty(),
            "docs/decisions.md, `{SECTION}`: `{path}` `{name}` gives no reason"
        );
        out.insert((path.to_string(), name.to_string()));
    }
    out
}

#[test]
fn library_functions_stay_under_the_limit() {
    let root = workspace();
    let decisions = std::fs::read_to_string(root.join("docs/decisions.md"))
        .expect("docs/decisions.md is readable");
    let allowed = exceptions(&decisions);
    let mut long = Vec::new();
    let mut listed_and_long = BTreeSet::new();
    for krate in LIBRARY_CRATES {
        for file in rust_files(&root.join("crates").join(krate).join("src")) {
            let src = std::fs::read_to_string(&file).expect("source is readable");
            let rel = file
                .strip_prefix(&root)
                .expect("under the workspace")
                .to_string_lossy()
                .replace('\\', "/");
            let found = functions(&src)
                .unwrap_or_else(|| panic!("{rel}: the scanner misread the file (unbalanced)"));
            for f in found {
                if f.lines <= LIMIT {
                    continue;
                }
                let key = (rel.clone(), f.name.clone());
                if allowed.contains(&key) {
                    listed_and_long.insert(key);
                } else {
                    long.push(format!("{rel}:{} `{}`: {} lines", f.line, f.name, f.lines));
                }
            }
        }
    }
    let stale: Vec<_> = allowed.difference(&listed_and_long).collect();
    assert!(
        long.is_empty() && stale.is_empty(),
        "functions over {LIMIT} lines (split them into steps, or list them with a reason \
         under `{SECTION}` in docs/decisions.md):\n{}\nlisted there but not over {LIMIT} \
         lines (remove the entry):\n{stale:?}",
        long.join("\n"),
    );
}

/// Lengths by name, for the scanner's own tests.
fn lengths(src: &str) -> Vec<(String, usize)> {
    functions(src)
        .expect("balanced")
        .into_iter()
        .map(|f| (f.name, f.lines))
        .collect()
}

#[test]
fn braces_in_literals_and_comments_do_not_count() {
    let src = r####"
fn a() {
    let s = "}";
    let r = r#"} fn fake() { "#;
    let c = '}';
    let b = b'{';
    let e = '\'';
    // }
    /* } /* nested } */ { */
    let l: &'static str = "\"}";
}
fn b() -> [u8; 2] {
    [1, 2]
}
"####;
    assert_eq!(lengths(src), vec![("a".into(), 10), ("b".into(), 3)]);
}

#[test]
fn nested_functions_are_measured_alone() {
    let src = "
fn outer() {
    let x = 1;
    fn inner() {
        let y = 2;
    }
    let f = |z: u32| {
        z + 1
    };
}
";
    // outer spans 9 lines, of which inner's 3 are its own.
    assert_eq!(lengths(src), vec![("inner".into(), 3), ("outer".into(), 6)]);
}

#[test]
fn declarations_pointers_and_tests_are_not_functions() {
    let src = "
trait T {
    fn declared(&self, f: fn(u32) -> u32) -> [u8; 3];
    fn provided(&self) {
    }
}
#[cfg(test)]
mod tests {
    fn helper() {
    }
}
#[test]
fn a_test() {
}
#[cfg(not(test))]
fn kept<'a>(x: &'a str) -> impl Fn() + 'a {
    move || drop(x)
}
fn r#match() {
}
";
    assert_eq!(
        lengths(src),
        vec![
            ("provided".into(), 2),
            ("kept".into(), 3),
            ("r#match".into(), 2)
        ]
    );
}

#[test]
fn unbalanced_source_is_reported() {
    assert!(functions("fn a() { \"}\" ").is_none());
    assert!(functions("fn a() { ] }").is_none());
    assert!(functions("fn a() {} }").is_none());
}

#[test]
fn the_exception_list_is_read_with_its_reasons() {
    let doc = format!(
        "# Decisions\n\n{SECTION}\n\nWhy.\n\n- `crates/a/src/x.rs` `f`: it is a table.\n\n## Next\n- `b` `g`: not this section\n"
    );
    let got = exceptions(&doc);
    assert_eq!(
        got.into_iter().collect::<Vec<_>>(),
        vec![("crates/a/src/x.rs".to_string(), "f".to_string())]
    );
    let bad = format!("{SECTION}\n- `crates/a/src/x.rs` `f`:\n");
    assert!(std::panic::catch_unwind(|| exceptions(&bad)).is_err());
}
