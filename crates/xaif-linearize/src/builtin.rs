//! The intrinsics catalogue xaifb carries, so that `-c` is optional.
//!
//! Every entry states, for one intrinsic of the XAIF catalogue, its arity,
//! whether it is non-smooth (the trace mode records where it is evaluated)
//! and the partial derivative with respect to each argument, as an
//! expression over the arguments (`a1`, `a2`) and the result (`a0`): the
//! calculus of the elementary functions, written once here. The table is
//! compiled into the binary: building the [`Catalogue`] from it costs a few
//! microseconds and no file access, which keeps a transformation's
//! start-up small.
//!
//! Each partial is written in the form the XAIF catalogue of the OpenAD
//! distribution uses (`1/y`, `-(x/(y*y))`, `0.5/sqrt(x)` …), every argument
//! and every constant being one shared node of its expression, so that
//! code built with the built-in catalogue is the same, byte for byte, as
//! code built with that file (a test checks this on the whole corpus).
//! `-c FILE` still replaces the table with any other catalogue.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;
use xaif_model::Attrs;

use crate::catalogue::{Catalogue, Intrinsic, Partial, PartialKind, TNode, Template};

/// An expression of the table: arguments, constants and intrinsic
/// applications. Equal leaves are one node of the template.
#[derive(Clone, Copy, Debug)]
enum E {
    /// Argument `k` (0: the intrinsic's result).
    A(usize),
    /// An integer constant.
    I(&'static str),
    /// A real constant.
    R(&'static str),
    /// An intrinsic applied to arguments.
    Op(&'static str, &'static [E]),
}

use E::{Op, A, I, R};

/// One partial of the table.
#[derive(Clone, Copy, Debug)]
enum P {
    /// Identically zero (no edge).
    Passive,
    /// The constant +1.
    One,
    /// The constant -1.
    MinusOne,
    /// A value that depends on the arguments.
    Nonlinear(E),
}

use P::{MinusOne, Nonlinear, One, Passive};

/// One intrinsic of the table: name, non-smooth, partials (the arity is
/// their number).
type Entry = (&'static str, bool, &'static [P]);

const fn x(k: usize) -> E {
    A(k)
}

/// `1 / d`.
const fn recip(d: &'static [E; 2]) -> E {
    Op("div_scal_scal", d)
}

/// The table. Partial `j` is the derivative with respect to argument `j`.
const TABLE: &[Entry] = &[
    // d(x+y) = dx + dy
    ("add_scal_scal", false, &[One, One]),
    // d(x-y) = dx - dy
    ("sub_scal_scal", false, &[One, MinusOne]),
    // d(xy) = y dx + x dy
    ("mul_scal_scal", false, &[Nonlinear(x(2)), Nonlinear(x(1))]),
    // d(x/y) = dx/y - x/y² dy
    (
        "div_scal_scal",
        false,
        &[
            Nonlinear(recip(&[I("1"), x(2)])),
            Nonlinear(Op(
                "minus_scal",
                &[Op(
                    "div_scal_scal",
                    &[x(1), Op("mul_scal_scal", &[x(2), x(2)])],
                )],
            )),
        ],
    ),
    // d(-x) = -dx
    ("minus_scal", false, &[MinusOne]),
    // d ln x = dx/x
    ("ln_scal", false, &[Nonlinear(recip(&[I("1"), x(1)]))]),
    // d log10 x = dx/(x ln 10)
    (
        "log10",
        false,
        &[Nonlinear(Op(
            "div_scal_scal",
            &[
                I("1"),
                Op("mul_scal_scal", &[x(1), Op("ln_scal", &[R("10.0")])]),
            ],
        ))],
    ),
    // d sin x = cos x dx
    ("sin_scal", false, &[Nonlinear(Op("cos_scal", &[x(1)]))]),
    // d cos x = -sin x dx
    (
        "cos_scal",
        false,
        &[Nonlinear(Op("minus_scal", &[Op("sin_scal", &[x(1)])]))],
    ),
    // d tan x = (1 + tan² x) dx, from the result; non-smooth at the poles
    (
        "tan_scal",
        true,
        &[Nonlinear(Op(
            "add_scal_scal",
            &[Op("mul_scal_scal", &[x(0), x(0)]), I("1")],
        ))],
    ),
    // d asin x = dx / sqrt(1 - x²)
    (
        "arcsin_scal",
        false,
        &[Nonlinear(Op(
            "div_scal_scal",
            &[
                I("1"),
                Op(
                    "sqrt_scal",
                    &[Op(
                        "sub_scal_scal",
                        &[I("1"), Op("mul_scal_scal", &[x(1), x(1)])],
                    )],
                ),
            ],
        ))],
    ),
    // d acos x = -dx / sqrt(1 - x²)
    (
        "arccos_scal",
        false,
        &[Nonlinear(Op(
            "minus_scal",
            &[Op(
                "div_scal_scal",
                &[
                    I("1"),
                    Op(
                        "sqrt_scal",
                        &[Op(
                            "sub_scal_scal",
                            &[I("1"), Op("mul_scal_scal", &[x(1), x(1)])],
                        )],
                    ),
                ],
            )],
        ))],
    ),
    // d atan x = dx / (1 + x²)
    (
        "arctan_scal",
        false,
        &[Nonlinear(Op(
            "div_scal_scal",
            &[
                I("1"),
                Op(
                    "add_scal_scal",
                    &[I("1"), Op("mul_scal_scal", &[x(1), x(1)])],
                ),
            ],
        ))],
    ),
    // d sinh x = cosh x dx
    ("sinh_scal", false, &[Nonlinear(Op("cosh_scal", &[x(1)]))]),
    // d cosh x = sinh x dx
    ("cosh_scal", false, &[Nonlinear(Op("sinh_scal", &[x(1)]))]),
    // d tanh x = (1 - tanh² x) dx, from the result
    (
        "tanh_scal",
        false,
        &[Nonlinear(Op(
            "sub_scal_scal",
            &[I("1"), Op("mul_scal_scal", &[x(0), x(0)])],
        ))],
    ),
    // d exp x = exp x dx, the result
    ("exp_scal", false, &[Nonlinear(x(0))]),
    // d sqrt x = dx / (2 sqrt x), from the result
    (
        "sqrt_scal",
        false,
        &[Nonlinear(Op("div_scal_scal", &[R("0.5"), x(0)]))],
    ),
    // d x^y = y x^(y-1) dx + ln x · x^y dy
    (
        "pow_scal_scal",
        false,
        &[
            Nonlinear(Op(
                "mul_scal_scal",
                &[
                    x(2),
                    Op(
                        "pow_scal_scal",
                        &[x(1), Op("sub_scal_scal", &[x(2), I("1")])],
                    ),
                ],
            )),
            Nonlinear(Op(
                "mul_scal_scal",
                &[Op("ln_scal", &[x(1)]), Op("pow_scal_scal", &[x(1), x(2)])],
            )),
        ],
    ),
    // truncation: piecewise constant
    ("int_scal", true, &[Passive]),
    ("nint_scal", false, &[Passive]),
    // conversion to real: the identity on the value
    ("real_scal", false, &[One]),
    // complex(x, y): both parts pass through
    ("complex_scal", false, &[One, One]),
    ("imag_scal", false, &[One]),
    // bit reinterpretation, inquiries and character functions: no
    // derivative
    ("transfer", true, &[Passive, Passive]),
    ("lbound", false, &[Passive, Passive]),
    ("ubound", false, &[Passive, Passive]),
    ("size", false, &[Passive, Passive]),
    ("len", false, &[Passive]),
    ("trim", false, &[Passive]),
    ("scan", false, &[Passive, Passive]),
    // mod(x, y) = x - int(x/y) y
    (
        "mod_scal_scal",
        true,
        &[
            One,
            Nonlinear(Op(
                "minus_scal",
                &[Op("int_scal", &[Op("div_scal_scal", &[x(1), x(2)])])],
            )),
        ],
    ),
    // d |x| = sign(x) dx
    (
        "abs_scal",
        true,
        &[Nonlinear(Op("sign_scal_scal", &[R("1.0"), x(1)]))],
    ),
    // sign(x, y) = |x| sign(y): d = sign(x) sign(y) dx
    (
        "sign_scal_scal",
        true,
        &[
            Nonlinear(Op(
                "mul_scal_scal",
                &[
                    Op("sign_scal_scal", &[R("1.0"), x(1)]),
                    Op("sign_scal_scal", &[R("1.0"), x(2)]),
                ],
            )),
            Passive,
        ],
    ),
    ("string_eq_scal_scal", false, &[Passive, Passive]),
    ("string_ne_scal_scal", false, &[Passive, Passive]),
    ("string_ge_scal_scal", false, &[Passive, Passive]),
    ("string_le_scal_scal", false, &[Passive, Passive]),
    ("string_lt_scal_scal", false, &[Passive, Passive]),
    // min and max without derivative (the "nc_" forms of the front end)
    ("nc_min_scal_scal", true, &[Passive, Passive]),
    ("nc_minval", true, &[Passive]),
    ("nc_max_scal_scal", true, &[Passive, Passive]),
    ("nc_maxval", true, &[Passive]),
    ("maxloc_arr", false, &[Passive]),
    ("minloc_arr", false, &[Passive]),
    ("sum_arr", false, &[Passive]),
    ("shape_arr", false, &[Passive]),
    ("ichar", false, &[Passive]),
];

/// Builds a template: one node per distinct argument and constant, one per
/// application.
struct Builder {
    nodes: Vec<TNode>,
    leaves: FxHashMap<(u8, &'static str, usize), usize>,
}

impl Builder {
    fn leaf(&mut self, key: (u8, &'static str, usize), node: TNode) -> usize {
        if let Some(&n) = self.leaves.get(&key) {
            return n;
        }
        self.nodes.push(node);
        let n = self.nodes.len() - 1;
        self.leaves.insert(key, n);
        n
    }

    fn build(&mut self, e: &E) -> usize {
        let constant = |ty: &str, v: &str| {
            TNode::Const(
                Attrs::new()
                    .with("vertex_id", "1")
                    .with("type", ty)
                    .with("value", v),
            )
        };
        match *e {
            A(k) => self.leaf((0, "", k), TNode::Arg(k)),
            I(v) => self.leaf((1, v, 0), constant("integer", v)),
            R(v) => self.leaf((2, v, 0), constant("real", v)),
            Op(name, args) => {
                let args = args.iter().map(|a| self.build(a)).collect();
                self.nodes.push(TNode::Op {
                    name: name.to_string(),
                    args,
                });
                self.nodes.len() - 1
            }
        }
    }
}

fn partial(p: &P) -> Partial {
    match p {
        Passive => Partial {
            kind: PartialKind::Passive,
            template: None,
        },
        One => Partial {
            kind: PartialKind::LinearOne,
            template: None,
        },
        MinusOne => Partial {
            kind: PartialKind::LinearMinusOne,
            template: None,
        },
        Nonlinear(e) => {
            let mut b = Builder {
                nodes: Vec::new(),
                leaves: FxHashMap::default(),
            };
            let root = b.build(e);
            Partial {
                kind: PartialKind::Nonlinear,
                template: Some(Template {
                    nodes: b.nodes,
                    root,
                }),
            }
        }
    }
}

/// The built-in catalogue (built once per process).
pub fn builtin() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        Catalogue::from_intrinsics(TABLE.iter().map(|(name, non_smooth, partials)| Intrinsic {
            name: name.to_string(),
            arity: partials.len(),
            non_smooth: *non_smooth,
            partials: partials.iter().map(partial).collect(),
        }))
    })
}

/// Length and fingerprint of `xaif/schema/examples/inlinable_intrinsics.xaif`
/// of the XAIF distribution: the catalogue the OpenAD regression suite and
/// its drivers name with `-c`, whose meaning the table states entry for
/// entry (a test over the whole corpus checks that both give the same
/// bytes).
const DISTRIBUTED: (usize, [u64; 2]) = (31796, [0x4233_f4a2_f55e_61bc, 0xd87a_128d_c900_41c1]);

/// Whether `bytes` are the distributed catalogue file, so that `-c` with
/// that file can take the table instead of parsing 32 kB on every run
/// (about a fifth of a small transformation's process time). The
/// fingerprint is not cryptographic: a file crafted to collide with it
/// would be read as the distributed catalogue, which is all it could
/// achieve. Any other file, the same catalogue reformatted included, is
/// parsed as before.
pub fn is_distributed_catalogue(bytes: &[u8]) -> bool {
    bytes.len() == DISTRIBUTED.0 && fingerprint(bytes) == DISTRIBUTED.1
}

/// A 128-bit fingerprint of `bytes`: four independent lanes of 64-bit
/// words (so that the multiplications overlap), each step a bijection of
/// the lane, mixed at the end.
fn fingerprint(bytes: &[u8]) -> [u64; 2] {
    const K: [u64; 4] = [
        0x9e37_79b9_7f4a_7c15,
        0xc2b2_ae3d_27d4_eb4f,
        0x1656_67b1_9e37_79f9,
        0xd6e8_feb8_6659_fd93,
    ];
    let step = |h: u64, w: u64, k: u64| (h ^ w).wrapping_mul(k).rotate_left(29);
    let mut h = [1u64, 2, 3, 4];
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for (i, word) in block.chunks_exact(8).enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            h[i] = step(h[i], u64::from_le_bytes(w), K[i]);
        }
    }
    for (j, &b) in blocks.remainder().iter().enumerate() {
        h[j % 4] = step(h[j % 4], u64::from(b) | 0x100, K[j % 4]);
    }
    let fmix = |mut x: u64| {
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^ (x >> 33)
    };
    let a = fmix(h[0] ^ h[1].rotate_left(17) ^ bytes.len() as u64);
    let b = fmix(h[2] ^ h[3].rotate_left(41) ^ a);
    [fmix(a ^ h[2].rotate_left(7)), b]
}

