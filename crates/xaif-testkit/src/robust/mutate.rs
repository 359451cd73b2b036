//! Mutations of XAIF text: XML-level (truncation, bit flips, deleted or
//! duplicated elements and attributes, dangling and duplicate ids, cycles,
//! odd and huge values, non-UTF-8 bytes, DOCTYPEs, control characters, deep
//! and wide documents) and semantic (integer constants at the limits, loop
//! bounds, recursion, arity changes, unknown intrinsics, shape changes).
//!
//! Mutations work on the bytes with a small scanner of elements and
//! attributes, not through the model, so that they can produce anything,
//! including what the model cannot represent.

/// A small deterministic generator (SplitMix64): campaigns are reproducible
/// from their seed on every platform.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    /// The generator of item `k` of a campaign with seed `seed`.
    pub fn for_item(seed: u64, k: u64) -> Self {
        let mut r = Rng::new(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ k);
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 1.0 < p
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// An element of the scanned text.
#[derive(Clone, Debug)]
pub struct Elem {
    /// Byte offset of `<`.
    pub start: usize,
    /// Byte offset after the start tag's `>`.
    pub tag_end: usize,
    /// Byte offset after the element (its end tag, or the start tag when
    /// empty).
    pub end: usize,
    /// Local name (prefix removed).
    pub name: String,
    /// Depth (0 for the root).
    pub depth: usize,
}

/// An attribute of a start tag.
#[derive(Clone, Debug)]
pub struct Attr {
    /// Byte range of `name="value"` (from the name to the closing quote).
    pub whole: (usize, usize),
    /// Byte range of the value (inside the quotes).
    pub value: (usize, usize),
    /// The name.
    pub name: String,
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The elements of a well-formed text, in document order (an ill-formed
/// text gives what could be scanned).
pub fn elements(text: &[u8]) -> Vec<Elem> {
    let mut out: Vec<Elem> = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    let mut i = 0;
    while let Some(lt) = text
        .get(i..)
        .and_then(|t| t.iter().position(|&b| b == b'<'))
    {
        let s = i + lt;
        let rest = &text[s..];
        if rest.starts_with(b"<?") {
            match find(text, s, b"?>") {
                Some(e) => i = e + 2,
                None => break,
            }
        } else if rest.starts_with(b"<!--") {
            match find(text, s, b"-->") {
                Some(e) => i = e + 3,
                None => break,
            }
        } else if rest.starts_with(b"<![CDATA[") {
            match find(text, s, b"]]>") {
                Some(e) => i = e + 3,
                None => break,
            }
        } else if rest.starts_with(b"<!") {
            match find(text, s, b">") {
                Some(e) => i = e + 1,
                None => break,
            }
        } else if rest.starts_with(b"</") {
            let Some(e) = find(text, s, b">") else { break };
            if let Some(k) = stack.pop() {
                out[k].end = e + 1;
            }
            i = e + 1;
        } else {
            // A start tag: '>' outside quotes.
            let mut j = s + 1;
            let mut quote = 0u8;
            while j < text.len() {
                let b = text[j];
                if quote != 0 {
                    if b == quote {
                        quote = 0;
                    }
                } else if b == b'"' || b == b'\'' {
                    quote = b;
                } else if b == b'>' {
                    break;
                }
                j += 1;
            }
            if j >= text.len() {
                break;
            }
            let qname_end = text[s + 1..j]
                .iter()
                .position(|b| b.is_ascii_whitespace() || *b == b'/' || *b == b'>')
                .map(|p| p + s + 1)
                .unwrap_or(j);
            let qname = String::from_utf8_lossy(&text[s + 1..qname_end]).into_owned();
            let name = qname.rsplit(':').next().unwrap_or("").to_string();
            let empty = text[j - 1] == b'/';
            out.push(Elem {
                start: s,
                tag_end: j + 1,
                end: j + 1,
                name,
                depth: stack.len(),
            });
            if !empty {
                stack.push(out.len() - 1);
            }
            i = j + 1;
        }
    }
    out
}

/// The attributes of the start tag of `e`.
pub fn attributes(text: &[u8], e: &Elem) -> Vec<Attr> {
    let mut out = Vec::new();
    let mut i = e.start + 1;
    // Skip the name.
    while i < e.tag_end && !text[i].is_ascii_whitespace() && text[i] != b'>' && text[i] != b'/' {
        i += 1;
    }
    loop {
        while i < e.tag_end && text[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= e.tag_end || text[i] == b'>' || text[i] == b'/' {
            break;
        }
        let name_start = i;
        while i < e.tag_end && text[i] != b'=' && !text[i].is_ascii_whitespace() {
            i += 1;
        }
        let name = String::from_utf8_lossy(&text[name_start..i]).into_owned();
        while i < e.tag_end && text[i] != b'"' && text[i] != b'\'' {
            i += 1;
        }
        if i >= e.tag_end {
            break;
        }
        let q = text[i];
        let vs = i + 1;
        let Some(ve) = text[vs..e.tag_end]
            .iter()
            .position(|&b| b == q)
            .map(|p| p + vs)
        else {
            break;
        };
        out.push(Attr {
            whole: (name_start, ve + 1),
            value: (vs, ve),
            name,
        });
        i = ve + 1;
    }
    out
}

/// What a mutation may use besides the text.
pub struct Context<'a> {
    /// A file whose content must never appear in any output (for DOCTYPE
    /// mutations with external entities).
    pub secret: &'a std::path::Path,
    /// Intrinsic names of the catalogue (for arity changes).
    pub intrinsics: &'a [String],
    /// Largest repetition of deep and wide mutations (expression depth,
    /// copies of an element).
    pub max_repeat: usize,
}

/// Odd attribute values: empty, negative, integer limits, huge, non-finite,
/// not a number, escaped, non-ASCII, long.
const ODD_VALUES: &[&str] = &[
    "",
    "-1",
    "0",
    "1",
    "2147483647",
    "2147483648",
    "-2147483649",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "99999999999",
    "99999999999999999999999",
    "1e308",
    "1e309",
    "-1e309",
    "NaN",
    "nan",
    "inf",
    "Infinity",
    "1.5",
    "0x10",
    "x",
    " 1",
    "&amp;",
    "&lt;&gt;",
    "\u{e9}\u{3b1}",
    "true",
    "false",
];

/// Integer values for loop bounds and constants.
const INT_LIMITS: &[&str] = &[
    "0",
    "-1",
    "1",
    "2147483647",
    "-2147483648",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775806",
    "-9223372036854775807",
    "1000000000000",
    "100000000",
];

/// The most bytes a `wide` mutation adds.
const WIDE_BYTES: usize = 16 << 20;

/// A mutant this long gets no further mutation (scanning it again would
/// cost the campaign more than it tells).
const MUTANT_BYTES: usize = 8 << 20;

/// The kinds of mutation, by name (for reports).
pub const KINDS: &[&str] = &[
    "truncate",
    "bit-flip",
    "delete-element",
    "duplicate-element",
    "delete-attribute",
    "duplicate-attribute",
    "dangling-id",
    "duplicate-id",
    "cycle",
    "odd-value",
    "non-utf8",
    "doctype-external",
    "doctype-entity-bomb",
    "control-character",
    "xml-declaration",
    "deep-nesting",
    "deep-expression",
    "wide",
    "integer-limit",
    "loop-bounds",
    "recursion",
    "arity",
    "unknown-intrinsic",
    "shape",
];

fn splice(text: &[u8], range: (usize, usize), with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + with.len());
    out.extend_from_slice(&text[..range.0]);
    out.extend_from_slice(with);
    out.extend_from_slice(&text[range.1..]);
    out
}

/// The end of the XML declaration (0 when there is none).
fn after_declaration(text: &[u8]) -> usize {
    if text.starts_with(b"<?xml") {
        find(text, 0, b"?>").map(|e| e + 2).unwrap_or(0)
    } else {
        0
    }
}

fn with_attr(
    text: &[u8],
    els: &[Elem],
    rng: &mut Rng,
    pred: impl Fn(&Elem, &Attr) -> bool,
) -> Option<(Elem, Attr)> {
    let mut cands = Vec::new();
    for e in els {
        for a in attributes(text, e) {
            if pred(e, &a) {
                cands.push((e.clone(), a));
            }
        }
    }
    if cands.is_empty() {
        None
    } else {
        let k = rng.below(cands.len());
        Some(cands.swap_remove(k))
    }
}

fn value<'t>(text: &'t [u8], a: &Attr) -> &'t str {
    std::str::from_utf8(&text[a.value.0..a.value.1]).unwrap_or("")
}

