//! Front-end XAIF without the results of the front end's analyses.
//!
//! OpenAD's front end writes side-effect lists on every routine, alias and
//! DU-UD chain keys on every reference, and the maps those keys index. All
//! of them are optional in XAIF: other producers, generators and hand
//! written files leave them out. An engine must then give the same
//! derivatives (it may tape or checkpoint more). These functions remove
//! them from a front-end file so tests can check exactly that.

const LISTS: [&str; 5] = ["ModLocal", "Mod", "ReadLocal", "Read", "OnEntry"];

/// `text` without its side-effect list elements (`ModLocal`, `Mod`,
/// `ReadLocal`, `Read`, `OnEntry`, empty or not).
pub fn side_effect_lists(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let next = LISTS
            .iter()
            .filter_map(|tag| Some((start_tag(rest, tag)?, *tag)))
            .min();
        let Some((at, tag)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        rest = &rest[element_end(rest, at, tag)..];
    }
}

/// `text` without side-effect lists, without the `alias`, `du_ud` and
/// `do_chain` keys of its references and statements, and with the alias,
/// DU-UD and DO maps reduced to their empty key 0 (what a reference
/// without a key means).
pub fn front_end_analyses(text: &str) -> String {
    let mut t = side_effect_lists(text);
    for attr in ["alias", "du_ud", "do_chain"] {
        t = attribute(&t, attr);
    }
    for (map, empty) in [
        ("AliasSetMap", r#"<xaif:AliasSet key="0"/>"#),
        ("DUUDSetMap", r#"<xaif:StmtIdSet key="0"/>"#),
        ("DOSetMap", r#"<xaif:StmtIdSet key="0"/>"#),
    ] {
        t = map_contents(&t, map, empty);
    }
    t
}

/// Where the first start tag `<xaif:TAG` (the whole name) is in `text`.
fn start_tag(text: &str, tag: &str) -> Option<usize> {
    let open = format!("<xaif:{tag}");
    let mut from = 0;
    while let Some(i) = text[from..].find(&open) {
        let at = from + i;
        let next = text[at + open.len()..].chars().next()?;
        if next == '>' || next == '/' || next.is_whitespace() {
            return Some(at);
        }
        from = at + open.len();
    }
    None
}

/// The end of the element `<xaif:TAG` that starts at `at`.
fn element_end(text: &str, at: usize, tag: &str) -> usize {
    let gt = at + text[at..].find('>').expect("a closed start tag");
    if text[..gt].ends_with('/') {
        return gt + 1;
    }
    let close = format!("</xaif:{tag}>");
    gt + text[gt..].find(&close).expect("a closed element") + close.len()
}

/// `text` without any ` NAME="…"` attribute.
fn attribute(text: &str, name: &str) -> String {
    let pat = format!(" {name}=\"");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&pat) {
        out.push_str(&rest[..at]);
        let value = &rest[at + pat.len()..];
        rest = &value[value.find('"').expect("a closed value") + 1..];
    }
    out.push_str(rest);
    out
}

/// `text` with the children of the `<xaif:MAP>` element replaced by
/// `empty`.
fn map_contents(text: &str, map: &str, empty: &str) -> String {
    let Some(at) = start_tag(text, map) else {
        return text.to_string();
    };
    let gt = at + text[at..].find('>').expect("a closed start tag");
    let end = element_end(text, at, map);
    let open = text[at..gt].trim_end_matches('/');
    format!("{}{open}>{empty}</xaif:{map}>{}", &text[..at], &text[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_go_whole_and_nothing_else_does() {
        let text = "<a><xaif:Mod>\n<x/></xaif:Mod><xaif:ModLocal/><b/><xaif:Read ><z/></xaif:Read><xaif:OnEntry/><xaif:Modify/></a>";
        assert_eq!(side_effect_lists(text), "<a><b/><xaif:Modify/></a>");
    }

    #[test]
    fn keys_and_maps_go() {
        let text = r#"<r><xaif:AliasSetMap><xaif:AliasSet key="0"/><xaif:AliasSet key="1"><xaif:AliasRange from_virtual_address="1" to_virtual_address="1"/></xaif:AliasSet></xaif:AliasSetMap><xaif:DUUDSetMap/><v vertex_id="1" du_ud="3" alias="2"/><s do_chain="4" x_alias="5"/></r>"#;
        assert_eq!(
            front_end_analyses(text),
            r#"<r><xaif:AliasSetMap><xaif:AliasSet key="0"/></xaif:AliasSetMap><xaif:DUUDSetMap><xaif:StmtIdSet key="0"/></xaif:DUUDSetMap><v vertex_id="1"/><s x_alias="5"/></r>"#
        );
    }
}