/// The names of the built-in intrinsics, in table order.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    TABLE.iter().map(|(name, _, _)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_partial_has_the_intrinsics_arity_and_reads_only_its_arguments() {
        for (name, _, partials) in TABLE {
            let i = builtin().get(name).expect("in the catalogue");
            assert_eq!(i.arity, partials.len());
            for p in &i.partials {
                if let Some(t) = &p.template {
                    assert!(t.arguments().iter().all(|&k| k <= i.arity), "{name}");
                }
            }
        }
    }

    /// The distributed file is recognised; a copy that differs in any one
    /// byte, or is one byte shorter, is not.
    #[test]
    fn the_distributed_catalogue_file_is_recognised_and_nothing_else() {
        let Some(shared) = xaif_testkit::shared_dir() else {
            return;
        };
        let bytes =
            std::fs::read(shared.join("xaif/schema/examples/inlinable_intrinsics.xaif")).unwrap();
        assert!(
            is_distributed_catalogue(&bytes),
            "length {}, fingerprint {:#x?}",
            bytes.len(),
            fingerprint(&bytes)
        );
        assert!(!is_distributed_catalogue(&bytes[..bytes.len() - 1]));
        let mut changed = bytes.clone();
        for i in 0..changed.len() {
            changed[i] ^= 0x20;
            assert!(!is_distributed_catalogue(&changed), "byte {i} changed");
            changed[i] = bytes[i];
        }
        let complete = shared.join("xaif/schema/examples/complete/inlinable_intrinsics.xaif");
        if let Ok(other) = std::fs::read(complete) {
            assert!(!is_distributed_catalogue(&other));
        }
    }

    #[test]
    fn leaves_are_shared_as_in_one_expression_graph() {
        // atan: 1/(1 + x*x) has one node for 1 and one for x.
        let t = builtin().get("arctan_scal").unwrap().partials[0]
            .template
            .clone()
            .unwrap();
        let consts = t
            .nodes
            .iter()
            .filter(|n| matches!(n, TNode::Const(_)))
            .count();
        let args = t
            .nodes
            .iter()
            .filter(|n| matches!(n, TNode::Arg(_)))
            .count();
        assert_eq!((consts, args), (1, 1));
    }
}
