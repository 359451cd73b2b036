//! The program generator: deterministic, and a fixed-seed sample of 1,000
//! programs shows every construct it promises and every intrinsic of the
//! inlinable catalogue (and the non-inlinable `transpose_arr` and
//! `reshape_arr`, and the inquiries `present` and `allocated`).

use std::collections::BTreeMap;

use xaif_testkit::gen;

/// The inlinable catalogue's 48 intrinsics.
const CATALOGUE: [&str; 48] = [
    "add_scal_scal",
    "sub_scal_scal",
    "mul_scal_scal",
    "div_scal_scal",
    "minus_scal",
    "ln_scal",
    "log10",
    "sin_scal",
    "cos_scal",
    "tan_scal",
    "arcsin_scal",
    "arccos_scal",
    "arctan_scal",
    "sinh_scal",
    "cosh_scal",
    "tanh_scal",
    "exp_scal",
    "sqrt_scal",
    "pow_scal_scal",
    "int_scal",
    "nint_scal",
    "real_scal",
    "complex_scal",
    "imag_scal",
    "transfer",
    "lbound",
    "ubound",
    "size",
    "len",
    "trim",
    "scan",
    "mod_scal_scal",
    "abs_scal",
    "sign_scal_scal",
    "string_eq_scal_scal",
    "string_ne_scal_scal",
    "string_ge_scal_scal",
    "string_le_scal_scal",
    "string_lt_scal_scal",
    "nc_min_scal_scal",
    "nc_minval",
    "nc_max_scal_scal",
    "nc_maxval",
    "maxloc_arr",
    "minloc_arr",
    "sum_arr",
    "shape_arr",
    "ichar",
];

#[test]
fn the_list_is_the_catalogue() {
    let Some(shared) = xaif_testkit::shared_dir() else {
        return;
    };
    let text =
        std::fs::read_to_string(shared.join("xaif/schema/examples/inlinable_intrinsics.xaif"))
            .unwrap();
    let mut names: Vec<&str> = text
        .split("<xaifii:InlinableIntrinsic name=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    let mut ours = CATALOGUE.to_vec();
    names.sort_unstable();
    ours.sort_unstable();
    assert_eq!(names, ours);
}

#[test]
fn same_seed_same_program() {
    for seed in [0, 1, 99, u64::MAX] {
        assert_eq!(gen::generate(seed, 5), gen::generate(seed, 5));
    }
    assert_ne!(gen::generate(1, 5), gen::generate(2, 5));
}

#[test]
fn a_sample_of_1000_programs_covers_every_construct_and_intrinsic() {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for k in 0..1000u64 {
        let p = gen::program(k.wrapping_mul(0x9E37_79B9_7F4A_7C15), 1 + (k % 8) as usize);
        for f in gen::features(&p) {
            *seen.entry(f).or_default() += 1;
        }
    }
    for c in gen::CONSTRUCTS {
        eprintln!("{c}: {}", seen.get(*c).copied().unwrap_or(0));
    }
    let mut missing = Vec::new();
    for c in gen::CONSTRUCTS {
        if seen.get(*c).copied().unwrap_or(0) < 3 {
            missing.push(format!("{c} ({})", seen.get(*c).copied().unwrap_or(0)));
        }
    }
    for name in CATALOGUE
        .iter()
        .chain(["transpose_arr", "reshape_arr", "present", "allocated"].iter())
    {
        let key = format!("intrinsic:{name}");
        if seen.get(&key).copied().unwrap_or(0) < 3 {
            missing.push(format!("{key} ({})", seen.get(&key).copied().unwrap_or(0)));
        }
    }
    assert!(
        missing.is_empty(),
        "shown by fewer than 3 of 1000 programs: {}\nall: {seen:?}",
        missing.join(", ")
    );
}

/// The false edge of a two-way branch (`Branch` or `If` of an `if`, an
/// early `exit` or `return`, a `goto`) comes in both of the forms XAIF
/// allows: without a condition value, as OpenAD's front end writes it, and
/// with `condition_value="0"`. Programs with a `select case` are left out
/// (a `case (1)` beside its default looks like the first form).
#[test]
fn false_edges_of_branches_come_in_both_forms() {
    let (mut without, mut zero) = (0, 0);
    for k in 0..300u64 {
        let text = gen::generate(k.wrapping_mul(0x9E37_79B9_7F4A_7C15), 1 + (k % 8) as usize);
        if text.contains("select case") {
            continue;
        }
        let id_of = |line: &str, key: &str| -> Option<String> {
            let at = line.find(key)? + key.len();
            Some(line[at..].split('"').next()?.to_string())
        };
        // Vertex ids are per control flow graph.
        for cfg in text.split("<xaif:ControlFlowGraph ").skip(1) {
            let mut branches = std::collections::BTreeSet::new();
            for line in cfg.lines() {
                let line = line.trim_start();
                if line.starts_with("<xaif:Branch ") || line.starts_with("<xaif:If ") {
                    branches.extend(id_of(line, "vertex_id=\""));
                }
            }
            // Per branch: its out-edges' condition values ("" for none).
            let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for line in cfg.lines() {
                let line = line.trim_start();
                if !line.starts_with("<xaif:ControlFlowEdge ") {
                    continue;
                }
                let Some(source) = id_of(line, "source=\"") else {
                    continue;
                };
                if branches.contains(&source) {
                    let value = id_of(line, " condition_value=\"").unwrap_or_default();
                    out.entry(source).or_default().push(value);
                }
            }
            for values in out.values() {
                let mut v = values.clone();
                v.sort();
                match v.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                    ["", "1"] => without += 1,
                    ["0", "1"] => zero += 1,
                    ref other => panic!("a two-way branch with edges {other:?}"),
                }
            }
        }
    }
    assert!(
        without >= 20 && zero >= 20,
        "false edges without a value: {without}, with value 0: {zero}"
    );
}
