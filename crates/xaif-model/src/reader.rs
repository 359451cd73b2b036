//! Reading XAIF text into the model.
//!
//! A single streaming pass over the text with quick-xml's namespace-aware
//! reader: elements are identified by namespace and local name, every
//! attribute is kept verbatim, and the byte offset of each element is kept as
//! its [`Span`]. Reading checks only what the shape of the model needs
//! (known elements in known places, well-formed XML); everything about ids and
//! references is the validation gate's job, so that files with semantic
//! errors can still be read, shown and written back.

use std::borrow::Cow;
use std::path::Path;

use compact_str::CompactString;
use quick_xml::events::{BytesDecl, BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

use crate::attrs::{Attrs, Span};
use crate::catalogue::{
    InlinableCatalogue, InlinableIntrinsic, NonInlinable, NonInlinableCatalogue, INLINABLE_NS,
    NONINLINABLE_NS, XAIF_NS,
};
use crate::error::{ErrorKind, ModelError, ModelErrors};
use crate::model::*;
use crate::source::SourceMap;

/// Any XAIF document.
#[derive(Clone, Debug, PartialEq)]
pub enum Document {
    /// A program (`xaif:CallGraph`).
    Program(Box<Program>),
    /// An inlinable intrinsics catalogue.
    Inlinable(InlinableCatalogue),
    /// A non-inlinable intrinsics catalogue.
    NonInlinable(NonInlinableCatalogue),
}

impl Document {
    /// The root element's local name.
    pub fn root_name(&self) -> &'static str {
        match self {
            Document::Program(_) => "CallGraph",
            Document::Inlinable(_) => "InlinableIntrinsicDefinitions",
            Document::NonInlinable(_) => "NonInlinableIntrinsicDefinitions",
        }
    }
}

/// A document together with the source map of the text it came from.
#[derive(Clone, Debug)]
pub struct Parsed {
    /// The document.
    pub document: Document,
    /// Positions of its elements.
    pub source: SourceMap,
}

/// Reads a document from a file.
pub fn read_file(path: &Path) -> Result<Parsed, ModelErrors> {
    let name = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => read_bytes(&bytes, Some(&name)),
        Err(e) => Err(SourceMap::new(Some(&name), b"")
            .error(Span::NONE, "", ErrorKind::Io(e.to_string()))
            .into()),
    }
}

/// Reads a document from bytes (UTF-8; UTF-16 with a byte order mark; or
/// ISO-8859-1 when the XML declaration says so). `file` names the input in
/// error messages.
///
/// What XML 1.0 forbids is an error here, never something passed on: a
/// character outside XML 1.0's `Char` production (raw or as a character
/// reference), a byte sequence that is not UTF-8, an XML declaration with a
/// version other than `1.x`, and any `DOCTYPE` (XAIF has no DTD, so no
/// entity is ever declared or resolved).
pub fn read_bytes(bytes: &[u8], file: Option<&str>) -> Result<Parsed, ModelErrors> {
    let text = decode(bytes, file)?;
    let source = SourceMap::new(file, &text);
    check_characters(&text, &source)?;
    let mut parser = Parser::new(&text, &source);
    let document = parser.document().map_err(ModelErrors::from)?;
    Ok(Parsed { document, source })
}

/// The source map [`read_bytes`] builds for `bytes` (after decoding them),
/// for locating a span on an error path without keeping the map of every
/// input while it is transformed.
pub fn source_map(bytes: &[u8], file: Option<&str>) -> SourceMap {
    match decode(bytes, file) {
        Ok(text) => SourceMap::new(file, &text),
        Err(_) => SourceMap::new(file, bytes),
    }
}

/// The input as UTF-8 bytes: UTF-8 and ASCII as they are, UTF-16 (with a
/// byte order mark, as XML requires) and ISO-8859-1 transcoded. Any other
/// declared encoding is an error naming it.
fn decode<'b>(bytes: &'b [u8], file: Option<&str>) -> Result<Cow<'b, [u8]>, ModelErrors> {
    let unsupported = |enc: String| -> ModelErrors {
        SourceMap::new(file, bytes)
            .error(Span(0), "", ErrorKind::Encoding(enc))
            .into()
    };
    let mismatch = |declared: String, found: &'static str| -> ModelErrors {
        SourceMap::new(file, bytes)
            .error(Span(0), "", ErrorKind::EncodingMismatch { declared, found })
            .into()
    };
    if let Some((big_endian, bom)) = utf16_order(bytes) {
        let units = bytes[bom..].chunks(2).map(|pair| match pair {
            [a, b] if big_endian => u16::from_be_bytes([*a, *b]),
            [a, b] => u16::from_le_bytes([*a, *b]),
            // An odd trailing byte cannot be UTF-16.
            _ => 0xDC00,
        });
        let mut out = String::with_capacity(bytes.len() / 2);
        for (i, c) in char::decode_utf16(units).enumerate() {
            match c {
                Ok(c) => out.push(c),
                Err(_) => {
                    // Locate the bad unit in the text decoded so far.
                    let source = SourceMap::new(file, out.as_bytes());
                    let at = u32::try_from(out.len()).unwrap_or(u32::MAX);
                    return Err(source
                        .error(
                            Span(at),
                            "",
                            ErrorKind::Xml(format!(
                                "invalid UTF-16 at byte {} (an unpaired surrogate or a truncated code unit)",
                                bom + 2 * i
                            )),
                        )
                        .into());
                }
            }
        }
        return match declared_encoding(out.as_bytes()) {
            None => Ok(Cow::Owned(out.into_bytes())),
            Some(enc) if enc.to_ascii_lowercase().starts_with("utf-16") => {
                Ok(Cow::Owned(out.into_bytes()))
            }
            Some(enc) => Err(mismatch(enc, "UTF-16")),
        };
    }
    let bytes = bytes
        .strip_prefix(b"\xEF\xBB\xBF".as_slice())
        .unwrap_or(bytes);
    match declared_encoding(bytes) {
        None => Ok(Cow::Borrowed(bytes)),
        Some(enc) => {
            let lower = enc.to_ascii_lowercase();
            match lower.as_str() {
                "utf-8" | "utf8" | "us-ascii" | "ascii" => Ok(Cow::Borrowed(bytes)),
                "latin1" | "iso-8859-1" | "iso8859-1" | "latin-1" => {
                    if bytes.is_ascii() {
                        Ok(Cow::Borrowed(bytes))
                    } else {
                        // Every Latin-1 byte is the code point of the same
                        // value.
                        Ok(Cow::Owned(
                            bytes
                                .iter()
                                .map(|&b| b as char)
                                .collect::<String>()
                                .into_bytes(),
                        ))
                    }
                }
                l if l.starts_with("utf-16") => Err(mismatch(enc, "not UTF-16")),
                _ => Err(unsupported(enc)),
            }
        }
    }
}

