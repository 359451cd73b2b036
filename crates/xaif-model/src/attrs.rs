//! Attributes kept verbatim, in document order.
//!
//! XAIF carries meaning in attribute spellings that a typed field would
//! normalise away (`has_condition_value="true"` versus `"1"`, constants such as
//! `1.00000000000000000000e+00`) and front ends add attributes the schema does
//! not know (`lineNumber`, `feType`, annotations). Every element therefore
//! keeps its attributes as an ordered list of `(name, text)` pairs; typed
//! accessors on the model parse them on demand, and the validation gate checks
//! that the ones the engine interprets parse.

/// Where an element starts in its source file, as a byte offset.
///
/// Elements created by a transformation carry [`Span::NONE`]. The
/// [`SourceMap`](crate::SourceMap) turns a span into a line and column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span(pub u32);

impl Span {
    /// The span of an element that did not come from a file.
    pub const NONE: Span = Span(u32::MAX);

    /// Whether this span points into a file.
    pub fn is_known(self) -> bool {
        self != Span::NONE
    }
}

/// One attribute: its qualified name (as written, e.g. `xsi:schemaLocation`)
/// and its unescaped value, borrowed from the [`Attrs`] that hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr<'a> {
    /// The attribute name, including any namespace prefix.
    pub key: &'a str,
    /// The unescaped attribute value.
    pub value: &'a str,
}

/// Attribute names XAIF uses, stored as one byte each. The order is part of
/// no format: only this module sees the codes.
const KNOWN: [&str; 62] = [
    "vertex_id",
    "annotation",
    "symbol_id",
    "scope_id",
    "active",
    "deriv",
    "constant",
    "target",
    "source",
    "edge_id",
    "position",
    "type",
    "alias",
    "du_ud",
    "statement_id",
    "feType",
    "kind",
    "shape",
    "has_condition_value",
    "subroutine_name",
    "temp",
    "value",
    "name",
    "key",
    "idRef",
    "placeholder",
    "to_virtual_address",
    "from_virtual_address",
    "partial",
    "lineNumber",
    "intent",
    "do_chain",
    "controlflowgraph_scope_id",
    "upper",
    "lower",
    "condition_value",
    "formalArgCount",
    "reversal",
    "template_name",
    "xsi:schemaLocation",
    "xmlns:xsi",
    "xmlns:xaif",
    "program_name",
    "prefix",
    "rType",
    "version",
    "encoding",
    "partial_id",
    "nr_arguments",
    "builtin_name",
    "partial_type",
    "rShape",
    "argument",
    "structured",
    "nonSmooth",
    "shapeChange",
    "live",
    "indep",
    "dep",
    "return_type",
    "xmlns:xaifii",
    "xmlns:xaifnii",
];

/// The code of a name that is not in [`KNOWN`]: its length and bytes
/// follow.
const OTHER: u8 = u8::MAX;

/// Where a name's code sits in [`KNOWN_TABLE`]: a hash of its length and
/// three of its bytes, without collisions among [`KNOWN`] (checked when the
/// table is built at compile time).
const fn slot(key: &[u8]) -> usize {
    let n = key.len();
    if n == 0 {
        return 0;
    }
    (n * 40 + key[0] as usize * 39 + key[n - 1] as usize + key[n / 2] as usize) % 256
}

/// [`KNOWN`]'s codes by [`slot`], [`OTHER`] where no known name hashes.
const KNOWN_TABLE: [u8; 256] = {
    let mut table = [OTHER; 256];
    let mut i = 0;
    while i < KNOWN.len() {
        let s = slot(KNOWN[i].as_bytes());
        assert!(
            table[s] == OTHER,
            "two known attribute names share a slot: change `slot`"
        );
        table[s] = i as u8;
        i += 1;
    }
    table
};

/// The one-byte code of a known attribute name: one table look-up and one
/// comparison (names are looked up millions of times on a large input).
fn known(key: &str) -> Option<u8> {
    let code = KNOWN_TABLE[slot(key.as_bytes())];
    (code != OTHER && KNOWN[usize::from(code)] == key).then_some(code)
}