fn set_value(text: &[u8], a: &Attr, v: &str) -> Vec<u8> {
    splice(text, a.value, v.as_bytes())
}

const ID_REFS: &[&str] = &[
    "source",
    "target",
    "symbol_id",
    "scope_id",
    "vertex_id",
    "edge_id",
    "statement_id",
    "position",
];

/// Applies mutation `kind` to `text`; `None` when the text has nothing it
/// applies to.
pub fn apply(kind: &str, text: &[u8], rng: &mut Rng, ctx: &Context<'_>) -> Option<Vec<u8>> {
    let els = elements(text);
    let non_root: Vec<&Elem> = els.iter().filter(|e| e.depth > 0).collect();
    match kind {
        "truncate" => {
            let at = rng.below(text.len().max(1));
            Some(text[..at].to_vec())
        }
        "bit-flip" => {
            let mut t = text.to_vec();
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(t.len().max(1));
                if let Some(b) = t.get_mut(i) {
                    *b ^= 1 << rng.below(8);
                }
            }
            Some(t)
        }
        "delete-element" => {
            if non_root.is_empty() {
                return None;
            }
            let e = *rng.pick(&non_root);
            Some(splice(text, (e.start, e.end), b""))
        }
        "duplicate-element" => {
            if non_root.is_empty() {
                return None;
            }
            let e = *rng.pick(&non_root);
            let copy = text[e.start..e.end].to_vec();
            Some(splice(text, (e.end, e.end), &copy))
        }
        "delete-attribute" => {
            let (_, a) = with_attr(text, &els, rng, |_, a| !a.name.starts_with("xmlns"))?;
            Some(splice(text, a.whole, b""))
        }
        "duplicate-attribute" => {
            let (_, a) = with_attr(text, &els, rng, |_, _| true)?;
            let copy = [b" ".as_slice(), &text[a.whole.0..a.whole.1]].concat();
            Some(splice(text, (a.whole.1, a.whole.1), &copy))
        }
        "dangling-id" => {
            let (_, a) = with_attr(text, &els, rng, |_, a| ID_REFS.contains(&a.name.as_str()))?;
            let v = *rng.pick(&[
                "999999",
                "nosuchid",
                "",
                "-3",
                "1e3",
                "18446744073709551616",
            ]);
            Some(set_value(text, &a, v))
        }
        "duplicate-id" => {
            let names = ["vertex_id", "edge_id", "statement_id", "symbol_id"];
            let name = *rng.pick(&names);
            let all: Vec<(Elem, Attr)> = els
                .iter()
                .flat_map(|e| {
                    attributes(text, e)
                        .into_iter()
                        .filter(|a| a.name == name)
                        .map(move |a| (e.clone(), a))
                })
                .collect();
            if all.len() < 2 {
                return None;
            }
            let (_, from) = rng.pick(&all).clone();
            let (_, to) = rng.pick(&all).clone();
            let v = value(text, &from).to_string();
            Some(set_value(text, &to, &v))
        }
        "cycle" => {
            // An extra edge from an edge's target back to its source.
            let edges: Vec<&Elem> = els
                .iter()
                .filter(|e| e.name.ends_with("Edge") && e.depth > 0)
                .collect();
            if edges.is_empty() {
                return None;
            }
            let e = *rng.pick(&edges);
            let attrs = attributes(text, e);
            let src = attrs.iter().find(|a| a.name == "source")?;
            let tgt = attrs.iter().find(|a| a.name == "target")?;
            let (s, t) = (value(text, src).to_string(), value(text, tgt).to_string());
            let mut copy = text[e.start..e.end].to_vec();
            let ce = elements(&copy);
            let ca = attributes(&copy, ce.first()?);
            // Replace target first (later in the text) to keep offsets.
            let mut ranges: Vec<(usize, usize, String)> = Vec::new();
            for a in &ca {
                if a.name == "source" {
                    ranges.push((a.value.0, a.value.1, t.clone()));
                } else if a.name == "target" {
                    ranges.push((a.value.0, a.value.1, s.clone()));
                } else if a.name.ends_with("_id") && rng.chance(0.5) {
                    ranges.push((a.value.0, a.value.1, format!("{}c", value(&copy, a))));
                }
            }
            ranges.sort_by_key(|r| std::cmp::Reverse(r.0));
            for (a, b, v) in ranges {
                copy = splice(&copy, (a, b), v.as_bytes());
            }
            Some(splice(text, (e.end, e.end), &copy))
        }
        "odd-value" => {
            let (_, a) = with_attr(text, &els, rng, |_, a| !a.name.starts_with("xmlns"))?;
            let v = if rng.chance(0.1) {
                "7".repeat(10_000)
            } else {
                rng.pick(ODD_VALUES).to_string()
            };
            Some(set_value(text, &a, &v))
        }
        "non-utf8" => {
            let seqs: &[&[u8]] = &[
                b"\xff",
                b"\xfe\xff",
                b"\xc0\x80",
                b"\xed\xa0\x80",
                b"\xe2\x82",
                b"\x80",
            ];
            let s = *rng.pick(seqs);
            let at = match with_attr(text, &els, rng, |_, _| true) {
                Some((_, a)) if rng.chance(0.7) => a.value.0,
                _ => rng.below(text.len().max(1)),
            };
            Some(splice(text, (at, at), s))
        }
        "doctype-external" => {
            let at = after_declaration(text);
            let root = els
                .first()
                .map(|e| e.name.clone())
                .unwrap_or_else(|| "r".into());
            let secret = ctx.secret.display();
            let decl = match rng.below(4) {
                0 => format!("\n<!DOCTYPE {root} [\n<!ENTITY % ext SYSTEM \"file://{secret}\">\n%ext;\n]>"),
                1 => format!("\n<!DOCTYPE {root} SYSTEM \"file://{secret}\">"),
                2 => format!("\n<!DOCTYPE {root} [\n<!ENTITY ext SYSTEM \"file://{secret}\">\n]>"),
                _ => format!("\n<!DOCTYPE {root} [\n<!ENTITY % ext SYSTEM \"http://127.0.0.1:9/x.dtd\">\n%ext;\n]>"),
            };
            let mut t = splice(text, (at, at), decl.as_bytes());
            if decl.contains("ENTITY ext") {
                // Reference the general entity in an attribute value.
                let e2 = elements(&t);
                if let Some((_, a)) = with_attr(&t, &e2, rng, |_, a| {
                    a.name == "annotation" || a.name == "value"
                }) {
                    t = set_value(&t, &a, "&ext;");
                }
            }
            Some(t)
        }
        "doctype-entity-bomb" => {
            let at = after_declaration(text);
            let root = els
                .first()
                .map(|e| e.name.clone())
                .unwrap_or_else(|| "r".into());
            let mut decl = format!("\n<!DOCTYPE {root} [\n<!ENTITY a0 \"lol\">\n");
            for k in 1..10 {
                decl.push_str(&format!(
                    "<!ENTITY a{k} \"{}\">\n",
                    format!("&a{};", k - 1).repeat(10)
                ));
            }
            decl.push_str("]>");
            let mut t = splice(text, (at, at), decl.as_bytes());
            let e2 = elements(&t);
            if let Some((_, a)) = with_attr(&t, &e2, rng, |e, a| {
                e.depth > 0 && !a.name.starts_with("xmlns")
            }) {
                t = set_value(&t, &a, "&a9;");
            }
            Some(t)
        }
        "control-character" => {
            let (_, a) = with_attr(text, &els, rng, |_, a| !a.name.starts_with("xmlns"))?;
            let c = *rng.pick(&[
                "\u{1}", "\u{0}", "\u{1f}", "\u{b}", "&#1;", "&#0;", "&#x1F;", "\u{fffe}",
                "&#xD800;",
            ]);
            Some(splice(text, (a.value.1, a.value.1), c.as_bytes()))
        }
        "xml-declaration" => {
            let decls = [
                "<?xml version=\"1.p\"?>",
                "<?xml version=\"1.1\"?>",
                "<?xml version=\"2.0\"?>",
                "<?xml version=\"1.0\" encoding=\"UTF-16\"?>",
                "<?xml version=\"1.0\" encoding=\"EBCDIC\"?>",
                "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>",
                "<?xml version=\"1.0\" standalone=\"maybe\"?>",
                "<?xml?>",
            ];
            let d = *rng.pick(&decls);
            let end = after_declaration(text);
            let t = splice(text, (0, end), d.as_bytes());
            if rng.chance(0.3) {
                // Really UTF-16, with a byte order mark.
                let s = String::from_utf8_lossy(&t);
                let mut out = vec![0xff, 0xfe];
                out.extend(s.encode_utf16().flat_map(|u| u.to_le_bytes()));
                return Some(out);
            }
            Some(t)
        }
        "deep-nesting" => {
            // Elements nested far deeper than any program needs.
            if non_root.is_empty() {
                return None;
            }
            let e = *rng.pick(&non_root);
            let depth = *rng.pick(&[100usize, 1000, 100_000]);
            let tag = rng
                .pick(&["xaif:Foo", "xaif:BasicBlock", "xaif:Scope", "x"])
                .to_string();
            let mut ins = Vec::new();
            for _ in 0..depth {
                ins.extend_from_slice(format!("<{tag}>").as_bytes());
            }
            for _ in 0..depth {
                ins.extend_from_slice(format!("</{tag}>").as_bytes());
            }
            Some(splice(text, (e.tag_end, e.tag_end), &ins))
        }
        "deep-expression" => deep_expression(text, &els, rng, ctx.max_repeat),
        "wide" => {
            if non_root.is_empty() {
                return None;
            }
            let e = *rng.pick(&non_root);
            let copy = &text[e.start..e.end];
            // At most WIDE_BYTES more: a wide document, not an exhausted
            // campaign.
            let n = (*rng.pick(&[1000usize, 10_000, 50_000]))
                .min(ctx.max_repeat)
                .min((WIDE_BYTES / copy.len().max(1)).max(1));
            let mut ins = Vec::with_capacity(copy.len() * n);
            for _ in 0..n {
                ins.extend_from_slice(copy);
            }
            Some(splice(text, (e.end, e.end), &ins))
        }
        "integer-limit" => {
            let (_, a) = with_attr(text, &els, rng, |e, a| {
                (e.name == "Constant" && a.name == "value")
                    || a.name == "lower"
                    || a.name == "upper"
                    || a.name == "position"
                    || a.name == "dimension"
                    || a.name == "nr_arguments"
            })?;
            let v = *rng.pick(INT_LIMITS);
            Some(set_value(text, &a, v))
        }
        "loop-bounds" => {
            // Integer constants inside a ForLoop's initialization or
            // condition, or its update.
            let loops: Vec<&Elem> = els.iter().filter(|e| e.name == "ForLoop").collect();
            if loops.is_empty() {
                return None;
            }
            let l = *rng.pick(&loops);
            let inside: Vec<Elem> = els
                .iter()
                .filter(|e| e.start > l.start && e.end <= l.end && e.name == "Constant")
                .cloned()
                .collect();
            let (_, a) = with_attr(text, &inside, rng, |_, a| a.name == "value")?;
            let v = *rng.pick(INT_LIMITS);
            Some(set_value(text, &a, v))
        }
        "recursion" => {
            // A call to the routine it is in.
            let calls: Vec<&Elem> = els.iter().filter(|e| e.name == "SubroutineCall").collect();
            let cfgs: Vec<&Elem> = els
                .iter()
                .filter(|e| e.name == "ControlFlowGraph")
                .collect();
            if calls.is_empty() || cfgs.is_empty() {
                return None;
            }
            let call = *rng.pick(&calls);
            let cfg = cfgs
                .iter()
                .find(|g| g.start < call.start && call.end <= g.end)
                .copied()
                .unwrap_or(*rng.pick(&cfgs));
            let ga = attributes(text, cfg);
            let sym = ga.iter().find(|a| a.name == "symbol_id")?;
            let scope = ga.iter().find(|a| a.name == "scope_id");
            let (sv, scv) = (
                value(text, sym).to_string(),
                scope.map(|s| value(text, s).to_string()),
            );
            let mut ca = attributes(text, call);
            ca.sort_by_key(|a| std::cmp::Reverse(a.value.0));
            let mut t = text.to_vec();
            for a in ca {
                if a.name == "symbol_id" {
                    t = set_value(&t, &a, &sv);
                } else if a.name == "scope_id" {
                    if let Some(s) = &scv {
                        t = set_value(&t, &a, s);
                    }
                }
            }
            Some(t)
        }
        "arity" => {
            // Drop or add an operand edge of an intrinsic, or rename it to
            // one of another arity.
            let intrinsics: Vec<&Elem> = els.iter().filter(|e| e.name == "Intrinsic").collect();
            if intrinsics.is_empty() {
                return None;
            }
            let i = *rng.pick(&intrinsics);
            let ia = attributes(text, i);
            if rng.chance(0.5) && !ctx.intrinsics.is_empty() {
                let name = ia.iter().find(|a| a.name == "name")?;
                let other = rng.pick(ctx.intrinsics).clone();
                return Some(set_value(text, name, &other));
            }
            let id = value(text, ia.iter().find(|a| a.name == "vertex_id")?).to_string();
            // The expression graph it is in.
            let graph = els
                .iter()
                .rfind(|g| g.start < i.start && i.end <= g.end && g.depth + 1 == i.depth)?;
            let edges: Vec<Elem> = els
                .iter()
                .filter(|e| {
                    e.name == "ExpressionEdge"
                        && e.start > graph.start
                        && e.end <= graph.end
                        && attributes(text, e)
                            .iter()
                            .any(|a| a.name == "target" && value(text, a) == id)
                })
                .cloned()
                .collect();
            if edges.is_empty() {
                return None;
            }
            let e = rng.pick(&edges).clone();
            if rng.chance(0.5) {
                Some(splice(text, (e.start, e.end), b""))
            } else {
                let mut copy = text[e.start..e.end].to_vec();
                let ce = elements(&copy);
                let mut ca = attributes(&copy, ce.first()?);
                ca.sort_by_key(|a| std::cmp::Reverse(a.value.0));
                for a in ca {
                    let v = match a.name.as_str() {
                        "position" => Some(rng.pick(&["3", "4", "9", "0"]).to_string()),
                        "edge_id" => Some(format!("{}x", value(&copy, &a))),
                        _ => None,
                    };
                    if let Some(v) = v {
                        copy = set_value(&copy, &a, &v);
                    }
                }
                Some(splice(text, (e.end, e.end), &copy))
            }
        }
        "unknown-intrinsic" => {
            let (_, a) = with_attr(text, &els, rng, |e, a| {
                e.name == "Intrinsic" && a.name == "name"
            })?;
            let v = *rng.pick(&["frobnicate", "", "SIN", "sin ", "sin\u{e9}"]);
            Some(set_value(text, &a, v))
        }
        "shape" => {
            let (e, a) = with_attr(text, &els, rng, |e, a| {
                (e.name == "Symbol" && (a.name == "shape" || a.name == "type" || a.name == "kind"))
                    || (e.name == "DimensionBounds")
            })?;
            let v = if e.name == "DimensionBounds" {
                rng.pick(INT_LIMITS).to_string()
            } else {
                rng.pick(&[
                    "scalar",
                    "vector",
                    "matrix",
                    "three_tensor",
                    "six_tensor",
                    "real",
                    "integer",
                    "bool",
                    "complex",
                    "string",
                    "void",
                    "variable",
                    "subroutine",
                    "bogus",
                ])
                .to_string()
            };
            Some(set_value(text, &a, &v))
        }
        _ => None,
    }
}