/// `Some((big_endian, length of the byte order mark))` when the text is
/// UTF-16: it starts with a byte order mark, or (without one, as some tools
/// write it) with `<` as a 16-bit unit followed by another ASCII unit.
fn utf16_order(bytes: &[u8]) -> Option<(bool, usize)> {
    match bytes {
        [0xFE, 0xFF, ..] => Some((true, 2)),
        [0xFF, 0xFE, ..] => Some((false, 2)),
        [0, b'<', 0, c, ..] if c.is_ascii() && *c != 0 => Some((true, 0)),
        [b'<', 0, c, 0, ..] if c.is_ascii() && *c != 0 => Some((false, 0)),
        _ => None,
    }
}

/// Whether `c` is a character XML 1.0 allows in a document (its `Char`
/// production).
pub fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// Whether `name` matches XML 1.0's `Name` production (namespace prefixes
/// included), so that a stored attribute name can be written back.
fn is_xml_name(name: &str) -> bool {
    fn start(c: char) -> bool {
        matches!(c, ':' | 'A'..='Z' | '_' | 'a'..='z' | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}'
            | '\u{F8}'..='\u{2FF}' | '\u{370}'..='\u{37D}' | '\u{37F}'..='\u{1FFF}'
            | '\u{200C}'..='\u{200D}' | '\u{2070}'..='\u{218F}' | '\u{2C00}'..='\u{2FEF}'
            | '\u{3001}'..='\u{D7FF}' | '\u{F900}'..='\u{FDCF}' | '\u{FDF0}'..='\u{FFFD}'
            | '\u{10000}'..='\u{EFFFF}')
    }
    // Attribute and element names are ASCII in practice: a byte check.
    if name.is_ascii() {
        let ascii_start = |b: u8| b == b':' || b == b'_' || b.is_ascii_alphabetic();
        let bytes = name.as_bytes();
        return bytes.first().is_some_and(|&b| ascii_start(b))
            && bytes
                .iter()
                .all(|&b| ascii_start(b) || b == b'-' || b == b'.' || b.is_ascii_digit());
    }
    let mut chars = name.chars();
    chars.next().is_some_and(start)
        && chars.all(|c| {
            start(c)
                || matches!(c, '-' | '.' | '0'..='9' | '\u{B7}' | '\u{300}'..='\u{36F}' | '\u{203F}'..='\u{2040}')
        })
}

/// Rejects text that is not UTF-8 or holds a character XML 1.0 forbids
/// (control characters, NUL, U+FFFE, U+FFFF), with its position.
fn check_characters(text: &[u8], source: &SourceMap) -> Result<(), ModelErrors> {
    let at = |i: usize| Span(u32::try_from(i).unwrap_or(u32::MAX));
    let valid = match std::str::from_utf8(text) {
        Ok(s) => s,
        Err(e) => {
            let i = e.valid_up_to();
            let end = e.error_len().map_or(text.len(), |n| i + n);
            return Err(source
                .error(
                    at(i),
                    "",
                    ErrorKind::Xml(format!(
                        "the bytes {:02X?} are not UTF-8 (declare the encoding if the file is ISO-8859-1)",
                        &text[i..end.min(i + 4)]
                    )),
                )
                .into());
        }
    };
    // Only bytes below 0x20 and the lead byte 0xEF (U+FFFE, U+FFFF) can
    // start a forbidden character in valid UTF-8.
    // Tabs and line ends are the usual bytes below 0x20 and are allowed.
    let suspect = |b: u8| (b < 0x20 && b != b'\n' && b != b'\t' && b != b'\r') || b == 0xEF;
    // Blocks without a suspect byte are passed over whole (a fold without
    // an early exit, which the compiler turns into vector instructions).
    const BLOCK: usize = 64;
    let bad = text
        .chunks(BLOCK)
        .enumerate()
        .filter(|(_, block)| block.iter().fold(false, |any, &b| any | suspect(b)))
        .flat_map(|(k, block)| {
            block
                .iter()
                .enumerate()
                .filter(|(_, &b)| suspect(b))
                .map(move |(i, _)| k * BLOCK + i)
        })
        .find_map(|i| {
            let c = valid[i..].chars().next()?;
            (!is_xml_char(c)).then_some((i, c))
        });
    match bad {
        None => Ok(()),
        Some((i, c)) => Err(source
            .error(at(i), "", ErrorKind::ForbiddenCharacter(c as u32))
            .into()),
    }
}

/// Reads a document from a string.
pub fn read_str(text: &str, file: Option<&str>) -> Result<Parsed, ModelErrors> {
    read_bytes(text.as_bytes(), file)
}

/// Reads a program (a `CallGraph` document) from a file.
pub fn read_program_file(path: &Path) -> Result<(Program, SourceMap), ModelErrors> {
    let parsed = read_file(path)?;
    into_program(parsed)
}

/// Reads a program (a `CallGraph` document) from a string.
pub fn read_program_str(
    text: &str,
    file: Option<&str>,
) -> Result<(Program, SourceMap), ModelErrors> {
    into_program(read_str(text, file)?)
}