/// An element's encoded attributes. Up to 24 bytes are held inline (a
/// reference's `vertex_id`, `scope_id` and `symbol_id` take about 20), so
/// making or copying most elements allocates nothing for them; longer
/// ones go to the heap as a `Vec` would.
type Buf = smallvec::SmallVec<[u8; 24]>;

/// The attributes of one element, in document order, plus where it started.
///
/// A model holds millions of them, so they are stored as one small byte
/// buffer per element rather than a list of string pairs: each attribute
/// is its name (one byte for the names XAIF uses, the text otherwise) and
/// its value (a length and the text). Reading one decodes the buffer; the
/// accessors below are the only way in.
///
/// Equality ignores the span: two models are equal when their content is.
#[derive(Debug, Default)]
pub struct Attrs {
    data: Buf,
    /// Where the element that owns these attributes starts.
    pub span: Span,
}

impl Clone for Attrs {
    fn clone(&self) -> Self {
        // `SmallVec`'s own `clone` collects item by item; bytes are copied
        // whole.
        Attrs {
            data: Buf::from_slice(&self.data),
            span: self.span,
        }
    }
}

impl PartialEq for Attrs {
    fn eq(&self, other: &Self) -> bool {
        // The encoding is canonical: the same pairs give the same bytes.
        self.data == other.data
    }
}
impl Eq for Attrs {}

/// Appends a length (LEB128).
fn put_len(data: &mut Buf, mut n: usize) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            data.push(byte);
            return;
        }
        data.push(byte | 0x80);
    }
}

/// Reads a length written by [`put_len`] at `*at`.
fn get_len(data: &[u8], at: &mut usize) -> usize {
    let (mut n, mut shift) = (0usize, 0);
    loop {
        let byte = data[*at];
        *at += 1;
        n |= usize::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return n;
        }
        shift += 7;
    }
}

/// The text of an encoded name or value.
///
/// Every byte run this is called on was copied from a `&str` by
/// [`Attrs::push`] (the only writer of the buffer besides splicing or
/// removing whole entries, which keeps the runs intact), so it is UTF-8
/// by construction; checking it again on every read cost a tenth of a
/// transformation's time in attribute look-ups. Debug builds still check.
fn utf8(bytes: &[u8]) -> &str {
    debug_assert!(std::str::from_utf8(bytes).is_ok());
    // SAFETY: see above; the buffer is private to this module and only
    // ever holds whole entries made from `&str`s.
    unsafe { std::str::from_utf8_unchecked(bytes) }
}

/// Iterates over encoded attributes.
#[derive(Clone)]
pub struct AttrIter<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> AttrIter<'a> {
    /// The next attribute and where the one after it starts.
    fn decode(&self) -> Option<(Attr<'a>, usize, usize)> {
        let data = self.data;
        let start = self.at;
        if start >= data.len() {
            return None;
        }
        let mut at = start + 1;
        let key = match data[start] {
            OTHER => {
                let n = get_len(data, &mut at);
                let k = &data[at..at + n];
                at += n;
                utf8(k)
            }
            code => KNOWN[usize::from(code)],
        };
        let n = get_len(data, &mut at);
        let value = utf8(&data[at..at + n]);
        at += n;
        Some((Attr { key, value }, start, at))
    }
}

impl<'a> Iterator for AttrIter<'a> {
    type Item = Attr<'a>;

    fn next(&mut self) -> Option<Attr<'a>> {
        let (a, _, next) = self.decode()?;
        self.at = next;
        Some(a)
    }
}

impl Attrs {
    /// No attributes, no source position: for elements built by a pass.
    pub fn new() -> Self {
        Attrs {
            data: Buf::new(),
            span: Span::NONE,
        }
    }

    /// No attributes yet, starting at `span`.
    pub fn at(span: Span) -> Self {
        Attrs {
            data: Buf::new(),
            span,
        }
    }

