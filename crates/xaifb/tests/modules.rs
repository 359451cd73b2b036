//! The driver reads as a pipeline: its modules (the files of `src/`) use
//! each other in one direction only. A `crate::NAME` reference in a file
//! is an edge to the module `NAME` (or, when `NAME` is no module, to the
//! crate root `main.rs`, which declares and uses every module); the test
//! fails on any cycle of these edges and names it.
//!
//! `XAIFB_MODULES_DIR` points the test at another source directory (e.g.
//! an older version's), to see it fail there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn source_dir() -> PathBuf {
    match std::env::var_os("XAIFB_MODULES_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
    }
}

/// `text` without `//` and `/* */` comments (doc comments included: an
/// intra-doc link is no use of a module) and without the contents of
/// string literals (plain ones with escapes; the driver has no raw ones).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |i| &r[i..]);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |i| &r[i + 2..]);
        } else if let Some(r) = rest.strip_prefix("'\"'") {
            rest = r;
        } else if let Some(r) = rest.strip_prefix('"') {
            let mut escaped = false;
            let end = r
                .char_indices()
                .find(|&(_, c)| {
                    let close = c == '"' && !escaped;
                    escaped = c == '\\' && !escaped;
                    close
                })
                .map_or(r.len(), |(i, _)| i + 1);
            out.push_str("\"\"");
            rest = &r[end..];
        } else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segments named after `crate::` in `code`, including
/// those of `crate::{a, b::c}` groups.
fn crate_references(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut start = 0;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.insert(ident(group[start..k].trim()).to_string());
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident(group[start..k].trim()).to_string());
                        start = k + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(rest).to_string());
        }
    }
    out.remove("");
    out
}

/// The modules `main.rs` declares (`mod NAME;`).
fn declared(main: &str) -> BTreeSet<String> {
    main.lines()
        .filter_map(|l| {
            let l = l.trim();
            let name = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))?;
            name.strip_suffix(';').map(str::to_string)
        })
        .collect()
}

/// The module graph of `dir`: each file's modules used.
fn graph(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "rs") {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            files.insert(name, strip_comments(&std::fs::read_to_string(&p).unwrap()));
        }
    }
    let modules = declared(&files["main"]);
    let mut g = BTreeMap::new();
    for (name, code) in &files {
        let mut uses: BTreeSet<String> = crate_references(code)
            .into_iter()
            .map(|r| {
                if files.contains_key(&r) {
                    r
                } else {
                    "main".into()
                }
            })
            .collect();
        if name == "main" {
            uses.extend(modules.iter().cloned());
        }
        uses.remove(name);
        g.insert(name.clone(), uses);
    }
    g
}

/// A cycle of `g`, as the modules along it, if there is one.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // 0 unvisited, 1 on the current path, 2 done; explicit stack.
    let mut state: BTreeMap<&str, u8> = g.keys().map(|k| (k.as_str(), 0)).collect();
    for root in g.keys() {
        if state[root.as_str()] != 0 {
            continue;
        }
        let mut path: Vec<(&str, Vec<&str>)> = Vec::new();
        let next = |n: &str| -> Vec<&str> {
            g.get(n)
                .map(|s| s.iter().map(String::as_str).collect())
                .unwrap_or_default()
        };
        state.insert(root, 1);
        path.push((root, next(root)));
        while let Some((node, todo)) = path.last_mut() {
            let node = *node;
            match todo.pop() {
                Some(m) if state.get(m) == Some(&1) => {
                    let from = path.iter().position(|(n, _)| *n == m).unwrap();
                    let mut c: Vec<String> =
                        path[from..].iter().map(|(n, _)| n.to_string()).collect();
                    c.push(m.to_string());
                    return Some(c);
                }
                Some(m) if state.get(m) == Some(&0) => {
                    state.insert(m, 1);
                    path.push((m, next(m)));
                }
                Some(_) => {}
                None => {
                    state.insert(node, 2);
                    path.pop();
                }
            }
        }
    }
    None
}

#[test]
fn the_parser_sees_references_and_the_search_sees_cycles() {
    let code = strip_comments(
        "use crate::{a::X, b, c::{d, e}};\n// crate::hidden\nfn f() { crate::g::h(); $crate::i::j }\n/* crate::k */ let s = \"crate::l \\\" crate::m\"; crate::n::o",
    );
    let refs: Vec<String> = crate_references(&code).into_iter().collect();
    assert_eq!(refs, ["a", "b", "c", "g", "i", "n"]);
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    let c = cycle(&g).expect("a cycle");
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 4);
    let mut dag = g.clone();
    dag.get_mut("c").unwrap().clear();
    assert_eq!(cycle(&dag), None);
}

#[test]
fn the_driver_modules_form_no_cycle() {
    let dir = source_dir();
    let g = graph(&dir);
    assert!(
        g.len() > 10,
        "only {} modules in {}",
        g.len(),
        dir.display()
    );
    assert!(
        g.values().map(BTreeSet::len).sum::<usize>() > 20,
        "too few references found: {g:?}"
    );
    if let Some(c) = cycle(&g) {
        panic!(
            "the driver's modules form a cycle: {} (each uses the next through crate::)",
            c.join(" -> ")
        );
    }
}