fn into_program(parsed: Parsed) -> Result<(Program, SourceMap), ModelErrors> {
    match parsed.document {
        Document::Program(p) => Ok((*p, parsed.source)),
        other => Err(parsed
            .source
            .error(
                Span(0),
                other.root_name(),
                ErrorKind::UnknownRoot(format!("{} (a program was expected)", other.root_name())),
            )
            .into()),
    }
}

fn declared_encoding(bytes: &[u8]) -> Option<String> {
    let head = &bytes[..bytes.len().min(200)];
    let head = std::str::from_utf8(head).ok().or_else(|| {
        let end = head.iter().position(|&b| b >= 0x80).unwrap_or(head.len());
        std::str::from_utf8(&head[..end]).ok()
    })?;
    let decl_end = head.find("?>")?;
    let decl = &head[..decl_end];
    if !decl.trim_start().starts_with("<?xml") {
        return None;
    }
    let at = decl.find("encoding")?;
    let rest = decl[at + "encoding".len()..]
        .trim_start()
        .strip_prefix('=')?;
    let rest = rest.trim_start();
    let quote = rest.chars().next()?;
    // The quote may be any character in a malformed declaration; skip it by
    // its UTF-8 length, not one byte.
    let rest = &rest[quote.len_utf8()..];
    let end = rest.find(quote)?;
    Some(rest[..end].to_string())
}

/// Which namespace an element is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ns {
    Xaif,
    Inlinable,
    NonInlinable,
    Other,
}

/// A start tag with its resolved name and attributes.
struct Tag {
    ns: Ns,
    local: CompactString,
    qname: CompactString,
    attrs: Attrs,
    empty: bool,
}

impl Tag {
    /// The local name when the element is in the XAIF namespace, or "" (which
    /// matches no known element).
    fn x(&self) -> &str {
        if self.ns == Ns::Xaif {
            &self.local
        } else {
            ""
        }
    }

    /// The local name when the element is in the inlinable catalogue
    /// namespace.
    fn ii(&self) -> &str {
        if self.ns == Ns::Inlinable {
            &self.local
        } else {
            ""
        }
    }

    fn nii(&self) -> &str {
        if self.ns == Ns::NonInlinable {
            &self.local
        } else {
            ""
        }
    }
}

enum Ev {
    Start(Tag),
    End,
    Eof,
}

/// Element names of older XAIF versions that current files do not use.
const OLD_FORMAT_ELEMENTS: &[&str] = &["AliasSetList", "DUUDSetList", "DUUDSet", "Nop"];

/// How deeply elements may nest. The reader, the gate and the writer
/// recurse over the element tree, so unbounded nesting would overflow the
/// stack (an abort, not an error) on crafted input; the deepest file of the
/// reference material nests 54 levels, and at this limit every pass stays
/// far inside a 2 MiB thread stack.
pub const MAX_DEPTH: usize = 256;

struct Parser<'a> {
    reader: NsReader<&'a [u8]>,
    source: &'a SourceMap,
    /// Open elements, checked against [`MAX_DEPTH`].
    depth: usize,
    /// Where an element's attributes are encoded before they are copied
    /// out with exactly the room they need (one allocation per element).
    scratch: Attrs,
}

type R<T> = Result<T, ModelError>;

impl<'a> Parser<'a> {
    fn new(text: &'a [u8], source: &'a SourceMap) -> Self {
        let mut reader = NsReader::from_reader(text);
        let config = reader.config_mut();
        config.trim_text(false);
        config.expand_empty_elements = false;
        config.check_end_names = true;
        Parser {
            reader,
            source,
            depth: 0,
            scratch: Attrs::new(),
        }
    }

    fn err(&self, span: Span, element: &str, kind: ErrorKind) -> ModelError {
        self.source.error(span, element, kind)
    }

    fn offset(&self) -> u32 {
        u32::try_from(self.reader.buffer_position()).unwrap_or(u32::MAX)
    }

    fn next(&mut self) -> R<Ev> {
        loop {
            let before = self.offset();
            let (resolved, event) = match self.reader.read_resolved_event() {
                Ok(x) => x,
                Err(e) => {
                    let at = u32::try_from(self.reader.error_position()).unwrap_or(before);
                    return Err(self.err(Span(at), "", ErrorKind::Xml(e.to_string())));
                }
            };
            let ns = match resolved {
                ResolveResult::Bound(ns) => match ns.as_ref() {
                    b if b == XAIF_NS.as_bytes() => Ns::Xaif,
                    b if b == INLINABLE_NS.as_bytes() => Ns::Inlinable,
                    b if b == NONINLINABLE_NS.as_bytes() => Ns::NonInlinable,
                    _ => Ns::Other,
                },
                _ => Ns::Other,
            };
            match event {
                Event::Start(e) => {
                    let span = self.start_span(&e, false);
                    self.depth += 1;
                    if self.depth > MAX_DEPTH {
                        return Err(self.err(
                            span,
                            "",
                            ErrorKind::Xml(format!(
                                "elements nested more than {MAX_DEPTH} levels deep"
                            )),
                        ));
                    }
                    return Ok(Ev::Start(self.tag(ns, &e, span, false)?));
                }
                Event::Empty(e) => {
                    let span = self.start_span(&e, true);
                    return Ok(Ev::Start(self.tag(ns, &e, span, true)?));
                }
                Event::End(_) => {
                    self.depth = self.depth.saturating_sub(1);
                    return Ok(Ev::End);
                }
                Event::Eof => return Ok(Ev::Eof),
                Event::Text(t) => {
                    if !t.iter().all(u8::is_ascii_whitespace) {
                        let text = String::from_utf8_lossy(&t)
                            .trim()
                            .chars()
                            .take(40)
                            .collect();
                        let at = before
                            + t.iter().take_while(|b| b.is_ascii_whitespace()).count() as u32;
                        return Err(self.err(Span(at), "", ErrorKind::UnexpectedText(text)));
                    }
                }
                Event::CData(_) => {
                    return Err(self.err(
                        Span(before),
                        "",
                        ErrorKind::UnexpectedText("<![CDATA[".into()),
                    ))
                }
                Event::DocType(_) => return Err(self.err(Span(before), "", ErrorKind::DocType)),
                Event::Decl(d) => self.declaration(&d, before)?,
                Event::Comment(_) | Event::PI(_) => {}
            }
        }
    }