    /// Builds attributes from `(name, value)` pairs, in that order.
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let mut attrs = Attrs::new();
        for (k, v) in pairs {
            attrs.push(k.as_ref(), v.as_ref());
        }
        attrs
    }

    /// Appends an attribute without checking for an existing one of that name
    /// (the reader uses this; XML forbids duplicates, which quick-xml reports).
    pub fn push(&mut self, key: &str, value: &str) {
        self.push_coded(known(key), key, value);
    }

    /// [`Attrs::push`] with the name's code already looked up.
    fn push_coded(&mut self, code: Option<u8>, key: &str, value: &str) {
        let data = &mut self.data;
        match code {
            Some(code) => data.push(code),
            None => {
                data.push(OTHER);
                put_len(data, key.len());
                data.extend_from_slice(key.as_bytes());
            }
        }
        put_len(data, value.len());
        data.extend_from_slice(value.as_bytes());
    }

    /// Removes every attribute, keeping the buffer's room (the reader
    /// encodes each element's attributes in one reused buffer).
    pub(crate) fn clear(&mut self) {
        self.data.clear();
    }

    /// A copy at `span` with exactly the room the attributes need.
    pub(crate) fn copy_exact(&self, span: Span) -> Attrs {
        Attrs {
            data: Buf::from_slice(self.data.as_slice()),
            span,
        }
    }

    /// The value of attribute `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.find(key).map(|(a, _, _)| a.value)
    }

    /// Attribute `key` with where it starts and ends in the buffer. Only
    /// names are compared on the way; values are skipped by their length.
    fn find(&self, key: &str) -> Option<(Attr<'_>, usize, usize)> {
        self.find_coded(known(key), key)
    }

    /// [`Attrs::find`] with the name's code already looked up.
    fn find_coded(&self, code: Option<u8>, key: &str) -> Option<(Attr<'_>, usize, usize)> {
        let data = self.data.as_slice();
        let mut at = 0;
        while at < data.len() {
            let start = at;
            at += 1;
            let hit = match data[start] {
                OTHER => {
                    let n = get_len(data, &mut at);
                    let hit = code.is_none() && &data[at..at + n] == key.as_bytes();
                    at += n;
                    hit
                }
                c => Some(c) == code,
            };
            let n = get_len(data, &mut at);
            at += n;
            if hit {
                let it = AttrIter { data, at: start };
                return it.decode();
            }
        }
        None
    }

    /// Whether attribute `key` is present.
    pub fn has(&self, key: &str) -> bool {
        self.find(key).is_some()
    }

    /// Sets `key` to `value`: in place when present (keeping the order),
    /// appended otherwise.
    pub fn set(&mut self, key: &str, value: impl AsRef<str>) {
        let value = value.as_ref();
        let code = known(key);
        match self
            .find_coded(code, key)
            .map(|(_, start, end)| (start, end))
        {
            Some((start, end)) => {
                let mut entry = Attrs::new();
                entry.push_coded(code, key, value);
                self.data.drain(start..end);
                self.data.insert_from_slice(start, &entry.data);
            }
            None => self.push_coded(code, key, value),
        }
    }

    /// Builder form of [`Attrs::set`].
    pub fn with(mut self, key: &str, value: impl AsRef<str>) -> Self {
        self.set(key, value);
        self
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let (a, start, end) = self.find(key)?;
        let value = a.value.to_string();
        self.data.drain(start..end);
        Some(value)
    }

    /// Removes `key` without copying its value out; whether it was there.
    /// (The short output form drops attributes from every reference.)
    pub fn discard(&mut self, key: &str) -> bool {
        match self.find(key) {
            Some((_, start, end)) => {
                self.data.drain(start..end);
                true
            }
            None => false,
        }
    }

    /// All attributes in order.
    pub fn iter(&self) -> AttrIter<'_> {
        AttrIter {
            data: &self.data,
            at: 0,
        }
    }

    /// Each attribute's name and value as bytes, without the UTF-8 checks
    /// of [`Attrs::iter`] (for the writer, which copies them as they are).
    pub(crate) fn for_each_raw(&self, mut f: impl FnMut(&[u8], &[u8])) {
        let data = self.data.as_slice();
        let mut at = 0;
        while at < data.len() {
            let code = data[at];
            at += 1;
            let key = match code {
                OTHER => {
                    let n = get_len(data, &mut at);
                    at += n;
                    &data[at - n..at]
                }
                c => KNOWN[usize::from(c)].as_bytes(),
            };
            let n = get_len(data, &mut at);
            at += n;
            f(key, &data[at - n..at]);
        }
    }

    /// Number of attributes.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether there are no attributes.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// An XSD boolean attribute (`true`/`false`/`1`/`0`), or `default` when
    /// absent or unparsable (the gate reports unparsable values).
    pub fn flag(&self, key: &str, default: bool) -> bool {
        self.get(key).and_then(parse_bool).unwrap_or(default)
    }

    /// An integer attribute, or `None` when absent or unparsable.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.trim().parse().ok())
    }
}

