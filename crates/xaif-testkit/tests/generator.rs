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