    /// Checks the XML declaration: first in the document, version `1.x`
    /// (XML 1.0's `VersionNum`).
    fn declaration(&self, d: &BytesDecl<'_>, at: u32) -> R<()> {
        let bad = |what: String| self.err(Span(at), "", ErrorKind::Xml(what));
        if at != 0 {
            return Err(bad(
                "an XML declaration is allowed only at the start of the document".into(),
            ));
        }
        let version = d
            .version()
            .map_err(|e| bad(format!("XML declaration: {e}")))?;
        let ok = version
            .strip_prefix(b"1.")
            .is_some_and(|minor| !minor.is_empty() && minor.iter().all(u8::is_ascii_digit));
        if !ok {
            return Err(bad(format!(
                "XML version `{}` is not XML 1.0 (expected `1.0`)",
                String::from_utf8_lossy(&version)
            )));
        }
        if let Some(standalone) = d.standalone() {
            let standalone = standalone.map_err(|e| bad(format!("XML declaration: {e}")))?;
            if !matches!(standalone.as_ref(), b"yes" | b"no") {
                return Err(bad(format!(
                    "standalone=`{}` in the XML declaration (expected yes or no)",
                    String::from_utf8_lossy(&standalone)
                )));
            }
        }
        Ok(())
    }

    fn start_span(&self, e: &BytesStart<'_>, empty: bool) -> Span {
        let end = self.offset();
        let len = e.len() as u32 + if empty { 3 } else { 2 };
        Span(end.saturating_sub(len))
    }

    fn tag(&mut self, ns: Ns, e: &BytesStart<'_>, span: Span, empty: bool) -> R<Tag> {
        let qname = std::str::from_utf8(e.name().as_ref())
            .map_err(|_| self.err(span, "", ErrorKind::Xml("element name is not UTF-8".into())))?
            .into();
        let local: CompactString = std::str::from_utf8(e.local_name().as_ref())
            .unwrap_or_default()
            .into();
        let mut attrs = std::mem::take(&mut self.scratch);
        attrs.clear();
        for attr in e.attributes() {
            let attr =
                attr.map_err(|err| self.err(span, &local, ErrorKind::Xml(err.to_string())))?;
            let key = std::str::from_utf8(attr.key.as_ref()).map_err(|_| {
                self.err(
                    span,
                    &local,
                    ErrorKind::Xml("attribute name is not UTF-8".into()),
                )
            })?;
            if !is_xml_name(key) {
                return Err(self.err(
                    span,
                    &local,
                    ErrorKind::Xml(format!("`{key}` is not an XML attribute name")),
                ));
            }
            let value = attr
                .unescape_value()
                .map_err(|err| self.err(span, &local, ErrorKind::Xml(err.to_string())))?;
            // Raw characters were checked over the whole text; character
            // references are checked here, once resolved.
            if let Cow::Owned(v) = &value {
                if let Some(c) = v.chars().find(|c| !is_xml_char(*c)) {
                    return Err(self.err(span, &local, ErrorKind::ForbiddenCharacter(c as u32)));
                }
            }
            attrs.push(key, &value);
        }
        let exact = attrs.copy_exact(span);
        self.scratch = attrs;
        let attrs = exact;
        Ok(Tag {
            ns,
            local,
            qname,
            attrs,
            empty,
        })
    }

    /// The next child of `parent`, or `None` at its end tag.
    fn child(&mut self, parent: &Tag) -> R<Option<Tag>> {
        if parent.empty {
            return Ok(None);
        }
        match self.next()? {
            Ev::Start(tag) => Ok(Some(tag)),
            Ev::End => Ok(None),
            Ev::Eof => Err(self.err(
                parent.attrs.span,
                &parent.local,
                ErrorKind::Xml("unexpected end of file inside this element".into()),
            )),
        }
    }

    fn unknown(&self, child: &Tag, parent: &Tag) -> ModelError {
        self.err(
            child.attrs.span,
            &child.local,
            ErrorKind::UnknownElement {
                name: child.qname.clone(),
                parent: parent.local.clone(),
                old_format: OLD_FORMAT_ELEMENTS.contains(&child.local.as_str()),
            },
        )
    }

    /// Consumes an element that must have no children.
    fn leaf(&mut self, tag: Tag) -> R<Attrs> {
        if let Some(child) = self.child(&tag)? {
            return Err(self.unknown(&child, &tag));
        }
        Ok(tag.attrs)
    }

    fn document(&mut self) -> R<Document> {
        let root = match self.next()? {
            Ev::Start(tag) => tag,
            Ev::End | Ev::Eof => {
                return Err(self.err(Span(0), "", ErrorKind::Xml("no root element".into())))
            }
        };
        let doc = match (root.ns, root.local.as_str()) {
            (Ns::Xaif, "CallGraph") => Document::Program(Box::new(self.program(root)?)),
            (Ns::Inlinable, "InlinableIntrinsicDefinitions") => {
                Document::Inlinable(self.inlinable_catalogue(root)?)
            }
            (Ns::NonInlinable, "NonInlinableIntrinsicDefinitions") => {
                Document::NonInlinable(self.noninlinable_catalogue(root)?)
            }
            _ => {
                return Err(self.err(
                    root.attrs.span,
                    &root.local,
                    ErrorKind::UnknownRoot(root.qname.to_string()),
                ))
            }
        };
        match self.next()? {
            Ev::Eof => Ok(doc),
            Ev::Start(tag) => Err(self.err(
                tag.attrs.span,
                &tag.local,
                ErrorKind::Xml("content after the root element".into()),
            )),
            Ev::End => Err(self.err(
                Span(self.offset()),
                "",
                ErrorKind::Xml("unbalanced end tag".into()),
            )),
        }
    }

    // ----------------------------------------------------------------- program