/// Replaces the expression of an assignment by a chain of `n` nested calls
/// of one-argument intrinsics around its first leaf: flat XML, deep
/// expression.
fn deep_expression(text: &[u8], els: &[Elem], rng: &mut Rng, max: usize) -> Option<Vec<u8>> {
    let assigns: Vec<&Elem> = els.iter().filter(|e| e.name == "Assignment").collect();
    if assigns.is_empty() {
        return None;
    }
    let asg = *rng.pick(&assigns);
    let rhs = els
        .iter()
        .find(|e| e.name == "AssignmentRHS" && e.start > asg.start && e.end <= asg.end)?;
    let n = (*rng.pick(&[1000usize, 10_000, 30_000])).min(max);
    let op = *rng.pick(&[
        "sin_scal",
        "cos_scal",
        "exp_scal",
        "minus_scal",
        "sqrt_scal",
    ]);
    // Keep the first leaf (a VariableReference or Constant) as vertex 1.
    let leaf = els.iter().find(|e| {
        e.start > rhs.start
            && e.end <= rhs.end
            && (e.name == "Constant" || e.name == "VariableReference")
    })?;
    let mut leaf_text = text[leaf.start..leaf.end].to_vec();
    let le = elements(&leaf_text);
    let la = attributes(&leaf_text, le.first()?);
    let id = la.iter().find(|a| a.name == "vertex_id")?;
    leaf_text = splice(&leaf_text, id.value, b"1");
    let mut body = Vec::with_capacity(n * 160);
    body.extend_from_slice(&leaf_text);
    for k in 2..=n + 1 {
        body.extend_from_slice(
            format!("<xaif:Intrinsic vertex_id=\"{k}\" name=\"{op}\"/>").as_bytes(),
        );
    }
    for k in 2..=n + 1 {
        body.extend_from_slice(
            format!(
                "<xaif:ExpressionEdge edge_id=\"{k}\" source=\"{}\" target=\"{k}\" position=\"1\"/>",
                k - 1
            )
            .as_bytes(),
        );
    }
    Some(splice(
        text,
        (rhs.tag_end, rhs.end - closing_len(text, rhs)),
        &body,
    ))
}