/// Parses an XSD boolean.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim() {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_name_has_its_code_and_no_other_name_has_one() {
        for (i, k) in KNOWN.iter().enumerate() {
            assert_eq!(known(k), Some(i as u8), "{k}");
            // The same length and the same hashed bytes, another name.
            let mut other = k.as_bytes().to_vec();
            let last = other.len() - 1;
            if last > 0 && last != other.len() / 2 {
                other[last - 1] ^= 0x20;
                let other = String::from_utf8(other).unwrap();
                if !KNOWN.contains(&other.as_str()) {
                    assert_eq!(known(&other), None, "{other}");
                }
            }
        }
        for k in [
            "",
            "x",
            "vertex_iD",
            "vertex_id ",
            "xsi:schemaLocatioN",
            "é",
        ] {
            assert_eq!(known(k), None, "{k}");
        }
        // Unknown names round-trip through the encoding.
        let a = Attrs::from_pairs([("vertex_iD", "1"), ("vertex_id", "2")]);
        assert_eq!(a.get("vertex_iD"), Some("1"));
        assert_eq!(a.get("vertex_id"), Some("2"));
    }

    #[test]
    fn discard_removes_one_attribute_and_keeps_the_others_in_order() {
        let mut a = Attrs::from_pairs([("vertex_id", "1"), ("alias", "3"), ("my_key", "x")]);
        assert!(a.discard("alias"));
        assert!(!a.discard("alias"));
        assert!(a.discard("my_key"));
        assert!(!a.discard("du_ud"));
        assert_eq!(a, Attrs::from_pairs([("vertex_id", "1")]));
    }

    #[test]
    fn set_keeps_position_and_appends_new_keys() {
        let mut a = Attrs::from_pairs([("a", "1"), ("b", "2")]);
        a.set("a", "3");
        a.set("c", "4");
        let keys: Vec<_> = a.iter().map(|x| x.key).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(a.get("a"), Some("3"));
    }

    #[test]
    fn flags_accept_both_spellings() {
        let a = Attrs::from_pairs([("x", "true"), ("y", "0"), ("z", "maybe")]);
        assert!(a.flag("x", false));
        assert!(!a.flag("y", true));
        assert!(a.flag("z", true));
        assert!(!a.flag("missing", false));
    }

    #[test]
    fn names_outside_the_table_long_values_and_removal_round_trip() {
        let long = "v".repeat(300);
        let mut a = Attrs::from_pairs([
            ("vertex_id", "1"),
            ("my:odd", long.as_str()),
            ("", ""),
            ("name", "é\u{1F600}"),
        ]);
        let pairs: Vec<_> = a.iter().map(|x| (x.key, x.value)).collect();
        assert_eq!(
            pairs,
            [
                ("vertex_id", "1"),
                ("my:odd", long.as_str()),
                ("", ""),
                ("name", "é\u{1F600}")
            ]
        );
        assert_eq!(a.len(), 4);
        a.set("my:odd", "short");
        assert_eq!(a.get("my:odd"), Some("short"));
        assert_eq!(a.remove("vertex_id").as_deref(), Some("1"));
        assert_eq!(a.iter().next().map(|x| x.key), Some("my:odd"));
        assert_eq!(a.remove("missing"), None);
        assert_eq!(
            a,
            Attrs::from_pairs([("my:odd", "short"), ("", ""), ("name", "é\u{1F600}")])
        );
    }

    #[test]
    fn equality_ignores_span() {
        let mut a = Attrs::from_pairs([("k", "v")]);
        let b = a.clone();
        a.span = Span(7);
        assert_eq!(a, b);
    }
}