    fn program(&mut self, root: Tag) -> R<Program> {
        let mut p = Program::default();
        // Each of these is one element of a CallGraph: a second one would
        // replace the first while what was read of it stays in the arenas.
        let mut seen = [false; 4];
        while let Some(child) = self.child(&root)? {
            let once = ["ScopeHierarchy", "AliasSetMap", "DUUDSetMap", "DOSetMap"];
            if let Some(k) = once.iter().position(|n| *n == child.x()) {
                if std::mem::replace(&mut seen[k], true) {
                    return Err(self.err(
                        child.attrs.span,
                        &child.local,
                        ErrorKind::Repeated(once[k]),
                    ));
                }
            }
            match child.x() {
                "ScopeHierarchy" => p.scope_hierarchy = self.scope_hierarchy(&mut p, child)?,
                "AliasSetMap" => p.alias_map = Some(self.alias_map(child)?),
                "DUUDSetMap" => p.duud_map = Some(self.stmt_id_set_map(child)?),
                "DOSetMap" => p.do_map = Some(self.stmt_id_set_map(child)?),
                "ControlFlowGraph" | "ReplacementList" => {
                    let r = self.routine(&mut p, child)?;
                    p.items.push(CallGraphItem::Routine(r));
                }
                "CallGraphEdge" => {
                    let attrs = self.leaf(child)?;
                    p.call_edges.push(attrs);
                    p.items.push(CallGraphItem::Edge(p.call_edges.len() - 1));
                }
                _ => return Err(self.unknown(&child, &root)),
            }
        }
        p.attrs = root.attrs;
        Ok(p)
    }

    fn scope_hierarchy(&mut self, p: &mut Program, tag: Tag) -> R<ScopeHierarchy> {
        let mut h = ScopeHierarchy::default();
        while let Some(child) = self.child(&tag)? {
            match child.x() {
                "Scope" => {
                    let scope = p.scopes.alloc(Scope {
                        attrs: Attrs::new(),
                        tables: Vec::new(),
                    });
                    while let Some(table) = self.child(&child)? {
                        if table.x() != "SymbolTable" {
                            return Err(self.unknown(&table, &child));
                        }
                        let mut symbols = Vec::new();
                        while let Some(sym) = self.child(&table)? {
                            if sym.x() != "Symbol" {
                                return Err(self.unknown(&sym, &table));
                            }
                            let mut bounds = Vec::new();
                            while let Some(b) = self.child(&sym)? {
                                if b.x() != "DimensionBounds" {
                                    return Err(self.unknown(&b, &sym));
                                }
                                bounds.push(self.leaf(b)?);
                            }
                            symbols.push(p.symbols.alloc(Symbol {
                                attrs: sym.attrs,
                                bounds,
                                scope,
                            }));
                        }
                        p.scopes[scope].tables.push(SymbolTable {
                            attrs: table.attrs,
                            symbols,
                        });
                    }
                    p.scopes[scope].attrs = child.attrs;
                    h.items.push(ScopeItem::Scope(scope));
                }
                "ScopeEdge" => h.items.push(ScopeItem::Edge(self.leaf(child)?)),
                _ => return Err(self.unknown(&child, &tag)),
            }
        }
        h.attrs = tag.attrs;
        Ok(h)
    }

    fn alias_map(&mut self, tag: Tag) -> R<AliasSetMap> {
        let mut map = AliasSetMap::default();
        while let Some(set) = self.child(&tag)? {
            if set.x() != "AliasSet" {
                return Err(self.unknown(&set, &tag));
            }
            let mut ranges = Vec::new();
            while let Some(r) = self.child(&set)? {
                if r.x() != "AliasRange" {
                    return Err(self.unknown(&r, &set));
                }
                ranges.push(self.leaf(r)?);
            }
            map.sets.push(AliasSet {
                attrs: set.attrs,
                ranges,
            });
        }
        map.attrs = tag.attrs;
        Ok(map)
    }

    fn stmt_id_set_map(&mut self, tag: Tag) -> R<StmtIdSetMap> {
        let mut map = StmtIdSetMap::default();
        while let Some(set) = self.child(&tag)? {
            if set.x() != "StmtIdSet" {
                return Err(self.unknown(&set, &tag));
            }
            let mut ids = Vec::new();
            while let Some(r) = self.child(&set)? {
                if r.x() != "StatementId" {
                    return Err(self.unknown(&r, &set));
                }
                ids.push(self.leaf(r)?);
            }
            map.sets.push(StmtIdSet {
                attrs: set.attrs,
                ids,
            });
        }
        map.attrs = tag.attrs;
        Ok(map)
    }

    fn routine(&mut self, p: &mut Program, tag: Tag) -> R<RoutineId> {
        let is_graph = tag.local == "ControlFlowGraph";
        let routine = p.routines.alloc(Routine {
            attrs: Attrs::new(),
            arguments: None,
            side_effects: Vec::new(),
            body: RoutineBody::Replacements(Vec::new()),
        });
        let graph = if is_graph {
            Some(p.cfgs.alloc(Cfg {
                routine,
                items: Vec::new(),
            }))
        } else {
            None
        };
        let mut replacements = Vec::new();
        while let Some(child) = self.child(&tag)? {
            let name = child.x();
            if name == "ArgumentList" {
                let mut list = ArgumentList::default();
                while let Some(arg) = self.child(&child)? {
                    if arg.x() != "ArgumentSymbolReference" {
                        return Err(self.unknown(&arg, &child));
                    }
                    list.args.push(self.leaf(arg)?);
                }
                list.attrs = child.attrs;
                p.routines[routine].arguments = Some(list);
            } else if let (Some(kind), true) = (SideEffectKind::from_element(name), is_graph) {
                let mut refs = Vec::new();
                while let Some(r) = self.child(&child)? {
                    if r.x() != "SideEffectReference" {
                        return Err(self.unknown(&r, &child));
                    }
                    refs.push(self.var_ref(r)?);
                }
                p.routines[routine].side_effects.push(SideEffectList {
                    kind,
                    attrs: child.attrs,
                    refs,
                });
            } else if let Some(cfg) = graph {
                self.cfg_child(p, cfg, child, &tag)?;
            } else if name == "Replacement" {
                let cfg = p.cfgs.alloc(Cfg {
                    routine,
                    items: Vec::new(),
                });
                while let Some(grandchild) = self.child(&child)? {
                    self.cfg_child(p, cfg, grandchild, &child)?;
                }
                replacements.push(Replacement {
                    attrs: child.attrs,
                    cfg,
                });
            } else {
                return Err(self.unknown(&child, &tag));
            }
        }
        let r = &mut p.routines[routine];
        r.attrs = tag.attrs;
        r.body = match graph {
            Some(cfg) => RoutineBody::Graph(cfg),
            None => RoutineBody::Replacements(replacements),
        };
        Ok(routine)
    }