/// The length of an element's end tag (`</...>`), 0 for an empty element.
fn closing_len(text: &[u8], e: &Elem) -> usize {
    if e.end == e.tag_end {
        return 0;
    }
    let slice = &text[e.start..e.end];
    slice
        .iter()
        .rposition(|&b| b == b'<')
        .map(|p| slice.len() - p)
        .unwrap_or(0)
}

/// Mutates `text` with `count` random mutations; returns the kinds
/// applied.
pub fn mutate(
    text: &[u8],
    rng: &mut Rng,
    ctx: &Context<'_>,
    count: usize,
) -> (Vec<u8>, Vec<&'static str>) {
    let mut t = text.to_vec();
    let mut kinds = Vec::new();
    let mut tries = 0;
    while kinds.len() < count && tries < 20 && t.len() <= MUTANT_BYTES {
        tries += 1;
        let kind = *rng.pick(KINDS);
        // Whole-document rewrites combine badly with later mutations.
        if !kinds.is_empty() && matches!(kind, "truncate" | "xml-declaration") {
            continue;
        }
        if let Some(m) = apply(kind, &t, rng, ctx) {
            t = m;
            kinds.push(kind);
        }
    }
    (t, kinds)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &[u8] = br#"<?xml version="1.0"?>
<a:R xmlns:a="u"><a:S x="1" y='2'/><!-- <a:T/> --><a:U z="&gt;"><a:V/></a:U></a:R>"#;

    #[test]
    fn scanner_finds_elements_and_attributes() {
        let els = elements(DOC);
        let names: Vec<&str> = els.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["R", "S", "U", "V"]);
        assert_eq!(els[0].end, DOC.len());
        assert_eq!(
            &DOC[els[2].start..els[2].end],
            br#"<a:U z="&gt;"><a:V/></a:U>"#
        );
        let attrs = attributes(DOC, &els[1]);
        assert_eq!(attrs.len(), 2);
        assert_eq!(&DOC[attrs[1].value.0..attrs[1].value.1], b"2");
        assert_eq!(els[3].depth, 2);
    }

    #[test]
    fn mutations_are_reproducible() {
        let secret = std::path::Path::new("/nonexistent");
        let ctx = Context {
            secret,
            intrinsics: &[],
            max_repeat: 1000,
        };
        for kind in KINDS {
            let a = apply(kind, DOC, &mut Rng::new(7), &ctx);
            let b = apply(kind, DOC, &mut Rng::new(7), &ctx);
            assert_eq!(a, b, "{kind}");
        }
        let (m, kinds) = mutate(DOC, &mut Rng::for_item(1, 2), &ctx, 2);
        assert!(!kinds.is_empty());
        assert_ne!(m, DOC);
    }
}