    fn cfg_child(&mut self, p: &mut Program, cfg: CfgId, tag: Tag, parent: &Tag) -> R<()> {
        let kind = match tag.x() {
            "ControlFlowEdge" => {
                let attrs = self.leaf(tag)?;
                let e = p.edges.alloc(CfgEdge { attrs, cfg });
                p.cfgs[cfg].items.push(CfgItem::Edge(e));
                return Ok(());
            }
            "Entry" | "Exit" | "EndBranch" | "EndLoop" | "Goto" | "Label" => {
                let kind = match tag.x() {
                    "Entry" => VertexKind::Entry,
                    "Exit" => VertexKind::Exit,
                    "EndBranch" => VertexKind::EndBranch,
                    "EndLoop" => VertexKind::EndLoop,
                    "Goto" => VertexKind::Goto,
                    _ => VertexKind::Label,
                };
                let attrs = self.leaf(tag)?;
                let v = p.vertices.alloc(CfgVertex { attrs, cfg, kind });
                p.cfgs[cfg].items.push(CfgItem::Vertex(v));
                return Ok(());
            }
            "BasicBlock" => {
                let mut stmts = Vec::new();
                while let Some(child) = self.child(&tag)? {
                    let s = self.statement(child, &tag)?;
                    stmts.push(p.stmts.alloc(s));
                }
                stmts.shrink_to_fit();
                VertexKind::BasicBlock(stmts)
            }
            "Branch" | "If" | "PreLoop" | "PostLoop" => {
                let mut condition = None;
                while let Some(child) = self.child(&tag)? {
                    if child.x() != "Condition" || condition.is_some() {
                        return Err(self.unknown(&child, &tag));
                    }
                    condition = Some(self.expr(child)?);
                }
                match tag.x() {
                    "Branch" => VertexKind::Branch(condition),
                    "If" => VertexKind::If(condition),
                    "PreLoop" => VertexKind::PreLoop(condition),
                    _ => VertexKind::PostLoop(condition),
                }
            }
            "ForLoop" => {
                let (mut init, mut condition, mut update) = (None, None, None);
                while let Some(child) = self.child(&tag)? {
                    match child.x() {
                        "Initialization" if init.is_none() => {
                            let s = self.assignment_stmt(child)?;
                            init = Some(p.stmts.alloc(s));
                        }
                        "Condition" if condition.is_none() => condition = Some(self.expr(child)?),
                        "Update" if update.is_none() => {
                            let s = self.assignment_stmt(child)?;
                            update = Some(p.stmts.alloc(s));
                        }
                        _ => return Err(self.unknown(&child, &tag)),
                    }
                }
                VertexKind::ForLoop {
                    init,
                    condition,
                    update,
                }
            }
            _ => return Err(self.unknown(&tag, parent)),
        };
        let v = p.vertices.alloc(CfgVertex {
            attrs: tag.attrs,
            cfg,
            kind,
        });
        p.cfgs[cfg].items.push(CfgItem::Vertex(v));
        Ok(())
    }

    // -------------------------------------------------------------- statements

    fn statement(&mut self, tag: Tag, parent: &Tag) -> R<Stmt> {
        match tag.x() {
            "Assignment" => self.assignment_stmt(tag),
            "Marker" => Ok(Stmt {
                attrs: self.leaf(tag)?,
                kind: StmtKind::Marker,
            }),
            "SubroutineCall" => {
                let mut args = Vec::new();
                while let Some(child) = self.child(&tag)? {
                    if child.x() != "Argument" {
                        return Err(self.unknown(&child, &tag));
                    }
                    args.push(self.call_arg(child)?);
                }
                args.shrink_to_fit();
                Ok(Stmt {
                    attrs: tag.attrs,
                    kind: StmtKind::SubroutineCall(args),
                })
            }
            "InlinableSubroutineCall" => {
                let mut args = Vec::new();
                while let Some(child) = self.child(&tag)? {
                    match child.x() {
                        "Argument" => args.push(InlinableArg::Argument(self.call_arg(child)?)),
                        "ArgumentSubstitute" => {
                            args.push(InlinableArg::Substitute(self.var_ref(child)?))
                        }
                        _ => return Err(self.unknown(&child, &tag)),
                    }
                }
                Ok(Stmt {
                    attrs: tag.attrs,
                    kind: StmtKind::InlinableCall(args),
                })
            }
            "DerivativePropagator" => {
                let mut entries = Vec::new();
                while let Some(child) = self.child(&tag)? {
                    entries.push(self.prop_entry(child, &tag)?);
                }
                Ok(Stmt {
                    attrs: tag.attrs,
                    kind: StmtKind::DerivativePropagator(entries),
                })
            }
            _ => Err(self.unknown(&tag, parent)),
        }
    }

    fn assignment_stmt(&mut self, tag: Tag) -> R<Stmt> {
        let (mut lhs, mut rhs) = (None, None);
        while let Some(child) = self.child(&tag)? {
            match child.x() {
                "AssignmentLHS" if lhs.is_none() => lhs = Some(self.var_ref(child)?),
                "AssignmentRHS" if rhs.is_none() => rhs = Some(self.expr(child)?),
                _ => return Err(self.unknown(&child, &tag)),
            }
        }
        let lhs = lhs.ok_or_else(|| {
            self.err(
                tag.attrs.span,
                &tag.local,
                ErrorKind::MissingChild("AssignmentLHS"),
            )
        })?;
        let rhs = rhs.ok_or_else(|| {
            self.err(
                tag.attrs.span,
                &tag.local,
                ErrorKind::MissingChild("AssignmentRHS"),
            )
        })?;
        Ok(Stmt {
            attrs: tag.attrs,
            kind: StmtKind::Assignment(Assignment { lhs, rhs }),
        })
    }

    fn call_arg(&mut self, tag: Tag) -> R<CallArg> {
        let mut value = None;
        while let Some(child) = self.child(&tag)? {
            match child.x() {
                "VariableReference" if value.is_none() => {
                    value = Some(ArgValue::Variable(self.var_ref(child)?))
                }
                "Constant" if value.is_none() => {
                    value = Some(ArgValue::Constant(self.leaf(child)?))
                }
                _ => return Err(self.unknown(&child, &tag)),
            }
        }
        let value = value.ok_or_else(|| {
            self.err(
                tag.attrs.span,
                &tag.local,
                ErrorKind::MissingChild("VariableReference"),
            )
        })?;
        Ok(CallArg {
            attrs: tag.attrs,
            value,
        })
    }

    fn prop_entry(&mut self, tag: Tag, parent: &Tag) -> R<PropEntry> {
        let name = tag.x();
        let kind = match name {
            "SetDeriv" | "SetNegDeriv" | "IncDeriv" | "DecDeriv" => {
                let (mut tgt, mut src) = (None, None);
                while let Some(child) = self.child(&tag)? {
                    match child.x() {
                        "Tgt" if tgt.is_none() => tgt = Some(self.var_ref(child)?),
                        "Src" if src.is_none() => src = Some(self.var_ref(child)?),
                        _ => return Err(self.unknown(&child, &tag)),
                    }
                }
                let tgt = tgt.ok_or_else(|| {
                    self.err(tag.attrs.span, &tag.local, ErrorKind::MissingChild("Tgt"))
                })?;
                let src = src.ok_or_else(|| {
                    self.err(tag.attrs.span, &tag.local, ErrorKind::MissingChild("Src"))
                })?;
                match name {
                    "SetDeriv" => PropKind::SetDeriv { tgt, src },
                    "SetNegDeriv" => PropKind::SetNegDeriv { tgt, src },
                    "IncDeriv" => PropKind::IncDeriv { tgt, src },
                    _ => PropKind::DecDeriv { tgt, src },
                }
            }
            "Sax" | "Saxpy" => {
                let mut terms = Vec::new();
                let mut y = None;
                while let Some(child) = self.child(&tag)? {
                    match child.x() {
                        "AX" if y.is_none() => {
                            let (mut a, mut x) = (None, None);
                            while let Some(g) = self.child(&child)? {
                                match g.x() {
                                    "A" if a.is_none() => a = Some(self.expr(g)?),
                                    "X" if x.is_none() => x = Some(self.var_ref(g)?),
                                    _ => return Err(self.unknown(&g, &child)),
                                }
                            }
                            let a = a.ok_or_else(|| {
                                self.err(child.attrs.span, "AX", ErrorKind::MissingChild("A"))
                            })?;
                            let x = x.ok_or_else(|| {
                                self.err(child.attrs.span, "AX", ErrorKind::MissingChild("X"))
                            })?;
                            terms.push(AxTerm {
                                attrs: child.attrs,
                                a,
                                x,
                            });
                        }
                        "Y" if y.is_none() => y = Some(self.var_ref(child)?),
                        _ => return Err(self.unknown(&child, &tag)),
                    }
                }
                let y = y.ok_or_else(|| {
                    self.err(tag.attrs.span, &tag.local, ErrorKind::MissingChild("Y"))
                })?;
                if terms.is_empty() {
                    return Err(self.err(
                        tag.attrs.span,
                        &tag.local,
                        ErrorKind::MissingChild("AX"),
                    ));
                }
                if name == "Sax" {
                    PropKind::Sax { terms, y }
                } else {
                    PropKind::Saxpy { terms, y }
                }
            }
            "ZeroDeriv" => {
                // ZeroDeriv is itself a variable reference; its attributes
                // belong to the entry.
                let v = self.var_ref(tag)?;
                return Ok(PropEntry {
                    attrs: Attrs::at(v.attrs.span),
                    kind: PropKind::ZeroDeriv(v),
                });
            }
            _ => return Err(self.unknown(&tag, parent)),
        };
        Ok(PropEntry {
            attrs: tag.attrs,
            kind,
        })
    }

    // ------------------------------------------------------------- expressions

    fn var_ref(&mut self, tag: Tag) -> R<VarRef> {
        let graph = self.ref_graph(&tag)?;
        Ok(VarRef {
            attrs: tag.attrs,
            graph,
        })
    }

    fn ref_graph(&mut self, tag: &Tag) -> R<RefGraph> {
        let mut g = RefGraph::default();
        while let Some(child) = self.child(tag)? {
            match child.x() {
                "SymbolReference" => {
                    let mut properties = Vec::new();
                    while let Some(prop) = self.child(&child)? {
                        if prop.x() != "SymbolReferenceProperty" {
                            return Err(self.unknown(&prop, &child));
                        }
                        properties.push(self.leaf(prop)?);
                    }
                    properties.shrink_to_fit();
                    g.vertices.push(RefVertex {
                        attrs: child.attrs,
                        kind: RefVertexKind::Symbol { properties },
                    });
                }
                "ArrayElementReference" => {
                    let mut triplets = Vec::new();
                    while let Some(t) = self.child(&child)? {
                        if t.x() != "IndexTriplet" {
                            return Err(self.unknown(&t, &child));
                        }
                        let mut triplet = IndexTriplet {
                            attrs: Attrs::new(),
                            index: None,
                            bound: None,
                            stride: None,
                        };
                        while let Some(part) = self.child(&t)? {
                            match part.x() {
                                "Index" if triplet.index.is_none() => {
                                    triplet.index = Some(self.expr(part)?)
                                }
                                "Bound" if triplet.bound.is_none() => {
                                    triplet.bound = Some(self.expr(part)?)
                                }
                                "Stride" if triplet.stride.is_none() => {
                                    triplet.stride = Some(self.expr(part)?)
                                }
                                _ => return Err(self.unknown(&part, &t)),
                            }
                        }
                        triplet.attrs = t.attrs;
                        triplets.push(triplet);
                    }
                    triplets.shrink_to_fit();
                    g.vertices.push(RefVertex {
                        attrs: child.attrs,
                        kind: RefVertexKind::ArrayElement { triplets },
                    });
                }
                "VariableReferenceEdge" => g.edges.push(self.leaf(child)?),
                _ => return Err(self.unknown(&child, tag)),
            }
        }
        g.vertices.shrink_to_fit();
        g.edges.shrink_to_fit();
        Ok(g)
    }

    fn expr(&mut self, tag: Tag) -> R<Expr> {
        let mut e = Expr::default();
        let mut layout: Vec<bool> = Vec::new();
        let mut canonical = true;
        while let Some(child) = self.child(&tag)? {
            let kind = match (child.x(), child.ii()) {
                ("ExpressionEdge", _) => {
                    let attrs = self.leaf(child)?;
                    e.edges.push(ExprEdge { attrs });
                    layout.push(true);
                    continue;
                }
                ("VariableReference", _) => {
                    let g = self.ref_graph(&child)?;
                    ExprVertexKind::VariableReference(g)
                }
                ("Constant", _) => {
                    self.expect_leaf(&child)?;
                    ExprVertexKind::Constant
                }
                ("Intrinsic", _) => {
                    self.expect_leaf(&child)?;
                    ExprVertexKind::Intrinsic
                }
                ("BooleanOperation", _) => {
                    self.expect_leaf(&child)?;
                    ExprVertexKind::BooleanOperation
                }
                ("FunctionCall", _) => {
                    let mut args = Vec::new();
                    while let Some(a) = self.child(&child)? {
                        if a.x() != "Argument" {
                            return Err(self.unknown(&a, &child));
                        }
                        args.push(self.var_ref(a)?);
                    }
                    args.shrink_to_fit();
                    ExprVertexKind::FunctionCall(args)
                }
                (_, "ArgumentReference") => {
                    self.expect_leaf(&child)?;
                    ExprVertexKind::ArgumentReference
                }
                _ => return Err(self.unknown(&child, &tag)),
            };
            if layout.last() == Some(&true) {
                canonical = false;
            }
            layout.push(false);
            e.vertices.push(ExprVertex {
                attrs: child.attrs,
                kind,
            });
        }
        if !canonical {
            layout.shrink_to_fit();
            e.layout = Some(layout);
        }
        e.vertices.shrink_to_fit();
        e.edges.shrink_to_fit();
        e.attrs = tag.attrs;
        Ok(e)
    }

    fn expect_leaf(&mut self, tag: &Tag) -> R<()> {
        if let Some(child) = self.child(tag)? {
            return Err(self.unknown(&child, tag));
        }
        Ok(())
    }

    // -------------------------------------------------------------- catalogues

    fn inlinable_catalogue(&mut self, root: Tag) -> R<InlinableCatalogue> {
        let mut cat = InlinableCatalogue::default();
        while let Some(child) = self.child(&root)? {
            if child.ii() != "InlinableIntrinsic" {
                return Err(self.unknown(&child, &root));
            }
            let mut function = None;
            let mut partials = Vec::new();
            while let Some(g) = self.child(&child)? {
                match g.ii() {
                    "Function" if function.is_none() && partials.is_empty() => {
                        function = Some(self.expr(g)?)
                    }
                    "Partial" => partials.push(self.expr(g)?),
                    _ => return Err(self.unknown(&g, &child)),
                }
            }
            let function = function.ok_or_else(|| {
                self.err(
                    child.attrs.span,
                    &child.local,
                    ErrorKind::MissingChild("Function"),
                )
            })?;
            cat.intrinsics.push(InlinableIntrinsic {
                attrs: child.attrs,
                function,
                partials,
            });
        }
        cat.attrs = root.attrs;
        Ok(cat)
    }

    fn noninlinable_catalogue(&mut self, root: Tag) -> R<NonInlinableCatalogue> {
        let mut cat = NonInlinableCatalogue::default();
        while let Some(child) = self.child(&root)? {
            match child.nii() {
                "DirectAction" => cat
                    .entries
                    .push(NonInlinable::DirectAction(self.leaf(child)?)),
                "ExplicitJacobian" => {
                    let mut partials = Vec::new();
                    while let Some(g) = self.child(&child)? {
                        if g.nii() != "Partial" {
                            return Err(self.unknown(&g, &child));
                        }
                        partials.push(self.leaf(g)?);
                    }
                    cat.entries.push(NonInlinable::ExplicitJacobian {
                        attrs: child.attrs,
                        partials,
                    });
                }
                _ => return Err(self.unknown(&child, &root)),
            }
        }
        cat.attrs = root.attrs;
        Ok(cat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_names_ascii_and_not() {
        for ok in [
            "a",
            "vertex_id",
            "xsi:schemaLocation",
            "_x",
            ":a",
            "a-b.c9",
            "é",
            "aé·",
            "Ab_1",
        ] {
            assert!(is_xml_name(ok), "{ok}");
        }
        for bad in [
            "", "1a", "-a", ".a", "a b", "a=b", "a\"", "·a", "a\u{7f}", "a/",
        ] {
            assert!(!is_xml_name(bad), "{bad}");
        }
    }

    #[test]
    fn forbidden_bytes_are_found_after_allowed_control_characters() {
        let source = SourceMap::new(None, b"");
        assert!(check_characters(b"<a>\n\t\r x</a>", &source).is_ok());
        assert!(check_characters("<a>\u{FEFF}</a>".as_bytes(), &source).is_ok());
        assert!(check_characters(b"<a>\n\x01</a>", &source).is_err());
        assert!(check_characters("<a>\n\u{FFFE}</a>".as_bytes(), &source).is_err());
    }
}
